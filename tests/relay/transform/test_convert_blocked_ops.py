"""ConvertBlockedOps: the x86 AlterOpLayout rules' blocked ops (contrib_conv2d_NCHWc,
contrib_depthwise_conv2d_NCHWc, contrib_dense_pack) go back to NCHW conv2d / dense in
relay.build, so they build natively (they had no compute) and compute what the NCHW op does."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.contrib import graph_executor
from minitvm.relay.op.nn._layout_hooks_blocked import blocked_kernel_layout
from minitvm.relay.transform.convert_blocked_ops import _FoldTransformChains, convert_blocked_ops
from minitvm.topi.testing import conv2d_nchw_python

AVX512 = "llvm -mcpu=skylake-avx512"
AVX2 = "llvm -mcpu=core-avx2"
_RNG = np.random.default_rng(0)


def _typed(f):
    return relay.transform.InferType()(tvm.IRModule.from_expr(f))


def _build(mod, params=None):
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
    assert not lib.get_lib().fallback_functions, lib.get_lib().summary()
    return lib


def _run(lib, **inputs):
    g = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    for k, v in inputs.items():
        g.set_input(k, v)
    g.run()
    return g.get_output(0).numpy()


def _rand(*shape, dtype="float32"):
    return _RNG.standard_normal(shape).astype(dtype)


def _block_weight(w, ic_bn, oc_bn):
    """OIHW -> OIHW{ic_bn}i{oc_bn}o in numpy."""
    o, i, kh, kw = w.shape
    return np.ascontiguousarray(
        w.reshape(o // oc_bn, oc_bn, i // ic_bn, ic_bn, kh, kw).transpose(0, 2, 4, 5, 3, 1))


def _blocked_conv_fn(x_shape, w, ic_bn, oc_bn, stride, pad, bias=None):
    """layout_transform -> contrib_conv2d_NCHWc (constant blocked weight) -> bias -> relu ->
    layout_transform back, as the AlterOpLayout rule writes it."""
    x = relay.var("x", shape=x_shape)
    data = relay.layout_transform(x, "NCHW", f"NCHW{ic_bn}c")
    y = relay.nn.contrib_conv2d_nchwc(
        data, relay.const(_block_weight(w, ic_bn, oc_bn)), strides=stride, padding=pad,
        channels=w.shape[0], kernel_size=w.shape[2:], data_layout=f"NCHW{ic_bn}c",
        kernel_layout=f"OIHW{ic_bn}i{oc_bn}o", out_layout=f"NCHW{oc_bn}c")
    if bias is not None:
        b = bias.reshape(1, w.shape[0] // oc_bn, 1, 1, oc_bn)
        y = relay.nn.relu(relay.add(y, relay.const(b)))
    return relay.Function([x], relay.layout_transform(y, f"NCHW{oc_bn}c", "NCHW"))


@pytest.mark.parametrize("cin,cout,ic_bn,oc_bn,k,stride,pad", [
    (8, 8, 4, 4, 3, 1, 1),
    (16, 32, 8, 16, 3, 2, 1),
    (16, 16, 16, 16, 1, 1, 0),
    (15, 10, 5, 5, 3, 2, 2),   # odd channel blocks, stride 2
    (6, 21, 3, 7, 3, 2, 0),    # ic_bn != oc_bn, both odd, stride 2, no padding
])
def test_blocked_conv_builds_natively_and_matches(cin, cout, ic_bn, oc_bn, k, stride, pad):
    x, w, b = _rand(1, cin, 7, 7), _rand(cout, cin, k, k), _rand(cout)
    mod = _typed(_blocked_conv_fn(x.shape, w, ic_bn, oc_bn, (stride, stride), (pad, pad), b))
    lib = _build(mod)
    ref = np.maximum(conv2d_nchw_python(x, w, stride, pad) + b.reshape(1, -1, 1, 1), 0)
    np.testing.assert_allclose(_run(lib, x=x), ref, rtol=1e-4, atol=1e-4)


def test_blocked_conv_converts_to_one_nchw_conv():
    """Structure: the pass leaves an NCHW conv2d; after relay.optimize the data transforms
    cancel (none left) and the weight's folds into a constant."""
    w, b = _rand(16, 8, 3, 3), _rand(16)
    mod = _typed(_blocked_conv_fn((1, 8, 6, 6), w, 4, 8, (1, 1), (1, 1), b))
    func, count = convert_blocked_ops(mod["main"])
    text = tvm.IRModule.from_expr(func).astext()
    assert count == 1 and "contrib_conv2d_NCHWc" not in text
    assert 'nn.conv2d(' in text and 'data_layout="NCHW"' not in text.replace(
        'data_layout="NCHW", kernel_layout="OIHW"', "")  # only plain NCHW/OIHW convs
    with tvm.transform.PassContext(opt_level=3):
        opt, _ = relay.optimize(mod, target="llvm")
    otext = opt.astext()
    assert "layout_transform" not in otext and "NCHWc" not in otext


def test_depthwise_blocked_builds_natively_and_matches():
    c, bn = 24, 8
    x, w, b = _rand(1, c, 9, 9), _rand(c, 1, 3, 3), _rand(c)
    xv = relay.var("x", shape=x.shape)
    wb = np.ascontiguousarray(w.reshape(c // bn, bn, 1, 1, 3, 3).transpose(0, 2, 4, 5, 3, 1))
    y = relay.nn.contrib_depthwise_conv2d_nchwc(
        relay.layout_transform(xv, "NCHW", f"NCHW{bn}c"), relay.const(wb), strides=(2, 2),
        padding=(1, 1), groups=c, channels=c, kernel_size=(3, 3), data_layout=f"NCHW{bn}c",
        kernel_layout=f"OIHW1i{bn}o", out_layout=f"NCHW{bn}c")
    y = relay.clip(relay.add(y, relay.const(b.reshape(1, c // bn, 1, 1, bn))), 0.0, 6.0)
    mod = _typed(relay.Function([xv], relay.layout_transform(y, f"NCHW{bn}c", "NCHW")))
    lib = _build(mod)
    ref = np.clip(conv2d_nchw_python(x, w, 2, 1, groups=c) + b.reshape(1, -1, 1, 1), 0, 6)
    np.testing.assert_allclose(_run(lib, x=x), ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("n", [4, 16])
def test_dense_pack_builds_natively_and_matches(n):
    x, w, b = _rand(3, 20), _rand(32, 20), _rand(32)
    xv = relay.var("x", shape=x.shape)
    wp = np.ascontiguousarray(w.reshape(32 // n, n, 20).transpose(0, 2, 1))  # NC -> NC{n}n
    y = relay.nn.contrib_dense_pack(xv, relay.const(wp), weight_layout=f"NC{n}n")
    mod = _typed(relay.Function([xv], relay.nn.relu(relay.nn.bias_add(y, relay.const(b)))))
    func, count = convert_blocked_ops(mod["main"])
    assert count == 1 and "nn.dense(" in tvm.IRModule.from_expr(func).astext()
    lib = _build(mod)
    np.testing.assert_allclose(_run(lib, x=x), np.maximum(x @ w.T + b, 0), rtol=1e-4,
                               atol=1e-4)


def _resnet_block():
    x = relay.var("x", shape=(1, 16, 6, 6))
    w1, w2 = relay.var("w1", shape=(16, 16, 3, 3)), relay.var("w2", shape=(16, 16, 3, 3))
    b = relay.var("b", shape=(16,))
    y = relay.nn.relu(relay.nn.bias_add(relay.nn.conv2d(x, w1, padding=(1, 1)), b))
    y = relay.nn.bias_add(relay.nn.conv2d(y, w2, padding=(1, 1)), b)
    y = relay.nn.max_pool2d(relay.nn.relu(relay.add(y, x)), (2, 2), (2, 2))
    params = {"w1": _rand(16, 16, 3, 3) * 0.2, "w2": _rand(16, 16, 3, 3) * 0.2, "b": _rand(16)}
    return relay.Function([x, w1, w2, b], y), params


def _mobilenet_block():
    x = relay.var("x", shape=(1, 8, 10, 10))
    w1, w2 = relay.var("w1", shape=(32, 8, 1, 1)), relay.var("w2", shape=(32, 1, 3, 3))
    w3 = relay.var("w3", shape=(8, 32, 1, 1))
    y = relay.clip(relay.nn.conv2d(x, w1), 0.0, 6.0)
    y = relay.clip(relay.nn.conv2d(y, w2, padding=(1, 1), groups=32, channels=32,
                                   kernel_size=(3, 3)), 0.0, 6.0)
    y = relay.add(relay.nn.conv2d(y, w3), x)
    params = {"w1": _rand(32, 8, 1, 1) * 0.3, "w2": _rand(32, 1, 3, 3) * 0.3,
              "w3": _rand(8, 32, 1, 1) * 0.3}
    return relay.Function([x, w1, w2, w3], y), params


def _mlp():
    x = relay.var("x", shape=(2, 24))
    w1, w2 = relay.var("w1", shape=(32, 24)), relay.var("w2", shape=(16, 32))
    y = relay.nn.dense(relay.nn.relu(relay.nn.dense(x, w1)), w2)
    return relay.Function([x, w1, w2], y), {"w1": _rand(32, 24), "w2": _rand(16, 32)}


@pytest.mark.parametrize("make", [_resnet_block, _mobilenet_block, _mlp])
@pytest.mark.parametrize("target", [AVX512, AVX2])
def test_alter_op_layout_then_build(make, target):
    """The flow of a TVM user: AlterOpLayout by hand under an x86 -mcpu, then relay.build:
    every kernel native, the same result as the plain build, no blocked op or layout transform
    left in the optimized module."""
    func, params = make()
    mod = _typed(func)
    with tvm.target.Target(target), tvm.transform.PassContext(opt_level=3):
        altered = relay.transform.AlterOpLayout()(mod)
    text = altered.astext()
    assert "NCHWc" in text or "dense_pack" in text
    x = _rand(*[int(d) for d in func.params[0].type_annotation.shape])
    got = _run(_build(altered, params), x=x)
    np.testing.assert_allclose(got, _run(_build(mod, params), x=x), rtol=1e-4, atol=1e-4)
    bound = relay.build_module.bind_params_by_name(altered["main"], params)
    with tvm.transform.PassContext(opt_level=3):
        opt, _ = relay.optimize(tvm.IRModule.from_expr(bound), target="llvm")
    otext = opt.astext()
    assert "NCHWc" not in otext and "dense_pack" not in otext
    assert "layout_transform" not in otext


def test_run_time_blocked_weight():
    """A blocked weight that is a run-time input: its transform back to OIHW runs natively."""
    x, w = _rand(1, 8, 6, 6), _rand(8, 8, 3, 3)
    xv, wv = relay.var("x", shape=x.shape), relay.var("w", shape=(2, 2, 3, 3, 4, 4))
    y = relay.nn.contrib_conv2d_nchwc(
        relay.layout_transform(xv, "NCHW", "NCHW4c"), wv, padding=(1, 1), channels=8,
        kernel_size=(3, 3), data_layout="NCHW4c", kernel_layout="OIHW4i4o", out_layout="NCHW4c")
    mod = _typed(relay.Function([xv, wv], relay.layout_transform(y, "NCHW4c", "NCHW")))
    lib = _build(mod)
    np.testing.assert_allclose(_run(lib, x=x, w=_block_weight(w, 4, 4)),
                               conv2d_nchw_python(x, w, 1, 1), rtol=1e-4, atol=1e-4)


def test_functions_without_blocked_ops_are_unchanged():
    x, w = relay.var("x", shape=(1, 4, 6, 6)), relay.var("w", shape=(4, 4, 3, 3))
    func = _typed(relay.Function([x, w], relay.nn.relu(relay.nn.conv2d(x, w))))["main"]
    assert convert_blocked_ops(func) == (func, 0)


def test_convert_layout_hook_errors_name_the_layout():
    w = _rand(8, 8, 3, 3)
    mod = _typed(_blocked_conv_fn((1, 8, 6, 6), w, 4, 4, (1, 1), (1, 1)))
    with pytest.raises(ValueError, match="NHWC"):
        with tvm.transform.PassContext(opt_level=3):
            relay.transform.ConvertLayout({"nn.contrib_conv2d_NCHWc": ["NHWC", "default"]})(mod)


def test_deep_chain_after_dense_pack():
    """The pass's walk and dense rewrite survive a 100,000-op chain (no recursion per node);
    the dense path needs no types."""
    x = relay.var("x", shape=(1, 8))
    y = relay.nn.contrib_dense_pack(x, relay.const(_rand(2, 8, 4)), weight_layout="NC4n")
    relu = relay.nn.relu(x).op
    for _ in range(100_000):
        y = relay.Call(relu, [y])
    out, count = convert_blocked_ops(relay.Function([x], y))
    assert count == 1
    e = out.body
    while isinstance(e, relay.Call) and e.op.name == "nn.relu":
        e = e.args[0]
    assert e.op.name == "nn.dense"


def test_transform_chains_fold_in_a_deep_chain():
    """100,000 alternating NCHW <-> NCHW4c transforms fold away (no recursion per node); a
    chain NCHW -> NCHW8c -> NCHW4c becomes one transform."""
    x = relay.var("x", shape=(1, 8, 2, 2))
    there, back = relay.layout_transform(x, "NCHW", "NCHW4c"), relay.layout_transform(
        x, "NCHW4c", "NCHW")
    y = x
    for _ in range(50_000):  # the calls built directly, sharing attrs: a fast build
        y = relay.Call(back.op, [relay.Call(there.op, [y], there.attrs)], back.attrs)
    assert _FoldTransformChains().visit(relay.Function([x], y)).body is x
    z = relay.layout_transform(relay.layout_transform(x, "NCHW", "NCHW8c"), "NCHW8c", "NCHW4c")
    folded = _FoldTransformChains().visit(z)
    assert folded.args[0] is x and str(folded.attrs.src_layout) == "NCHW"
    assert str(folded.attrs.dst_layout) == "NCHW4c"


def _int8_conv_and_dense():
    x = relay.var("x", shape=(1, 32, 6, 6), dtype="uint8")
    w = relay.var("w", shape=(32, 32, 3, 3), dtype="int8")
    dw = relay.var("dw", shape=(16, 32), dtype="int8")
    y = relay.nn.conv2d(x, w, padding=(1, 1), out_dtype="int32")
    y = relay.cast(relay.clip(relay.right_shift(y, relay.const(8)), 0, 255), "uint8")
    y = relay.reshape(relay.strided_slice(y, [0, 0, 0, 0], [1, 32, 1, 1]), (1, 32))
    y = relay.nn.dense(y, dw, out_dtype="int32")
    rng = np.random.default_rng(5)
    params = {"w": rng.integers(-20, 20, (32, 32, 3, 3)).astype("int8"),
              "dw": rng.integers(-20, 20, (16, 32)).astype("int8")}
    return relay.Function([x, w, dw], y), params


def test_int8_alter_op_layout_then_build():
    """The x86 int8 rules (OIHW4i16o4i conv kernel, NC16n4c dense weight under cascadelake)
    build natively and compute exactly what the plain int8 build does."""
    func, params = _int8_conv_and_dense()
    mod = _typed(func)
    with tvm.target.Target("llvm -mcpu=cascadelake"), tvm.transform.PassContext(opt_level=3):
        altered = relay.transform.AlterOpLayout()(mod)
    text = altered.astext()
    assert "OIHW4i16o4i" in text and "NC16n4c" in text
    x = np.random.default_rng(6).integers(0, 255, (1, 32, 6, 6)).astype("uint8")
    np.testing.assert_array_equal(_run(_build(altered, params), x=x),
                                  _run(_build(mod, params), x=x))


def test_kernel_layout_attr_left_at_its_default():
    """contrib_conv2d_nchwc's constructor defaults kernel_layout to OIHW; the kernel's rank
    tells its real layout (as TVM's compute reads it), and the result is still right."""
    assert blocked_kernel_layout((2, 2, 3, 3, 4, 4), "OIHW") == "OIHW4i4o"
    assert blocked_kernel_layout((2, 2, 3, 3, 4, 16, 4), "OIHW") == "OIHW4i16o4i"
    assert blocked_kernel_layout((2, 2, 3, 3, 4, 8), "OIHW4i8o") == "OIHW4i8o"
    with pytest.raises(ValueError, match="rank 5"):
        blocked_kernel_layout((2, 2, 3, 3, 4), "OIHW")
    x, w = _rand(1, 8, 5, 5), _rand(8, 8, 3, 3)
    xv = relay.var("x", shape=x.shape)
    y = relay.nn.contrib_conv2d_nchwc(
        relay.layout_transform(xv, "NCHW", "NCHW4c"), relay.const(_block_weight(w, 4, 4)),
        padding=(1, 1), channels=8, kernel_size=(3, 3), data_layout="NCHW4c")
    mod = _typed(relay.Function([xv], relay.layout_transform(y, "NCHW4c", "NCHW")))
    np.testing.assert_allclose(_run(_build(mod), x=x), conv2d_nchw_python(x, w, 1, 1),
                               rtol=1e-4, atol=1e-4)


def test_optimize_and_build_under_an_x86_target():
    """relay.optimize / relay.build / the VM given an x86 -mcpu target: the pipeline's own
    AlterOpLayout blocks the convs (under relay.optimize), and the instance of the pass after it
    takes them back; everything native, same result as the plain build."""
    func, params = _mobilenet_block()
    mod = _typed(func)
    with tvm.transform.PassContext(opt_level=3):
        opt, _ = relay.optimize(mod, target=AVX512, params=params)
    text = opt.astext()
    assert "NCHWc" not in text and "layout_transform" not in text
    x = _rand(1, 8, 10, 10)
    ref = _run(_build(mod, params), x=x)
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target=AVX512, params=params)
        vm_out = relay.create_executor("vm", mod=mod, target=AVX512).evaluate()(
            x, *[params[p.name_hint] for p in func.params[1:]]).numpy()
    assert not lib.get_lib().fallback_functions
    np.testing.assert_allclose(_run(lib, x=x), ref, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(vm_out, ref, rtol=1e-4, atol=1e-4)


def test_fused_blocked_functions_are_inlined_and_converted():
    """A module optimized (fused) with its blocked ops, as TVM prints optimized Relay: the
    Primitive functions holding blocked convs are inlined, converted and fused again; every
    kernel native, the plain build's result."""
    func, params = _resnet_block()
    mod = _typed(func)
    with tvm.transform.PassContext(opt_level=3, disabled_pass=["ConvertBlockedOps"]):
        fused, _ = relay.optimize(mod, target=AVX512, params=params)
    assert "contrib_conv2d_NCHWc" in fused.astext()
    x = _rand(1, 16, 6, 6)
    np.testing.assert_allclose(_run(_build(fused), x=x), _run(_build(mod, params), x=x),
                               rtol=1e-4, atol=1e-4)
    out, count = convert_blocked_ops(fused["main"], fused)
    assert count == 2 + 1 and "NCHWc" not in tvm.IRModule.from_expr(out).astext()

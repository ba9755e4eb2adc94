"""ConvertNHWCConvs: NHWC conv models move to NCHW whole (ConvertLayout) before Legalize, so
the bias add and activation between two convs do not sit between two layout transforms."""

from __future__ import annotations

import numpy as np

import minitvm as tvm
from minitvm import relay
from minitvm.relay.transform.convert_nhwc_convs import convert_nhwc_convs


def _typed(f):
    return relay.transform.InferType()(tvm.IRModule.from_expr(f))


def _run(mod, x):
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm")
    from minitvm.contrib import graph_executor

    g = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    g.set_input("x", x)
    g.run()
    return g.get_output(0).numpy()


def _nhwc_block():
    """conv -> bias_add -> relu6 -> depthwise conv -> bias_add -> add (residual), NHWC."""
    rng = np.random.default_rng(0)
    x = relay.var("x", shape=(1, 8, 8, 16))
    w1 = relay.const(rng.standard_normal((3, 3, 16, 16)).astype("float32") * 0.1)
    w2 = relay.const(rng.standard_normal((3, 3, 16, 1)).astype("float32") * 0.1)
    b = relay.const(rng.standard_normal(16).astype("float32"))
    y = relay.nn.conv2d(x, w1, padding=(1, 1), channels=16, kernel_size=(3, 3),
                        data_layout="NHWC", kernel_layout="HWIO")
    y = relay.clip(relay.nn.bias_add(y, b, axis=3), 0.0, 6.0)
    z = relay.nn.conv2d(y, w2, padding=(1, 1), channels=16, groups=16, kernel_size=(3, 3),
                        data_layout="NHWC", kernel_layout="HWOI")
    z = relay.add(relay.nn.bias_add(z, b, axis=3), x)
    return relay.Function([x], z)


def test_nhwc_block_moves_to_nchw_whole():
    mod = _typed(_nhwc_block())
    with tvm.transform.PassContext(opt_level=3):
        out = relay.transform.ConvertNHWCConvs()(mod)
    text = out.astext()
    assert 'data_layout="NHWC"' not in text
    # the input, the residual's second read of it, and the result (weights fold later)
    data_transforms = [ln for ln in text.splitlines() if "layout_transform(%x" in ln or
                       'src_layout="NCHW", dst_layout="NHWC"' in ln]
    assert len(data_transforms) <= 3
    x = np.random.default_rng(1).standard_normal((1, 8, 8, 16)).astype("float32")
    np.testing.assert_allclose(_run(out, x), _run(mod, x), rtol=1e-5, atol=1e-5)


def test_relay_build_fuses_bias_and_activation_into_the_convs():
    """In relay.build (opt_level 3) no kernel is a lone transform between two convs."""
    mod = _typed(_nhwc_block())
    with tvm.transform.PassContext(opt_level=3):
        opt, _ = relay.optimize(mod, target="llvm")
    text = opt.astext()
    assert text.count("layout_transform(") <= 3
    x = np.random.default_rng(2).standard_normal((1, 8, 8, 16)).astype("float32")
    with tvm.transform.PassContext(opt_level=3, disabled_pass=["ConvertNHWCConvs"]):
        lib = relay.build(mod, target="llvm")
    from minitvm.contrib import graph_executor

    g = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    g.set_input("x", x)
    g.run()
    np.testing.assert_allclose(_run(mod, x), g.get_output(0).numpy(), rtol=1e-5, atol=1e-5)


def test_functions_without_nhwc_convs_are_unchanged():
    x = relay.var("x", shape=(1, 4, 6, 6))
    w = relay.var("w", shape=(4, 4, 3, 3))
    func = _typed(relay.Function([x, w], relay.nn.relu(relay.nn.conv2d(x, w))))["main"]
    assert convert_nhwc_convs(func) == (func, 0)


def test_space_to_batch_models_are_left_to_flatten_atrous_conv():
    x = relay.var("x", shape=(1, 8, 8, 4))
    w = relay.var("w", shape=(3, 3, 4, 4))
    s = relay.nn.space_to_batch_nd(x, [2, 2], [[2, 2], [2, 2]])
    y = relay.nn.conv2d(s, w, data_layout="NHWC", kernel_layout="HWIO")
    func = _typed(relay.Function([x, w], relay.nn.batch_to_space_nd(y, [2, 2], [[0, 0],
                                                                              [0, 0]])))["main"]
    assert convert_nhwc_convs(func) == (func, 0)


def _vm_optimized_and_run(mod, x, disabled=()):
    with tvm.transform.PassContext(opt_level=3, disabled_pass=list(disabled)):
        opt, _ = relay.vm.VMCompiler().optimize(mod, target="llvm")
        ex = relay.create_executor("vm", mod=mod, target="llvm")
        out = ex.evaluate()(x)
    return opt.astext(), out.numpy()


def test_vm_pipeline_moves_nhwc_convs_to_nchw():
    """relay.vm.compile / create_executor("vm") run ConvertNHWCConvs as relay.build does: the
    VM's convs are NCHW and no transform sits between the two convs; same result as with the
    pass disabled."""
    mod = _typed(_nhwc_block())
    x = np.random.default_rng(3).standard_normal((1, 8, 8, 16)).astype("float32")
    text, out = _vm_optimized_and_run(mod, x)
    convs = [ln for ln in text.splitlines() if "nn.conv2d(" in ln]
    assert len(convs) == 2 and not any("NHWC" in ln for ln in convs)
    assert text.count("layout_transform(") <= 3
    text_off, ref = _vm_optimized_and_run(mod, x, ["ConvertNHWCConvs"])
    assert "nn.conv2d" in text_off and text_off.count("layout_transform(") > 3
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)


def test_vm_pipeline_nhwc_convs_inside_control_flow():
    """An If whose branches hold NHWC convs (a VM-only program) converts and runs the same."""
    block = _nhwc_block()
    x = relay.var("x", shape=(1, 8, 8, 16))
    flag = relay.var("flag", shape=(), dtype="bool")
    body = relay.If(flag, relay.Call(block, [x]), relay.nn.relu(relay.Call(block, [x])))
    mod = _typed(relay.Function([x, flag], body))
    xv = np.random.default_rng(4).standard_normal((1, 8, 8, 16)).astype("float32")
    for f in (True, False):
        outs = []
        for disabled in ((), ("ConvertNHWCConvs",)):
            with tvm.transform.PassContext(opt_level=3, disabled_pass=list(disabled)):
                ex = relay.create_executor("vm", mod=mod, target="llvm")
                outs.append(ex.evaluate()(xv, np.array(f)).numpy())
        np.testing.assert_allclose(outs[0], outs[1], rtol=1e-5, atol=1e-5)

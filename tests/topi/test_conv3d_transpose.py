"""``nn.conv3d_transpose`` natively: Relay's Legalize rule (``legalize_conv3d_transpose``: one
conv2d_transpose per depth phase, each onto conv2d phases), the op's own TE compute (the direct
gather, for what Legalize leaves) and Relax's legalization (``_by_depth_phases``), against
PyTorch for strides, paddings, output_padding, dilation and groups, batch > 1, odd sizes, a
weight bound or passed, and a symbolic batch in Relax; other layouts are clear errors."""

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the reference results come from `torch`")

import minitvm as tvm  # noqa: E402
from minitvm import relax, relay, tir  # noqa: E402
from minitvm.contrib import graph_executor  # noqa: E402
from minitvm.relax import op as R  # noqa: E402
from minitvm.relay.expr import Call  # noqa: E402
from minitvm.relay.expr_functor import dataflow_post_order  # noqa: E402
from minitvm.relay.testing.temp_op_attr import TempOpAttr  # noqa: E402

CASES = [  # data shape, out channels, kernel, strides, padding, output_padding, dilation, groups
    ((1, 4, 3, 5, 5), 6, (2, 2, 2), (2, 2, 2), (0, 0, 0), (0, 0, 0), (1, 1, 1), 1),
    ((2, 4, 3, 5, 6), 6, (3, 3, 3), (2, 2, 2), (1, 1, 1), (1, 1, 1), (1, 1, 1), 1),
    ((1, 4, 4, 5, 5), 6, (3, 2, 3), (3, 1, 2), (2, 0, 1), (1, 0, 1), (1, 1, 1), 2),
    ((1, 4, 4, 5, 5), 4, (3, 3, 3), (2, 2, 2), (1, 1, 1), (0, 0, 0), (2, 1, 2), 4),
    ((2, 3, 5, 4, 4), 5, (4, 3, 3), (1, 1, 1), (1, 1, 1), (0, 0, 0), (1, 1, 1), 1),
    ((1, 2, 5, 4, 4), 3, (3, 3, 3), (2, 1, 1), (3, 1, 1), (1, 0, 0), (1, 1, 1), 1),
    ((1, 3, 2, 3, 3), 2, (1, 1, 1), (3, 2, 2), (0, 0, 0), (2, 1, 1), (1, 1, 1), 1),
]


def _data(case, seed=0):
    rng = np.random.default_rng(seed)
    shape, o, k, *_, groups = case
    return (rng.standard_normal(shape).astype("float32"),
            rng.standard_normal((shape[1], o // groups, *k)).astype("float32"))


def _torch(case, x, w):
    _, _, _, s, p, op, d, g = case
    return torch.nn.functional.conv_transpose3d(
        torch.from_numpy(x), torch.from_numpy(w), stride=s, padding=p, output_padding=op,
        dilation=d, groups=g).numpy()


def _relay_mod(case):
    shape, o, k, s, p, op, d, g = case
    x = relay.var("x", shape=shape)
    w = relay.var("w", shape=(shape[1], o // g, *k))
    y = relay.nn.conv3d_transpose(x, w, strides=s, padding=p, output_padding=op, dilation=d,
                                  groups=g, channels=o, kernel_size=k)
    return tvm.IRModule.from_expr(relay.Function([x, w], relay.nn.relu(y)))


def _run_relay(lib, x, w=None):
    g = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    g.set_input("x", x)
    if w is not None:
        g.set_input("w", w)
    g.run()
    return g.get_output(0).numpy()


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("const_weight", [True, False])
def test_relay_build_matches_torch(case, const_weight):
    x, w = _data(case)
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(_relay_mod(case), target="llvm",
                          params={"w": w} if const_weight else None)
    assert not lib.get_lib().fallback_functions
    out = _run_relay(lib, x, None if const_weight else w)
    np.testing.assert_allclose(out, np.maximum(_torch(case, x, w), 0), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("case", [CASES[1], CASES[2], CASES[6]])
@pytest.mark.parametrize("const_weight", [True, False])
def test_relay_symbolic_batch_on_the_vm(case, const_weight):
    """An ``Any`` batch: Legalize keeps it by the reshapes' -1 (zero phases ``zeros_like``)."""
    from minitvm.runtime import vm as runtime_vm

    shape, o, k, s, p, op, d, g = case
    _, w = _data(case, seed=4)
    x = relay.var("x", shape=(relay.Any(), *shape[1:]))
    wv = relay.var("w", shape=w.shape)
    y = relay.nn.conv3d_transpose(x, relay.const(w) if const_weight else wv, strides=s,
                                  padding=p, output_padding=op, dilation=d, groups=g,
                                  channels=o, kernel_size=k)
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(
        relay.Function([x] if const_weight else [x, wv], y)))
    legal = relay.transform.InferType()(relay.transform.Legalize()(mod))
    ops = {n.op.name for n in dataflow_post_order(legal["main"].body) if isinstance(n, Call)}
    assert "nn.conv2d" in ops and "nn.conv3d_transpose" not in ops
    assert tvm.ir.structural_equal(legal["main"].checked_type, mod["main"].checked_type)
    vm = runtime_vm.VirtualMachine(relay.vm.compile(mod, target="llvm"), tvm.cpu())
    for batch in (1, 3):
        xs = np.random.default_rng(batch).standard_normal((batch, *shape[1:])).astype("float32")
        got = vm.run(xs) if const_weight else vm.run(xs, w)
        np.testing.assert_allclose(got.numpy(), _torch(case, xs, w), rtol=1e-4, atol=1e-4)


def test_relay_legalize_rewrites_onto_conv2d():
    mod = relay.transform.InferType()(_relay_mod(CASES[1]))
    with tvm.transform.PassContext(opt_level=3):
        out = relay.transform.Legalize()(mod)
    ops = {n.op.name for n in dataflow_post_order(out["main"].body) if isinstance(n, Call)}
    assert "nn.conv2d" in ops
    assert not ops & {"nn.conv3d_transpose", "nn.conv2d_transpose", "nn.conv3d"}
    assert relay.transform.InferType()(out)["main"].body.checked_type == \
        mod["main"].body.checked_type


@pytest.mark.parametrize("case", [CASES[1], CASES[3], CASES[5]])
def test_relay_te_compute_without_legalize(case):
    """What Legalize leaves runs the op's own compute (the direct gather), not numpy."""
    x, w = _data(case, seed=1)
    with TempOpAttr("nn.conv3d_transpose", "FTVMLegalize", lambda attrs, args, types: None):
        with tvm.transform.PassContext(opt_level=3):
            lib = relay.build(_relay_mod(case), target="llvm")
    assert not lib.get_lib().fallback_functions
    np.testing.assert_allclose(_run_relay(lib, x, w), np.maximum(_torch(case, x, w), 0),
                               rtol=1e-4, atol=1e-4)


def test_relay_other_layout_is_left_and_says_why():
    x = relay.var("x", shape=(1, 3, 4, 4, 2))
    w = relay.var("w", shape=(2, 2, 2, 3, 2))
    y = relay.nn.conv3d_transpose(x, w, strides=(2, 2, 2), channels=3, kernel_size=(2, 2, 2),
                                  data_layout="NDHWC", kernel_layout="DHWOI")
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x, w], y)))
    with tvm.transform.PassContext(opt_level=3):
        out = relay.transform.Legalize()(mod)
    ops = {n.op.name for n in dataflow_post_order(out["main"].body) if isinstance(n, Call)}
    assert "nn.conv3d_transpose" in ops
    from minitvm.topi.utils import get_compute

    with pytest.raises(ValueError, match="NCDHW/IODHW only"):
        get_compute("nn.conv3d_transpose")(y.attrs, [None, None], out["main"].body.checked_type)


def _relax_mod(case, w, bound: bool, batch=None):
    shape = case[0]
    o, k, s, p, op, d, g = case[1:]
    xv = relax.Var("x", relax.TensorStructInfo((batch or shape[0], *shape[1:]), "float32"))
    params = [xv]
    weight = relax.const(w)
    if not bound:
        weight = relax.Var("w", relax.TensorStructInfo(w.shape, "float32"))
        params.append(weight)
    bb = relax.BlockBuilder()
    with bb.function("main", params):
        with bb.dataflow():
            y = bb.emit(R.nn.conv3d_transpose(xv, weight, strides=s, padding=p,
                                              output_padding=op, dilation=d, groups=g))
            out = bb.emit_output(bb.emit(R.nn.relu(y)))
        bb.emit_func_output(out)
    return bb.get()


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("bound", [True, False])
def test_relax_build_matches_torch(case, bound):
    x, w = _data(case, seed=2)
    mod = _relax_mod(case, w, bound)
    legal = relax.transform.LegalizeOps()(mod)
    names = [gv.name_hint for gv in legal.get_global_vars()]
    assert any("conv2d" in n for n in names) and not any("conv3d" in n for n in names)
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    args = [tvm.nd.array(x)] + ([] if bound else [tvm.nd.array(w)])
    np.testing.assert_allclose(vm["main"](*args).numpy(), np.maximum(_torch(case, x, w), 0),
                               rtol=1e-4, atol=1e-4)


def test_relax_symbolic_batch():
    case = CASES[1]
    _, w = _data(case, seed=3)
    mod = _relax_mod(case, w, True, batch=tir.Var("n", "int64"))
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    for n in (1, 3):
        x = np.random.default_rng(n).standard_normal((n, *case[0][1:])).astype("float32")
        np.testing.assert_allclose(vm["main"](tvm.nd.array(x)).numpy(),
                                   np.maximum(_torch(case, x, w), 0), rtol=1e-4, atol=1e-4)


def test_relax_other_layout_warns():
    xv = relax.Var("x", relax.TensorStructInfo((1, 3, 4, 4, 2), "float32"))
    wv = relax.Var("w", relax.TensorStructInfo((2, 2, 2, 2, 3), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [xv, wv]):
        with bb.dataflow():
            out = bb.emit_output(bb.emit(R.nn.conv3d_transpose(
                xv, wv, strides=(2, 2, 2), data_layout="NDHWC", kernel_layout="DHWIO")))
        bb.emit_func_output(out)
    with pytest.warns(UserWarning, match="NCDHW/IODHW only"):
        relax.transform.LegalizeOps()(bb.get())

"""``nn.conv3d`` as one conv2d over the depth folded into the batch: the TE compute
(``topi.nn_nd.conv3d_folded``, taken by Relax's LegalizeOps and by Relay's lowering of the op)
and Relay's Legalize rule (``relay.op.nn._legalize_conv_nd.legalize_conv3d``) against PyTorch,
for stride / padding / dilation variants and a bias + relu epilogue; the folded conv is a
``conv2d_nchw`` stage (the conv2d schedule rules take it), the cases it leaves keep the direct
loop nest."""

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the reference results come from `torch`")

import minitvm as tvm  # noqa: E402
from minitvm import relax, relay, te  # noqa: E402
from minitvm.contrib import graph_executor  # noqa: E402
from minitvm.ir.type import TensorType  # noqa: E402
from minitvm.relax import op as R  # noqa: E402
from minitvm.relay.expr import Call  # noqa: E402
from minitvm.relay.expr_functor import dataflow_post_order  # noqa: E402
from minitvm.topi.nn_nd import conv3d_folded  # noqa: E402
from minitvm.topi.utils import get_compute  # noqa: E402

CASES = [  # data, weight, strides, padding (6 values), dilation
    ((1, 3, 6, 12, 12), (8, 3, 3, 5, 5), (1, 2, 2), (1, 2, 2, 1, 2, 2), (1, 1, 1)),
    ((2, 4, 5, 7, 6), (6, 4, 3, 3, 3), (1, 1, 1), (1, 1, 1, 1, 1, 1), (1, 1, 1)),
    ((1, 5, 7, 9, 8), (4, 5, 3, 2, 3), (2, 1, 2), (0, 1, 0, 2, 0, 1), (1, 1, 1)),
    ((1, 3, 8, 9, 9), (5, 3, 2, 3, 3), (1, 1, 1), (2, 1, 1, 0, 1, 1), (3, 2, 1)),
    ((1, 4, 3, 5, 5), (4, 4, 1, 1, 1), (1, 1, 1), (0, 0, 0, 0, 0, 0), (1, 1, 1)),
    ((1, 6, 2, 4, 4), (6, 6, 3, 3, 3), (1, 1, 1), (1, 1, 1, 1, 1, 1), (1, 1, 1)),
]


def _reference(x, w, b, strides, pad, dilation):
    xt = torch.nn.functional.pad(torch.from_numpy(x),
                                 (pad[2], pad[5], pad[1], pad[4], pad[0], pad[3]))
    y = torch.nn.functional.conv3d(xt, torch.from_numpy(w), torch.from_numpy(b),
                                   stride=strides, dilation=dilation)
    return torch.relu(y).numpy()


def _data(case, seed=0):
    rng = np.random.default_rng(seed)
    shape, wshape = case[:2]
    return (rng.standard_normal(shape).astype("float32"),
            rng.standard_normal(wshape).astype("float32"),
            rng.standard_normal(wshape[0]).astype("float32"))


def _relay_mod(case, groups=1, dtype="float32"):
    shape, wshape, strides, pad, dilation = case
    x = relay.var("x", shape=shape, dtype=dtype)
    w = relay.var("w", shape=wshape, dtype=dtype)
    b = relay.var("b", shape=(wshape[0],), dtype=dtype)
    y = relay.nn.conv3d(x, w, strides=strides, padding=pad, dilation=dilation, groups=groups,
                        channels=wshape[0], kernel_size=wshape[2:])
    y = relay.nn.relu(relay.nn.bias_add(y, b))
    return tvm.IRModule.from_expr(relay.Function([x, w, b], y))


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("const_weight", [True, False])
def test_relay_build_matches_torch(case, const_weight):
    x, w, b = _data(case)
    params = {"w": w, "b": b} if const_weight else None
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(_relay_mod(case), target="llvm", params=params)
    assert not lib.get_lib().fallback_functions
    g = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    g.set_input("x", x)
    if not const_weight:
        g.set_input("w", w)
        g.set_input("b", b)
    g.run()
    np.testing.assert_allclose(g.get_output(0).numpy(), _reference(x, w, b, *case[2:]),
                               rtol=1e-4, atol=1e-3)


def test_relay_legalize_rewrites_onto_conv2d():
    mod = relay.transform.InferType()(_relay_mod(CASES[1]))
    with tvm.transform.PassContext(opt_level=3):
        out = relay.transform.Legalize()(mod)
    ops = [n.op.name for n in dataflow_post_order(out["main"].body) if isinstance(n, Call)]
    assert "nn.conv2d" in ops and "nn.conv3d" not in ops


@pytest.mark.parametrize("groups, dtype", [(1, "float64"), (2, "float64")])
def test_relay_legalize_leaves_other_cases(groups, dtype):
    """Only float32 convs are folded (grouped ones too: test_legalize_conv_nd)."""
    case = ((1, 4, 3, 5, 5), (4, 4 // groups, 3, 3, 3), (1, 1, 1), (1, 1, 1, 1, 1, 1), (1, 1, 1))
    mod = relay.transform.InferType()(_relay_mod(case, groups, dtype))
    with tvm.transform.PassContext(opt_level=3):
        out = relay.transform.Legalize()(mod)
    ops = [n.op.name for n in dataflow_post_order(out["main"].body) if isinstance(n, Call)]
    assert "nn.conv3d" in ops


def _stages(t):
    seen, stack, out = set(), [t], []
    while stack:
        s = stack.pop()
        if id(s) in seen:
            continue
        seen.add(id(s))
        out.append(s)
        stack.extend(getattr(s.op, "input_tensors", []))
    return out


class _Attrs:
    data_layout, kernel_layout, out_layout = "NCDHW", "OIDHW", ""

    def __init__(self, strides, padding, dilation, groups=1):
        self.strides, self.padding, self.dilation, self.groups = \
            strides, padding, dilation, groups


def test_te_compute_is_a_conv2d_stage():
    shape, wshape, strides, pad, dilation = CASES[0]
    x, w = te.placeholder(shape, name="x"), te.placeholder(wshape, name="w")
    out = get_compute("nn.conv3d")(_Attrs(strides, pad, dilation), [x, w],
                                   TensorType((1, 8, 6, 6, 6), "float32"))[0]
    tags = [s.op.tag for s in _stages(out) if hasattr(s.op, "tag")]
    assert "conv2d_nchw" in tags and "conv3d_ncdhw" not in tags
    conv = next(s for s in _stages(out) if getattr(s.op, "tag", "") == "conv2d_nchw")
    assert [int(d) for d in conv.shape] == [6, 8, 6, 6]
    folded, weight = conv.op.attrs["operands"]
    assert [int(d) for d in weight.shape] == [8, 9, 5, 5]
    assert [int(d) for d in folded.shape] == [6, 9, 12, 12]  # (Relay's: padded by the conv)
    assert conv.op.attrs["padding"] == (2, 2, 2, 2)


def test_pad_in_gather_and_prereshaped_weight():
    shape, wshape, strides, pad, dilation = CASES[0]
    x = te.placeholder(shape, name="x")
    w4 = te.placeholder((8, 9, 5, 5), name="w4")
    out = conv3d_folded(x, w4, strides, pad, dilation, kernel_depth=3)
    conv = next(s for s in _stages(out) if getattr(s.op, "tag", "") == "conv2d_nchw")
    folded, weight = conv.op.attrs["operands"]
    assert weight is w4 and [int(d) for d in folded.shape] == [6, 9, 16, 16]
    assert conv.op.attrs["padding"] == (0, 0, 0, 0)
    assert conv3d_folded(x, te.placeholder((8, 10, 5, 5)), strides, pad, dilation,
                         kernel_depth=3) is None  # (C*KD does not match)


def test_te_compute_keeps_direct_loops_for_groups():
    x, w = te.placeholder((1, 4, 3, 5, 5), name="x"), te.placeholder((4, 2, 3, 3, 3), name="w")
    out = get_compute("nn.conv3d")(_Attrs((1, 1, 1), (1, 1, 1), (1, 1, 1), groups=2), [x, w],
                                   TensorType((1, 4, 3, 5, 5), "float32"))[0]
    assert out.op.tag == "conv3d_ncdhw"
    assert conv3d_folded(te.placeholder((1, 4, 3, 5, 5), "float64"),
                         te.placeholder((4, 4, 3, 3, 3), "float64"), (1, 1, 1), (1, 1, 1),
                         (1, 1, 1), "float64") is None


@pytest.mark.parametrize("case", CASES[:4])
def test_relax_build_matches_torch(case):
    shape, wshape, strides, pad, dilation = case
    x, w, b = _data(case, seed=1)
    xv = relax.Var("x", relax.TensorStructInfo(shape, "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [xv]):
        with bb.dataflow():
            y = bb.emit(R.nn.conv3d(xv, relax.const(w), strides=strides, padding=pad,
                                    dilation=dilation))
            y = bb.emit(R.add(y, relax.const(b.reshape(1, -1, 1, 1, 1))))
            out = bb.emit_output(bb.emit(R.nn.relu(y)))
        bb.emit_func_output(out)
    legal = relax.transform.LegalizeOps()(bb.get())
    text = legal.script() if hasattr(legal, "script") else str(legal)
    assert "conv2d" in text
    vm = relax.VirtualMachine(relax.build(bb.get(), "llvm"), tvm.cpu())
    got = vm["main"](tvm.nd.array(x)).numpy()
    np.testing.assert_allclose(got, _reference(x, w, b, strides, pad, dilation),
                               rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("case", [CASES[0], CASES[3]])
def test_relay_te_compute_without_legalize(case):
    """Relay's lowering of the op itself (Legalize disabled) takes the folded TE compute."""
    x, w, b = _data(case, seed=2)
    with tvm.transform.PassContext(opt_level=3, disabled_pass=["Legalize"]):
        lib = relay.build(_relay_mod(case), target="llvm", params={"w": w, "b": b})
    assert not lib.get_lib().fallback_functions
    g = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    g.set_input("x", x)
    g.run()
    np.testing.assert_allclose(g.get_output(0).numpy(), _reference(x, w, b, *case[2:]),
                               rtol=1e-4, atol=1e-3)


def test_relax_legalized_conv_is_raised_as_conv2d():
    """The legalized PrimFunc: the constant weight reshaped at legalization (a 4-d parameter),
    and its conv stage recognized as a conv2d by the raised-block patterns (so the conv2d
    schedules take it in ``relax.build``)."""
    from minitvm.schedule.raise_blocks import analyze_nest, segments, unwrap_root

    shape, wshape, strides, pad, dilation = CASES[1]
    _, w, _ = _data(CASES[1])
    xv = relax.Var("x", relax.TensorStructInfo(shape, "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [xv]):
        with bb.dataflow():
            out = bb.emit_output(bb.emit(R.nn.conv3d(xv, relax.const(w), strides=strides,
                                                     padding=pad, dilation=dilation)))
        bb.emit_func_output(out)
    legal = relax.transform.LegalizeOps()(bb.get())
    f = legal["conv3d"]
    assert [int(d) for d in f.buffer_map[f.params[1]].shape] == [6, 12, 3, 3]
    _, stmts = unwrap_root(f)
    nests = [analyze_nest(s) for s in stmts]
    segs = segments(nests, {id(b) for b in f.buffer_map.values()})
    tags = [t.op.tag for seg in segs if seg.raised for t in _stages(seg.outputs[0][0])
            if hasattr(t.op, "tag")]
    assert "conv2d_nchw" in tags


def test_relax_weight_as_parameter():
    """A weight passed as an argument (not bound): reshaped inside the kernel."""
    case = CASES[2]
    shape, wshape, strides, pad, dilation = case
    x, w, b = _data(case, seed=3)
    xv = relax.Var("x", relax.TensorStructInfo(shape, "float32"))
    wv = relax.Var("w", relax.TensorStructInfo(wshape, "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [xv, wv]):
        with bb.dataflow():
            y = bb.emit(R.nn.conv3d(xv, wv, strides=strides, padding=pad, dilation=dilation))
            y = bb.emit(R.add(y, relax.const(b.reshape(1, -1, 1, 1, 1))))
            out = bb.emit_output(bb.emit(R.nn.relu(y)))
        bb.emit_func_output(out)
    vm = relax.VirtualMachine(relax.build(bb.get(), "llvm"), tvm.cpu())
    got = vm["main"](tvm.nd.array(x), tvm.nd.array(w)).numpy()
    np.testing.assert_allclose(got, _reference(x, w, b, strides, pad, dilation),
                               rtol=1e-4, atol=1e-3)


def test_grouped_keeps_direct_conv_in_both_dialects():
    case = ((1, 4, 3, 5, 5), (4, 2, 3, 3, 3), (1, 1, 1), (1, 1, 1, 1, 1, 1), (1, 1, 1))
    x, w, b = _data(case, seed=4)
    want = torch.relu(torch.nn.functional.conv3d(
        torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(b), padding=1,
        groups=2)).numpy()
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(_relay_mod(case, groups=2), target="llvm", params={"w": w, "b": b})
    g = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    g.set_input("x", x)
    g.run()
    np.testing.assert_allclose(g.get_output(0).numpy(), want, rtol=1e-4, atol=1e-4)
    xv = relax.Var("x", relax.TensorStructInfo(case[0], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [xv]):
        with bb.dataflow():
            y = bb.emit(R.nn.conv3d(xv, relax.const(w), padding=(1, 1, 1), groups=2))
            y = bb.emit(R.add(y, relax.const(b.reshape(1, -1, 1, 1, 1))))
            out = bb.emit_output(bb.emit(R.nn.relu(y)))
        bb.emit_func_output(out)
    legal = relax.transform.LegalizeOps()(bb.get())
    assert [int(d) for d in legal["conv3d"].buffer_map[legal["conv3d"].params[1]].shape] == \
        [4, 2, 3, 3, 3]
    vm = relax.VirtualMachine(relax.build(bb.get(), "llvm"), tvm.cpu())
    np.testing.assert_allclose(vm["main"](tvm.nd.array(x)).numpy(), want, rtol=1e-4, atol=1e-4)

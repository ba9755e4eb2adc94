"""FuseOps' broadcast edges: an anchor (conv, matmul) takes the elementwise epilogue of its own
shape, never one that expands its result (a squeeze-excite gate), as in Relay's FuseOps."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, tir
from minitvm.relax import transform as rt
from minitvm.relax.expr import Call, Function


def _se_block(batch, c=8, hw=6, squeeze=2):
    """main(x: (batch, c, hw, hw)) = x * sigmoid(conv1x1(relu(conv1x1(mean(x)) + b1)) + b2)."""
    rng = np.random.default_rng(0)
    w = {
        "w1": rng.standard_normal((squeeze, c, 1, 1)).astype("float32") * 0.5,
        "b1": rng.standard_normal((1, squeeze, 1, 1)).astype("float32"),
        "w2": rng.standard_normal((c, squeeze, 1, 1)).astype("float32") * 0.5,
        "b2": rng.standard_normal((1, c, 1, 1)).astype("float32"),
    }
    x = relax.Var("x", relax.TensorStructInfo([batch, c, hw, hw], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            s = bb.emit(relax.op.mean(x, axis=[2, 3], keepdims=True))
            s = bb.emit(relax.op.nn.conv2d(s, relax.const(w["w1"])))
            s = bb.emit(relax.op.nn.relu(relax.op.add(s, relax.const(w["b1"]))))
            s = bb.emit(relax.op.nn.conv2d(s, relax.const(w["w2"])))
            s = bb.emit(relax.op.sigmoid(relax.op.add(s, relax.const(w["b2"]))))
            gv = bb.emit_output(bb.emit(relax.op.multiply(x, s)))
        bb.emit_func_output(gv)
    return bb.get(), w


def _se_ref(w, x):
    s = x.mean(axis=(2, 3), keepdims=True)
    s = np.maximum(np.einsum("nchw,oc->nohw", s, w["w1"][:, :, 0, 0]) + w["b1"], 0)
    s = np.einsum("nchw,oc->nohw", s, w["w2"][:, :, 0, 0]) + w["b2"]
    return x / (1 + np.exp(-s))


def _fused(mod):
    mod = rt.LegalizeOps()(mod)
    mod = rt.AnnotateTIROpPattern()(mod)
    return rt.FuseOps()(mod)


def _groups(mod) -> dict:
    """name -> callee PrimFunc names, of each fused Primitive function."""
    out = {}
    for gv, f in mod.functions.items():
        if isinstance(f, Function) and f.attrs and f.attrs.get("Primitive"):
            names = []
            for block in f.body.blocks:
                for b in block.bindings:
                    if isinstance(b.value, Call) and len(b.value.args) and \
                            hasattr(b.value.args[0], "name_hint"):
                        names.append(b.value.args[0].name_hint)
            out[gv.name_hint] = names
    return out


@pytest.mark.parametrize("batch", [3, tir.Var("batch", "int64")], ids=["static", "symbolic"])
def test_conv_does_not_take_a_gate_that_expands_its_result(batch):
    mod, _ = _se_block(batch)
    groups = _groups(_fused(mod))
    gate = [g for g, names in groups.items() if names[0].startswith("conv2d") and
            any(n.startswith("sigmoid") for n in names)]
    assert len(gate) == 1, groups
    # the second conv keeps its own-shape epilogue (bias, sigmoid), not the gate multiply
    assert not any(n.startswith("multiply") for n in groups[gate[0]]), groups
    assert any(n.startswith("add") for n in groups[gate[0]]), groups
    # the gate multiply stays a kernel of its own
    main_calls = [b.value for block in _fused(mod)["main"].body.blocks for b in block.bindings]
    assert any(isinstance(c, Call) and hasattr(c.args[0], "name_hint") and
               c.args[0].name_hint.startswith("multiply") for c in main_calls if c.args)


def test_same_shape_epilogue_still_fuses_into_the_conv():
    """conv3x3 + bias + silu (x * sigmoid(x), both (n, c, h, w)): one group."""
    rng = np.random.default_rng(1)
    batch = tir.Var("batch", "int64")
    x = relax.Var("x", relax.TensorStructInfo([batch, 4, 6, 6], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            h = bb.emit(relax.op.nn.conv2d(x, relax.const(rng.standard_normal(
                (4, 4, 3, 3)).astype("float32")), padding=(1, 1)))
            h = bb.emit(relax.op.add(h, relax.const(rng.standard_normal(
                (1, 4, 1, 1)).astype("float32"))))
            gv = bb.emit_output(bb.emit(relax.op.multiply(h, relax.op.sigmoid(h))))
        bb.emit_func_output(gv)
    groups = _groups(_fused(bb.get()))
    assert len(groups) == 1, groups
    (names,) = groups.values()
    assert [n.rstrip("0123456789") for n in names] == ["conv2d", "add", "sigmoid", "multiply"]


@pytest.mark.parametrize("n", [1, 3])
def test_se_block_runs_as_numpy_at_any_batch(n):
    mod, w = _se_block(tir.Var("batch", "int64"))
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    x = np.random.default_rng(n).standard_normal((n, 8, 6, 6)).astype("float32")
    for _ in range(2):  # the interpreted call, then the native plan
        got = vm["main"](tvm.nd.array(x)).numpy()
        np.testing.assert_allclose(got, _se_ref(w, x.astype("float64")), rtol=1e-5, atol=1e-5)

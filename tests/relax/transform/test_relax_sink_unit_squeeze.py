"""Relax SinkUnitSqueeze: a squeeze of unit dims moves below the elementwise ops reading it,
cancels against a reshape back, and leaves alone what it cannot move; the same results."""

import numpy as np
import pytest
from relax_pass_util import assert_equal, assert_same_results

import minitvm as tvm
from minitvm import relax

SHAPE = (1, 8, 1, 10)
BIAS = np.arange(8, dtype="float32").reshape(8, 1)


def _func(body):
    """``main(x: SHAPE)`` with ``body(bb, x)`` emitted in one dataflow block."""
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo(SHAPE, "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            out = bb.emit_output(body(bb, x))
        bb.emit_func_output(out)
    return bb.get()


def _run(mod):
    with tvm.transform.PassContext(opt_level=3):
        return relax.transform.SinkUnitSqueeze()(mod)


def _ops(mod) -> list[str]:
    return [b.value.op.name for blk in mod["main"].body.blocks for b in blk.bindings
            if isinstance(b.value, relax.Call)]


def test_epilogue_moves_above_squeeze_and_pair_cancels():
    def before(bb, x):
        s = bb.emit(relax.op.squeeze(x, [2]))
        y = bb.emit(relax.op.add(s, relax.const(BIAS)))
        y = bb.emit(relax.op.clip(relax.op.multiply(y, relax.const(2.0)), -3.0, 9.0))
        y = bb.emit(relax.op.astype(y, "int8"))
        return relax.op.expand_dims(y, 2)

    def expected(bb, x):
        y = bb.emit(relax.op.add(x, relax.const(BIAS.reshape(1, 8, 1, 1))))
        y = bb.emit(relax.op.multiply(y, relax.const(2.0)))
        y = bb.emit(relax.op.clip(y, -3.0, 9.0))
        return relax.op.astype(y, "int8")

    mod = _func(before)
    out = _run(mod)
    assert_equal(out["main"], _func(expected)["main"], map_free_vars=True)
    x = np.random.default_rng(0).standard_normal(SHAPE).astype("float32") * 3
    assert_same_results(mod, out, "main", x)


def test_squeeze_stops_at_a_reduction():
    def body(bb, x):
        s = bb.emit(relax.op.reshape(x, (1, 8, 10)))
        return relax.op.mean(relax.op.nn.relu(s), axis=[2])

    mod = _func(body)
    out = _run(mod)
    assert _ops(out) == ["relax.nn.relu", "relax.squeeze", "relax.mean"]
    assert_same_results(mod, out, "main", np.random.default_rng(1).standard_normal(SHAPE)
                        .astype("float32"))


def _shared(bb, x):
    s = bb.emit(relax.op.squeeze(x, [2]))
    return relax.Tuple([bb.emit(relax.op.nn.relu(s)), bb.emit(relax.op.exp(s))])


def _growing(bb, x):
    s = bb.emit(relax.op.squeeze(x, [2]))
    return relax.op.add(s, relax.const(np.ones((3, 1, 8, 10), "float32")))


def _axis_op(bb, x):
    s = bb.emit(relax.op.squeeze(x, [2]))
    return relax.op.nn.softmax(s, axis=1)


@pytest.mark.parametrize("body", [_shared, _growing, _axis_op])
def test_left_alone(body):
    mod = _func(body)
    assert_equal(_run(mod)["main"], mod["main"])


def test_qdq_conv1d_chain_fuses_and_equals_ort():
    pytest.importorskip("onnx", reason="the model is ONNX")
    pytest.importorskip("onnxruntime", reason="ORT is the reference")
    from onnx_qdq_conv1d_case import ort_output, qdq_conv1d_chain, steps_from

    from minitvm.relax.frontend.onnx import from_onnx

    model, x = qdq_conv1d_chain()
    want = ort_output(model, x)
    outs, kernels = [], []
    for disabled in (["SinkUnitSqueeze"], []):
        mod = from_onnx(model, shape_dict={"x": x.shape})
        with tvm.transform.PassContext(opt_level=3, disabled_pass=disabled):
            ex = relax.build(mod, "llvm")
            built = relax.get_pipeline("default_build")(mod)
        kernels.append([g.name_hint for g in built.functions if g.name_hint != "main"])
        outs.append(relax.VirtualMachine(ex, tvm.cpu())["main"](tvm.nd.array(x)).numpy())
    # each conv with its requantize, relu and the next requantize in one kernel
    assert any(k.startswith("fused_squeeze") for k in kernels[0])
    assert not any(k.startswith("fused_squeeze") for k in kernels[1])
    assert sum("conv2d" in k for k in kernels[1]) == 2 and len(kernels[1]) < len(kernels[0])
    np.testing.assert_array_equal(outs[1], outs[0])
    steps = steps_from(outs[1], want)  # (a step apart now and then, as Relay: see its test)
    assert steps.max() < 1.01 and np.mean(steps > 0.5) < 0.05

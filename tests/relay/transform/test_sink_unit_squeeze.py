"""SinkUnitSqueeze: a squeeze of unit dims moves below the elementwise ops reading it and
cancels against a reshape back; a QDQ Conv1d chain then runs each conv with its epilogue in one
kernel and gives onnxruntime's values."""

import json

import numpy as np
import pytest
from pass_test_util import check_numerics, infer, run_pass

import minitvm as tvm
from minitvm import relay

SHAPE = (1, 8, 1, 10)


def _run(func):
    mod = infer(tvm.IRModule.from_expr(func))
    with tvm.transform.PassContext(opt_level=3):
        out = run_pass(relay.transform.SinkUnitSqueeze(), mod)
    return mod, out


def test_pass_info():
    p = relay.transform.SinkUnitSqueeze()
    assert (p.info.name, p.info.opt_level, list(p.info.required)) == (
        "SinkUnitSqueeze", 3, ["InferType"])


def test_epilogue_moves_above_squeeze_and_pair_cancels():
    x = relay.var("x", shape=SHAPE)
    bias = np.arange(8, dtype="float32").reshape(8, 1)
    y = relay.squeeze(x, axis=[2])
    y = relay.clip(relay.round(relay.add(y, relay.expand_dims(relay.const(bias.ravel()), 1))
                               * relay.const(2.0)), -3.0, 9.0)
    y = relay.expand_dims(relay.cast(y, "int8"), axis=2)
    mod, out = _run(relay.Function([x], y))
    e = relay.add(x, relay.const(bias.reshape(1, 8, 1, 1)))
    e = relay.cast(relay.clip(relay.round(e * relay.const(2.0)), -3.0, 9.0), "int8")
    tvm.ir.assert_structural_equal(out["main"], infer(relay.Function([x], e)))
    check_numerics(mod, out)


def test_squeeze_stops_at_a_reduction_and_reshape_counts_as_squeeze():
    x = relay.var("x", shape=SHAPE)
    y = relay.mean(relay.nn.relu(relay.reshape(x, (1, 8, 10))), axis=[2])
    mod, out = _run(relay.Function([x], y))
    want = relay.mean(relay.squeeze(relay.nn.relu(x), axis=[2]), axis=[2])
    tvm.ir.assert_structural_equal(out["main"], infer(relay.Function([x], want)))
    check_numerics(mod, out)


def _shared_squeeze():
    x = relay.var("x", shape=SHAPE)
    s = relay.squeeze(x, axis=[2])
    return relay.Function([x], relay.Tuple([relay.nn.relu(s), relay.exp(s)]))


def _growing_broadcast():
    x = relay.var("x", shape=SHAPE)
    y = relay.const(np.ones((3, 1, 8, 10), "float32"))
    return relay.Function([x], relay.add(relay.squeeze(x, axis=[2]), y))


def _positional_op():
    x = relay.var("x", shape=SHAPE)
    return relay.Function([x], relay.nn.bias_add(relay.squeeze(x, axis=[2]),
                                                 relay.const(np.ones(8, "float32"))))


def _shaped_op():
    # broadcast_to names a target shape of the squeezed rank (round 13's static KV cache
    # broadcast a squeezed cache to its own shape): moving the squeeze below it mistyped
    x = relay.var("x", shape=SHAPE)
    return relay.Function([x], relay.broadcast_to(relay.squeeze(x, axis=[2]), (1, 8, 10)))


def _tiled():
    x = relay.var("x", shape=SHAPE)
    return relay.Function([x], relay.tile(relay.squeeze(x, axis=[2]), (1, 1, 1)))


def _merging_reshape():
    x = relay.var("x", shape=(1, 8, 2, 5))
    return relay.Function([x], relay.nn.relu(relay.reshape(x, (1, 8, 10))))


@pytest.mark.parametrize("make", [_shared_squeeze, _growing_broadcast, _positional_op,
                                  _shaped_op, _tiled, _merging_reshape])
def test_left_alone(make):
    # a squeeze with two readers (the op would run twice), a broadcast that adds dims, an op
    # with an axis, ops with a target shape or reps, a reshape that merges dims: nothing to move
    mod, out = _run(make())
    tvm.ir.assert_structural_equal(out["main"], mod["main"])


def test_qdq_conv1d_chain_fuses_and_equals_ort():
    pytest.importorskip("onnx", reason="the model is ONNX")
    pytest.importorskip("onnxruntime", reason="ORT is the reference")
    from onnx_qdq_conv1d_case import ort_output, qdq_conv1d_chain, steps_from

    from minitvm.contrib import graph_executor

    model, x = qdq_conv1d_chain()
    want = ort_output(model, x)
    mod, params = relay.frontend.from_onnx(model)
    outs, kernels = [], []
    for disabled in (["SinkUnitSqueeze"], []):
        with tvm.transform.PassContext(opt_level=3, disabled_pass=disabled):
            lib = relay.build(mod, target="llvm", params=params)
        kernels.append([nd["attrs"]["func_name"] for nd in
                        json.loads(lib.get_graph_json())["nodes"] if nd["op"] == "tvm_op"])
        gm = graph_executor.GraphModule(lib["default"](tvm.cpu()))
        gm.set_input("x", x)
        gm.run()
        outs.append(gm.get_output(0).numpy())
    # each conv with its requantize, relu and the next requantize: no squeeze kernel between
    assert any("squeeze" in k for k in kernels[0])
    assert sum("conv2d" in k for k in kernels[1]) == 2
    assert not any("squeeze" in k for k in kernels[1]) and len(kernels[1]) < len(kernels[0])
    np.testing.assert_array_equal(outs[1], outs[0])
    # (Relay's requantize multiplies by the input and weight scales, then by 1 / the output
    # scale; ORT's QLinearConv by their one product: a value now and then a step apart)
    steps = steps_from(outs[1], want)
    assert steps.max() < 1.01 and np.mean(steps > 0.5) < 0.05

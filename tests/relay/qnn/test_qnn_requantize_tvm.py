"""qnn.requantize: TVM's test_op_qnn_requantize.py golden cases, restated — each checked on the
interpreter (the op's reference) and after QnnCanonicalize (integer Relay), the latter also
compiled with relay.build."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay

ROUNDINGS = ["UPWARD", "TONEAREST"]
COMPUTE = ["float32", "float64", "int64"]


def _mod(shape, data_dtype, out_dtype, in_scale, out_scale, in_zp=0, out_zp=0,
         rounding="None", compute_dtype="None", axis=0):
    x = relay.var("input_data", shape=shape, dtype=data_dtype)
    y = relay.qnn.op.requantize(
        x, relay.const(np.array(in_scale, "float32")), relay.const(np.array(in_zp, "int32")),
        relay.const(out_scale, "float32"), relay.const(out_zp, "int32"), axis=axis,
        rounding=rounding, compute_dtype=compute_dtype, out_dtype=out_dtype)
    return tvm.IRModule.from_expr(relay.Function([x], y))


def verify(mod, data, golden, build=False):
    data = np.asarray(data).astype(mod["main"].params[0].type_annotation.dtype)
    got = relay.create_executor("debug", mod=mod).evaluate()(data).numpy()
    np.testing.assert_equal(got, golden)
    canon = relay.transform.QnnCanonicalize()(relay.transform.InferType()(mod))
    assert "qnn." not in canon.astext()
    np.testing.assert_equal(relay.create_executor("debug", mod=canon).evaluate()(data).numpy(),
                            golden)
    if build:
        with tvm.transform.PassContext(opt_level=3):
            lib = relay.build(mod, "llvm")
        m = tvm.contrib.graph_executor.GraphModule(lib["default"](tvm.cpu()))
        m.set_input("input_data", data)
        m.run()
        np.testing.assert_equal(m.get_output(0).numpy(), golden)


@pytest.mark.parametrize("rounding", ROUNDINGS)
@pytest.mark.parametrize("out_dtype", ["int8", "int16"])
def test_same_scale(rounding, out_dtype):
    data = np.arange(-100, 100)
    for compute in COMPUTE:
        mod = _mod((200,), "int32", out_dtype, 0.5, 0.5, rounding=rounding,
                   compute_dtype=compute)
        verify(mod, data, data, build=compute == "int64")
    verify(_mod((), "int32", out_dtype, 0.5, 0.5, rounding=rounding), np.array(-10), -10)


@pytest.mark.parametrize("rounding", ROUNDINGS)
@pytest.mark.parametrize("out_dtype", ["int8", "int16", "uint8"])
def test_downscale(rounding, out_dtype):
    mod = _mod((32,), "int32", out_dtype, 1.0, 16.0, rounding=rounding)
    # 8 is 0.5: rounds to 1 either way
    verify(mod, np.arange(32), np.repeat([0, 1, 2], [8, 16, 8]), build=True)
    if out_dtype != "uint8":
        # -8 is -0.5: 0 rounding upward, -1 to nearest (away from zero)
        neg = [9, 16, 7] if rounding == "UPWARD" else [8, 16, 8]
        verify(mod, np.arange(0, -32, -1), np.repeat([0, -1, -2], neg))
        mod = _mod((32,), "int32", out_dtype, 1.0, 4.0, rounding=rounding)
        verify(mod, np.arange(32), np.repeat(range(9), [2, 4, 4, 4, 4, 4, 4, 4, 2]))
        neg = [3, 4, 4, 4, 4, 4, 4, 4, 1] if rounding == "UPWARD" else [2] + [4] * 7 + [2]
        verify(mod, np.arange(0, -32, -1), np.repeat(range(0, -9, -1), neg))
    else:
        verify(_mod((32,), "uint8", "uint8", 1.0, 16.0, rounding=rounding), np.arange(32),
               np.repeat([0, 1, 2], [8, 16, 8]))


@pytest.mark.parametrize("rounding", ROUNDINGS)
def test_upscale_and_non_power_of_two(rounding):
    up = _mod((32,), "int32", "int16", 2.0, 1.0, rounding=rounding)
    verify(up, np.arange(32), 2 * np.arange(32))
    verify(up, np.arange(0, -32, -1), 2 * np.arange(0, -32, -1))
    third = _mod((32,), "int32", "int8", 1.0, 3.0, rounding=rounding)
    verify(third, 3 * np.arange(32), np.arange(32))
    verify(third, 3 * np.arange(0, -32, -1), np.arange(0, -32, -1))
    triple = _mod((32,), "int32", "int8", 3.0, 1.0, rounding=rounding)
    verify(triple, np.arange(32), 3 * np.arange(32))


@pytest.mark.parametrize("rounding", ROUNDINGS)
def test_saturation(rounding):
    mod = _mod((16,), "int32", "int8", 0.5, 0.5, rounding=rounding)
    verify(mod, 120 + np.arange(16), np.minimum(120 + np.arange(16), 127), build=True)
    verify(mod, -120 - np.arange(16), np.maximum(-120 - np.arange(16), -128))
    mod = _mod((16,), "int32", "int16", 0.5, 0.5, rounding=rounding)
    verify(mod, 32760 + np.arange(16), np.minimum(32760 + np.arange(16), 32767))
    verify(mod, -32760 - np.arange(16), np.maximum(-32760 - np.arange(16), -32768))


@pytest.mark.parametrize("rounding", ROUNDINGS)
def test_zero_points(rounding):
    mod = _mod((32,), "int32", "int8", 1.0, 16.0, out_zp=1, rounding=rounding)
    verify(mod, np.arange(32), 1 + np.repeat([0, 1, 2], [8, 16, 8]))
    neg = [9, 16, 7] if rounding == "UPWARD" else [8, 16, 8]
    verify(mod, np.arange(-32, -64, -1), 1 + np.repeat([-2, -3, -4], neg))
    mod = _mod((32,), "int32", "int8", 1.0, 16.0, in_zp=16, rounding=rounding)
    verify(mod, np.arange(32, 64), np.repeat([2, 3, 4], [8, 16, 8]) - 1)
    verify(mod, np.arange(-32, -64, -1), np.repeat([-2, -3, -4], neg) - 1)


@pytest.mark.parametrize("rounding", ROUNDINGS)
def test_per_channel(rounding):
    data = np.arange(-5, 5).reshape(5, 2)
    verify(_mod((5, 2), "int32", "int8", [0.5, 0.5], 0.5, axis=1, rounding=rounding), data, data)
    verify(_mod((5, 2), "int32", "int8", [0.5, 0.25], 0.5, axis=1, rounding=rounding), data,
           np.array([-5, -2, -3, -1, -1, 0, 1, 1, 3, 2]).reshape(5, 2), build=True)
    data3 = np.arange(-20, 20, 2).reshape(2, 2, 5)
    verify(_mod((2, 2, 5), "int32", "int8", [0.5, 0.25], 0.5, axis=1, rounding=rounding), data3,
           np.array([-20, -18, -16, -14, -12, -5, -4, -3, -2, -1, 0, 2, 4, 6, 8, 5, 6, 7, 8,
                     9]).reshape(2, 2, 5))
    verify(_mod((5, 2), "int32", "int8", [1.0, 0.25], 0.5, axis=1, rounding=rounding), data,
           np.array([-10, -2, -6, -1, -2, 0, 2, 1, 6, 2]).reshape(5, 2))


def test_requantize_config():
    data = np.arange(0, -32, -1)
    upward, nearest = np.repeat([0, -1, -2], [9, 16, 7]), np.repeat([0, -1, -2], [8, 16, 8])
    verify(_mod((32,), "int32", "int8", 1.0, 16.0), data, upward)  # default: UPWARD
    for cfg, want in (("UPWARD", upward), ("TONEAREST", nearest)):
        with relay.qnn.op.requantize_config(rounding=cfg):
            verify(_mod((32,), "int32", "int8", 1.0, 16.0), data, want, build=cfg == "TONEAREST")
            # an explicit rounding wins over the config
            for arg, want_arg in (("UPWARD", upward), ("TONEAREST", nearest)):
                verify(_mod((32,), "int32", "int8", 1.0, 16.0, rounding=arg), data, want_arg)
    with pytest.raises(ValueError, match="rounding must be UPWARD or TONEAREST"):
        relay.qnn.op.requantize_config(rounding="DOWN")


def test_bad_compute_dtype():
    mod = _mod((4,), "int32", "int8", 1.0, 2.0, compute_dtype="int8")
    with pytest.raises(Exception, match="compute_dtype must be one of"):
        relay.transform.InferType()(mod)

"""relax.clip of an integer tensor with float bounds outside its range (ONNX Clip / torch clamp
with one side open): the legalized bounds saturate instead of wrapping to a negative value."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax


@pytest.mark.parametrize("dtype", ["int64", "int32", "float32"])
def test_clip_open_upper_bound(dtype):
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo((5,), dtype))
    with bb.function("main", [x]):
        out = bb.emit(relax.op.clip(x, 1.0, 3.4028234663852886e38))
        bb.emit_func_output(out)
    vm = relax.VirtualMachine(relax.build(bb.get(), "llvm"), tvm.cpu())
    a = np.array([-3, 0, 1, 5, 40], dtype)
    got = vm["main"](tvm.nd.array(a)).numpy()
    assert got.dtype == a.dtype
    np.testing.assert_array_equal(got, np.array([1, 1, 1, 5, 40], dtype))


def test_clip_integer_bounds_truncate_like_relay():
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo((4,), "int32"))
    with bb.function("main", [x]):
        out = bb.emit(relax.op.clip(x, -np.inf, 2.7))
        bb.emit_func_output(out)
    vm = relax.VirtualMachine(relax.build(bb.get(), "llvm"), tvm.cpu())
    got = vm["main"](tvm.nd.array(np.array([-2**31, 0, 2, 9], "int32"))).numpy()
    np.testing.assert_array_equal(got, np.array([-2**31, 0, 2, 2], "int32"))

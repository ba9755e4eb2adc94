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


def test_float_clip_bounds_are_immediates_of_the_dtype():
    """A float32 clip's constant bounds reach the kernel as float32 immediates (no cast of a
    float64 one: the code generator's max / min of an immediate skips the bound's NaN test, as
    Relay's clip); NaN inputs stay NaN, as numpy's clip."""
    from minitvm.relax.pipeline import get_pipeline
    from minitvm.tir import expr as E
    from minitvm.tir.stmt_functor import post_order_visit

    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo((4,), "float32"))
    with bb.function("main", [x]):
        out = bb.emit(relax.op.clip(x, 0.0, 255.0))
        bb.emit_func_output(out)
    mod = bb.get()
    legal = get_pipeline("zero")(mod)
    (func,) = [f for f in legal.functions.values() if isinstance(f, tvm.tir.PrimFunc)]
    found = []
    post_order_visit(func.body, lambda e: found.append(e) if isinstance(e, E.Max | E.Min)
                     else None)
    assert found and all(isinstance(e.b, E.FloatImm) and e.b.dtype == "float32" for e in found)
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    a = np.array([np.nan, -1, 300, 5.5], "float32")
    np.testing.assert_array_equal(vm["main"](tvm.nd.array(a)).numpy(), np.clip(a, 0, 255))

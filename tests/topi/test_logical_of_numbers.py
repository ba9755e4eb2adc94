"""Logical ops of float and integer tensors (found by the PyTorch importer fuzzer, fuzz63/64):
Relay and Relax keep the operand's dtype for ``logical_not`` / ``logical_and`` / ``logical_or``
/ ``logical_xor``, and the kernels negated or combined the numbers themselves: ``xor float``
and ``zext i32 to i8`` (LLVM refused the module) or ``~x`` (Relay's int32 ``logical_not`` gave
-2, 1, 0 for 1, -2, -1). Each operand is its truth (``!= 0``), the result 0 / 1."""

import numpy as np
import pytest

from minitvm import IRModule, relax, relay
from minitvm.relax import op as R
from minitvm.runtime import cpu
from minitvm.transform import PassContext

X = np.array([[1, 0, -2], [0, 3, -1]])
Y = np.array([[2, 0, 0], [-1, 0, 5]])


def _want(dt):
    a, b = X != 0, Y != 0
    return [np.logical_not(a), a & b, a | b, a ^ b, np.logical_not(a).sum(0)]


@pytest.mark.parametrize("dt", ["int32", "int64", "float32", "float16", "bool"])
def test_relax_logical_ops_of_numbers(dt):
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo(X.shape, dt))
    y = relax.Var("y", relax.TensorStructInfo(Y.shape, dt))
    with bb.function("main", [x, y]):
        with bb.dataflow():
            n = bb.emit(R.logical_not(x))
            outs = [n, bb.emit(R.logical_and(x, y)), bb.emit(R.logical_or(x, y)),
                    bb.emit(R.logical_xor(x, y)),
                    bb.emit(R.sum(R.astype(n, "float32"), axis=[0]))]
            o = bb.emit_output(relax.Tuple(outs))
        bb.emit_func_output(o)
    with PassContext(opt_level=3):
        vm = relax.VirtualMachine(relax.build(bb.get(), target="llvm"), cpu())
    got = vm["main"](X.astype(dt), Y.astype(dt))
    for g, w in zip(got, _want(dt), strict=True):
        g = g.numpy()
        assert g.dtype == (np.float32 if g.ndim == 1 else np.dtype(dt))
        np.testing.assert_array_equal(g, w.astype(g.dtype))


@pytest.mark.parametrize("dt", ["int32", "float32"])
def test_relay_logical_ops_of_numbers(dt):
    x = relay.var("x", shape=X.shape, dtype=dt)
    y = relay.var("y", shape=Y.shape, dtype=dt)
    n = relay.logical_not(x)
    f = relay.Function([x, y], relay.Tuple([
        n, relay.logical_and(x, y), relay.logical_or(x, y), relay.logical_xor(x, y),
        relay.sum(relay.cast(n, "float32"), axis=[0])]))
    got = relay.create_executor("graph", mod=IRModule.from_expr(f)).evaluate()(
        X.astype(dt), Y.astype(dt))
    for g, w in zip(got, _want(dt), strict=True):
        np.testing.assert_array_equal(g.numpy(), w.astype(g.numpy().dtype))


@pytest.mark.parametrize("dt", ["int32", "float32", "bool"])
def test_topi_logical_not_is_one_rule_in_the_operand_dtype(dt):
    """Relay's compute table (topi/tensor.py) and Relax's ``topi.logical_not`` (topi/math.py)
    build the same scalar: the operand's negated truth in the operand's dtype (as TVM's type
    rules of both dialects); the Relay table's returned bool before (stop 65)."""
    from minitvm import te
    from minitvm.topi import math as topi_math
    from minitvm.topi import tensor as topi_tensor

    x = te.placeholder((2,), dt, "x")
    relay_scalar = topi_tensor._UNARY["logical_not"](x[0])
    relax_scalar = topi_math.UNARY_FUNCS["logical_not"](x[0])
    assert relay_scalar.dtype == relax_scalar.dtype == dt
    assert str(relay_scalar) == str(relax_scalar)

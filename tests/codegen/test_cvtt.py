"""float32 -> integer casts by x86's ``cvttps2dq`` (``codegen/llvm/cvtt.py``): vectors of 4, 8
and 16n lanes on a host with the instruction take it, with no range test, and every input
(NaN, infinities, values past int32, negative values to unsigned types, rounding toward zero)
casts to what ``topi.reference.tensor.float_to_int`` gives, as the generic code does at other
widths (2 lanes, scalars) and in uint32 / 64-bit casts. Without AVX-512, 16n lanes go in 8-lane
pieces (``cvtt.PIECES``). (A loop of 12 or 48 lanes is emitted in pieces of
8 + 4 and 32 + 16 lanes, each taking the instruction.)"""

import numpy as np
import pytest

from minitvm import codegen, tir
from minitvm.codegen.llvm import cvtt
from minitvm.codegen.llvm.vector_pieces import needs_pieces, vector_pieces
from minitvm.runtime import jit
from minitvm.tir import expr as E
from minitvm.topi.reference.tensor import float_to_int

SPECIAL = [np.nan, np.inf, -np.inf, 2.0 ** 31, -2.0 ** 31, 2.0 ** 31 - 128, -2.0 ** 31 - 256,
           3e9, -3e9, 255.9, 256.0, -0.9, -1.0, -129.5, 127.99, 65535.5, 65536.0, -32768.7]


def _kernel(n: int, lanes: int, dtype: str):
    """``B[i] = cast(dtype, A[i])`` over ``n`` float32, vectors of ``lanes`` (1: a loop)."""
    A = tir.decl_buffer((n,), "float32", "A")
    B = tir.decl_buffer((n,), dtype, "B")
    i, j = tir.Var("i", "int32"), tir.Var("j", "int32")
    if lanes == 1:
        body = tir.For(i, 0, n, tir.ForKind.SERIAL, tir.BufferStore(
            B, E.Cast(dtype, A[i]), [i]))
    else:
        body = tir.For(i, 0, n // lanes, tir.ForKind.SERIAL, tir.For(
            j, 0, lanes, tir.ForKind.VECTORIZED, tir.BufferStore(
                B, E.Cast(dtype, A[i * lanes + j]), [i * lanes + j])))
    return codegen.build(tir.PrimFunc([A, B], body))


def _host_has(width: int) -> bool:
    return jit.host_has(cvtt._WIDTHS[width][0])


@pytest.mark.parametrize("lanes", [4, 8, 16, 32, 48, 12, 2, 1])
@pytest.mark.parametrize("dtype", ["int32", "int16", "int8", "uint8", "uint16", "uint32"])
def test_cast_equals_the_reference_for_every_input(lanes, dtype, rng):
    n = 96
    x = rng.uniform(-3e5, 3e5, n).astype("float32")
    x[:len(SPECIAL)] = np.array(SPECIAL, "float32")
    x[len(SPECIAL):len(SPECIAL) + 20] = rng.uniform(-300, 300, 20).astype("float32")
    mod = _kernel(n, lanes, dtype)
    out = np.empty(n, dtype)
    mod["main"](x, out)
    np.testing.assert_array_equal(out, float_to_int(x, dtype))
    # (a loop of 12 or 48 lanes is emitted as vectors of 8 + 4 and 32 + 16: vector_pieces)
    vectors = vector_pieces(lanes) if needs_pieces(lanes) else [lanes]
    uses = dtype != "uint32" and any(_takes_cvtt(v) for v in vectors)
    assert ("cvtt" in mod.get_source()) == uses


def _takes_cvtt(lanes: int) -> bool:
    """Does a float32 vector of ``lanes`` lanes cast by cvttps2dq on this host?"""
    width = next((w for w in cvtt.PIECES if lanes % w == 0 and _host_has(w)), lanes) \
        if lanes > 8 else lanes
    pieces = lanes // width
    return width in cvtt._WIDTHS and _host_has(width) and not pieces & (pieces - 1)


def test_only_float32_vectors_take_it():
    """Scalars, float64 and integer vectors are left to the generic code (None)."""
    from llvmlite import ir

    mod = ir.Module()
    fn = ir.Function(mod, ir.FunctionType(ir.VoidType(), [
        ir.FloatType(), ir.VectorType(ir.DoubleType(), 16), ir.VectorType(ir.IntType(32), 16)]),
        "f")
    bld = ir.IRBuilder(fn.append_basic_block())
    for arg in fn.args:
        assert cvtt.truncate(bld, None, arg) is None

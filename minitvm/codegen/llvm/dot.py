"""``tir.dot_u8s8x4(acc, a, b)``: int32 ``acc`` plus the dot product of the four unsigned bytes
of int32 ``a`` with the four signed bytes of int32 ``b`` (byte k of each, little-endian), lane
by lane; the products and sums wrap in int32 as the instruction does.

On a host with AVX-512 VNNI each 16 lanes are one ``vpdpbusd`` (``llvm.x86.avx512.vpdpbusd.
512``): 64 multiply-adds of 8-bit integers into 16 int32 sums, four times the multiply-adds of a
float32 FMA of the same width. Elsewhere (and for other widths) the same result from plain
integer vector code: the bytes widened, multiplied and summed in fours."""

from __future__ import annotations

import functools

from llvmlite import ir

from . import types as T

NAME = "dot_u8s8x4"
VNNI_WIDTH = 16


@functools.cache
def host_vnni() -> bool:
    """Does the host run ``vpdpbusd`` on 512-bit vectors (AVX-512F and AVX-512 VNNI)?"""
    from ...runtime.jit import host_has

    return host_has("avx512f", "avx512vnni")


def emit(bld: ir.IRBuilder, declare, acc, a, b) -> ir.Value:
    """The dot product of matched (same-width) int32 scalars or vectors; ``declare(name, ret,
    args)`` declares an LLVM function (the code generator's)."""
    lanes = acc.type.count if isinstance(acc.type, ir.VectorType) else 1
    if lanes % VNNI_WIDTH == 0 and host_vnni():
        vt = ir.VectorType(T.I32, VNNI_WIDTH)
        fn = declare("llvm.x86.avx512.vpdpbusd.512", vt, [vt, vt, vt])
        if lanes == VNNI_WIDTH:
            return bld.call(fn, [acc, a, b])
        mask = [ir.Constant(ir.VectorType(T.I32, VNNI_WIDTH),
                            list(range(k, k + VNNI_WIDTH))) for k in range(0, lanes, VNNI_WIDTH)]
        parts = [bld.call(fn, [bld.shuffle_vector(v, v, m) for v in (acc, a, b)]) for m in mask]
        return T.concat_vectors(bld, parts)
    return _widened(bld, acc, a, b, lanes)


def _widened(bld: ir.IRBuilder, acc, a, b, lanes: int) -> ir.Value:
    """The dot product by widening: ``a``'s bytes zero-extended, ``b``'s sign-extended, the 4n
    products summed in fours (byte k of lane i is element 4i + k: little-endian)."""
    bytes_t = ir.VectorType(ir.IntType(8), 4 * lanes)
    wide_t = ir.VectorType(T.I32, 4 * lanes)
    prod = bld.mul(bld.zext(bld.bitcast(a, bytes_t), wide_t),
                   bld.sext(bld.bitcast(b, bytes_t), wide_t))
    out = acc
    for k in range(4):
        pick = bld.shuffle_vector(prod, prod, ir.Constant(
            ir.VectorType(T.I32, lanes), [4 * i + k for i in range(lanes)]))
        if lanes == 1:
            pick = bld.extract_element(pick, T.I32(0))
        out = bld.add(out, pick)
    return out

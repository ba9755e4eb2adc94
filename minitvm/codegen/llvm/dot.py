"""``tir.dot_u8s8x4(acc, a, b)``: int32 ``acc`` plus the dot product of the four unsigned bytes
of int32 ``a`` with the four signed bytes of int32 ``b`` (byte k of each, little-endian), lane
by lane; the products and sums wrap in int32 as the instruction does.

On a host with AVX-512 VNNI each 16 lanes are one ``vpdpbusd`` (``llvm.x86.avx512.vpdpbusd.
512``): 64 multiply-adds of 8-bit integers into 16 int32 sums, four times the multiply-adds of a
float32 FMA of the same width. Elsewhere (and for other widths) the same result from plain
integer vector code: the bytes widened, multiplied and summed in fours.

``tir.dot_s16s16x2(acc, a, b)`` is the same for the two signed int16 halves of ``a`` and ``b``
(a 16x8 model's int16 activations and its int8 weights widened to int16): ``vpdpwssd`` on
AVX-512 VNNI, ``vpmaddwd`` + ``vpaddd`` on AVX-512BW or AVX2 (plain instructions, as exact:
the pair of products only overflows int32 for two products of -32768 * -32768), widened
integer code elsewhere.

``tir.dot_s16s8x2(acc, a, b)`` is that dot product with ``b`` an int16 holding two signed bytes
(an int8 weight packed as bytes, ``schedule/conv_vnni.BYTE_PAIRS``): each byte sign-extended to
the int16 it stands for as it is loaded (``vpmovsxbw``), then ``tir.dot_s16s16x2``'s
instructions."""

from __future__ import annotations

from llvmlite import ir

from . import types as T

NAME = "dot_u8s8x4"
PAIRS_NAME = "dot_s16s16x2"
BYTE_PAIRS_NAME = "dot_s16s8x2"
VNNI_WIDTH = 16


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
        return _chunked(bld, VNNI_WIDTH, lambda c, x, y: bld.call(fn, [c, x, y]), acc, a, b)
    return _widened(bld, acc, a, b, lanes)


def emit_pairs(bld: ir.IRBuilder, declare, acc, a, b) -> ir.Value:
    """``tir.dot_s16s16x2`` of matched int32 scalars or vectors (see ``emit``)."""
    from ...runtime.jit import host_has

    lanes = acc.type.count if isinstance(acc.type, ir.VectorType) else 1
    vt = ir.VectorType(T.I32, VNNI_WIDTH)
    if lanes % VNNI_WIDTH == 0 and host_has("avx512f", "avx512vnni"):
        fn = declare("llvm.x86.avx512.vpdpwssd.512", vt, [vt, vt, vt])
        return _chunked(bld, VNNI_WIDTH, lambda c, x, y: bld.call(fn, [c, x, y]), acc, a, b)
    for width, isa, name in ((VNNI_WIDTH, ("avx512f", "avx512bw"), "avx512.pmaddw.d.512"),
                             (8, ("avx2",), "avx2.pmadd.wd")):
        if lanes % width == 0 and host_has(*isa):
            wt, ht = ir.VectorType(T.I32, width), ir.VectorType(ir.IntType(16), 2 * width)
            fn = declare("llvm.x86." + name, wt, [ht, ht])
            return _chunked(bld, width, lambda c, x, y, fn=fn, ht=ht: bld.add(c, bld.call(
                fn, [bld.bitcast(x, ht), bld.bitcast(y, ht)])), acc, a, b)
    return _widened(bld, acc, a, b, lanes, 16)


def emit_byte_pairs(bld: ir.IRBuilder, declare, acc, a, b) -> ir.Value:
    """``tir.dot_s16s8x2``: ``b``'s int16 lanes (matched to ``acc``'s and ``a``'s int32 ones)
    as the int16 pairs of their two bytes sign-extended, then ``emit_pairs``."""
    lanes = acc.type.count if isinstance(acc.type, ir.VectorType) else 1
    wide = bld.sext(bld.bitcast(b, ir.VectorType(ir.IntType(8), 2 * lanes)),
                    ir.VectorType(ir.IntType(16), 2 * lanes))
    words = bld.bitcast(wide, ir.VectorType(T.I32, lanes) if lanes > 1 else T.I32)
    return emit_pairs(bld, declare, acc, a, words)


def _chunked(bld: ir.IRBuilder, width: int, one, acc, a, b) -> ir.Value:
    """``one(acc, a, b)`` (an instruction on ``width`` lanes) over vectors of a multiple of
    ``width`` lanes, a chunk at a time."""
    lanes = acc.type.count
    if lanes == width:
        return one(acc, a, b)
    mask = [ir.Constant(ir.VectorType(T.I32, width), list(range(k, k + width)))
            for k in range(0, lanes, width)]
    parts = [one(*(bld.shuffle_vector(v, v, m) for v in (acc, a, b))) for m in mask]
    return T.concat_vectors(bld, parts)


def _widened(bld: ir.IRBuilder, acc, a, b, lanes: int, bits: int = 8) -> ir.Value:
    """The dot product by widening: of bytes (``bits`` 8: ``a``'s zero-extended, ``b``'s
    sign-extended) or of int16 halves (16: both sign-extended), the products summed in fours
    or twos (part k of lane i is element ``per * i + k``: little-endian)."""
    per = 32 // bits
    part_t = ir.VectorType(ir.IntType(bits), per * lanes)
    wide_t = ir.VectorType(T.I32, per * lanes)
    a_wide = bld.zext if bits == 8 else bld.sext
    prod = bld.mul(a_wide(bld.bitcast(a, part_t), wide_t),
                   bld.sext(bld.bitcast(b, part_t), wide_t))
    out = acc
    for k in range(per):
        pick = bld.shuffle_vector(prod, prod, ir.Constant(
            ir.VectorType(T.I32, lanes), [per * i + k for i in range(lanes)]))
        if lanes == 1:
            pick = bld.extract_element(pick, T.I32(0))
        out = bld.add(out, pick)
    return out

"""float32 -> int32 truncation as x86's ``cvttps2dq`` where the host has it.

A float -> integer cast must give one defined result for every input
(``topi.reference.tensor.float_to_int``: truncated through int32, NaN and values outside
[-2**31, 2**31) give -2**31). LLVM's ``fptosi`` is poison there, so the generic code tests the
range and selects (two compares and a masked result a vector). ``cvttps2dq`` already returns
exactly that value, 0x80000000, for NaN and out-of-range lanes: called as its LLVM intrinsic the
cast is one instruction with the same result for every input. Zen 4, one thread, a quantized
model's kernels requantizing to uint8, interleaved A/B (us, range test -> ``cvttps2dq``): VNNI
1x1 conv 32->192 at 56x56 147 -> 132, 16->96 at 112x112 258 -> 224, 48->288 at 28x28 70.3 ->
62.0; depthwise 192 at 56x56 stride 2 88.1 -> 82.3, 288 at 28x28 73.3 -> 69.7."""

from __future__ import annotations

from llvmlite import ir

from . import types as T

# vector lanes -> (the host feature it needs, the intrinsic)
_WIDTHS = {16: ("avx512f", "llvm.x86.avx512.mask.cvttps2dq.512"),
           8: ("avx", "llvm.x86.avx.cvtt.ps2dq.256"),
           4: ("sse2", "llvm.x86.sse2.cvttps2dq")}
# ... and the rounding conversion (``cvtps2dq``: the current rounding mode, nearest-even by
# default, as ``llvm.nearbyint``), with the same result for NaN and out-of-range lanes
_ROUNDING = {8: "llvm.x86.avx.cvt.ps2dq.256", 4: "llvm.x86.sse2.cvtps2dq"}
# Vectors wider than 8 lanes go in pieces of the widest of these the host has: 16 with
# AVX-512, else 8 (AVX2: a 16-lane cast, a conv tile's requantize to uint8, tested its range
# with two compares, two ands and packs of the masks a vector where it is one instruction).
PIECES = (16, 8)


def piece_width(lanes: int, rounding: bool = False) -> int | None:
    """The lanes of the pieces ``truncate`` converts a float32 vector of ``lanes`` in, or None
    where the host or the width has no such instruction."""
    from ...runtime.jit import host_has  # (the runtime imports the codegen)

    width = next((w for w in PIECES if lanes % w == 0 and host_has(_WIDTHS[w][0])), lanes) \
        if lanes > 8 else lanes
    if (lanes // width) & (lanes // width - 1):  # (pieces joined pairwise: a power of two)
        return None
    feature = _WIDTHS.get(width, (None, None))[0]
    if feature is None or not host_has(feature):
        return None
    # (AVX-512's 16 lanes keep nearbyint + cvttps2dq when rounding: not run on this kind of
    # host, their kernels' IR stays as it was)
    return None if rounding and width == 16 else width


def clip_by(bld: ir.IRBuilder, declare, v, c, upper: bool, width: int) -> ir.Value:
    """``c < v ? c : v`` (``upper``: a min) or ``c > v ? c : v`` (a max) of float32 vector ``v``
    and ``c`` of its lanes, as x86's ``minps`` / ``maxps`` (``c`` where the compare holds, else
    ``v``: a NaN kept) in pieces of ``width`` (8 or 4) lanes. LLVM folds the select of a zero
    ``c`` (a requantize's clip at 0: a ReLU) into a compare and an and, two instructions for
    this one."""
    name = {8: "llvm.x86.avx.{}.ps.256", 4: "llvm.x86.sse.{}.ps"}[width].format(
        "min" if upper else "max")
    ft = ir.VectorType(ir.FloatType(), width)
    fn = declare(name, ft, [ft, ft])
    lanes = v.type.count
    if lanes == width:
        return bld.call(fn, [c, v])
    parts = []
    for k in range(0, lanes, width):
        mask = ir.Constant(ir.VectorType(T.I32, width), list(range(k, k + width)))
        parts.append(bld.call(fn, [bld.shuffle_vector(x, x, mask) for x in (c, v)]))
    return T.concat_vectors(bld, parts)


def truncate(bld: ir.IRBuilder, declare, v, rounding: bool = False) -> ir.Value | None:
    """``v`` (a float32 vector) truncated to int32 lanes by ``cvttps2dq`` (pieces of ``PIECES``
    for wider vectors), or None where the host or the width has no such instruction (the caller
    then tests the range itself). ``declare(name, ret, args)`` declares an LLVM function.
    ``rounding``: rounded in the current mode instead (``cvtps2dq``: ``trunc(nearbyint(v))``,
    NaN and out-of-range lanes alike)."""
    if not isinstance(v.type, ir.VectorType) or not isinstance(v.type.element, ir.FloatType):
        return None
    lanes = v.type.count
    width = piece_width(lanes, rounding)
    if width is None:
        return None
    name = _ROUNDING[width] if rounding else _WIDTHS[width][1]
    ft, it = ir.VectorType(ir.FloatType(), width), ir.VectorType(T.I32, width)
    extra = [ir.Constant(it, None), ir.Constant(ir.IntType(16), -1), T.I32(4)] \
        if width == 16 else []
    fn = declare(name, it, [ft, *(e.type for e in extra)])
    if lanes == width:
        return bld.call(fn, [v, *extra])
    parts = [bld.call(fn, [bld.shuffle_vector(v, v, ir.Constant(
        ir.VectorType(T.I32, width), list(range(k, k + width)))), *extra])
        for k in range(0, lanes, width)]
    return T.concat_vectors(bld, parts)

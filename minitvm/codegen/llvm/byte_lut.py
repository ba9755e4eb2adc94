"""``tir.byte_lut256(q0, q1, q2, q3, x)``: a lookup in a 256-byte table, 64 lanes at a time.

``q0 .. q3`` are the table's four 64-byte quarters (64-lane vectors of an 8-bit type) and ``x``
a 64-lane vector of 8-bit indices read as unsigned; lane ``i`` of the result is byte ``x[i]`` of
``q0 ++ q1 ++ q2 ++ q3``. On a host with AVX-512 VBMI that is two ``vpermi2b``
(``llvm.x86.avx512.vpermi2var.qi.512``: each picks among 128 bytes by an index's low seven bits)
and a blend on the index's top bit: 64 lookups in three instructions, where a gather of bytes
is 64 scalar loads. Elsewhere the same result lane by lane (``extractelement`` of the table at
the index). Only 64-lane vectors are meaningful (``schedule/byte_table`` writes it so)."""

from __future__ import annotations

from llvmlite import ir

NAME = "byte_lut256"
LANES = 64


def host_vbmi() -> bool:
    """Does the host run ``vpermi2b`` on 512-bit vectors (AVX-512F and AVX-512 VBMI)?"""
    from ...runtime.jit import host_has

    return host_has("avx512f", "avx512vbmi")


def emit(bld: ir.IRBuilder, declare, q0, q1, q2, q3, x) -> ir.Value:
    """The lookup of ``x`` in the table ``q0 .. q3`` (``declare(name, ret, args)`` declares an
    LLVM function: the code generator's)."""
    vt = ir.VectorType(ir.IntType(8), LANES)
    for v in (q0, q1, q2, q3, x):
        if not isinstance(v.type, ir.VectorType) or v.type.count != LANES or \
                v.type.element != ir.IntType(8):
            raise ValueError(f"tir.{NAME} takes 64-lane vectors of bytes, got {v.type}")
    if host_vbmi():
        fn = declare("llvm.x86.avx512.vpermi2var.qi.512", vt, [vt, vt, vt])
        lo = bld.call(fn, [q0, x, q1])
        hi = bld.call(fn, [q2, x, q3])
        top = bld.icmp_signed("<", x, ir.Constant(vt, [0] * LANES))
        return bld.select(top, hi, lo)
    i32 = ir.IntType(32)
    half_t = ir.VectorType(ir.IntType(8), 2 * LANES)
    lo = bld.shuffle_vector(q0, q1, ir.Constant(ir.VectorType(i32, 2 * LANES),
                                                list(range(2 * LANES))))
    hi = bld.shuffle_vector(q2, q3, ir.Constant(ir.VectorType(i32, 2 * LANES),
                                                list(range(2 * LANES))))
    table = bld.shuffle_vector(lo, hi, ir.Constant(ir.VectorType(i32, 4 * LANES),
                                                   list(range(4 * LANES))))
    assert lo.type == half_t
    out = ir.Constant(vt, ir.Undefined)
    for k in range(LANES):
        idx = bld.zext(bld.extract_element(x, i32(k)), i32)
        out = bld.insert_element(out, bld.extract_element(table, idx), i32(k))
    return out

"""Elementwise stages that are a function of one byte, as a 256-entry table and a byte shuffle.

A quantized model's lookup-table activations (TFLite's GELU, TANH, LOGISTIC on int8 data:
``take(table, cast(x, int32) - lo)``, often with a requantization around it) compute each 8-bit
output from one 8-bit input element alone. Vectorized as they stand, their table read is a
gather: 16 or 64 scalar loads per vector (about 0.39 ns an element on Zen 4). ``match`` finds an
8-bit stage whose body reads one 8-bit tensor at the output's own position and otherwise only
values that do not vary over the output (constants, scalars, the table at an index computed
from that byte); ``emit`` evaluates the body once for each of the 256 byte values into a table
on the stack, then looks every element up 64 at a time (``tir.byte_lut256``: two ``vpermi2b``
and a blend on AVX-512 VBMI). Used where the host has VBMI and the stage has ``MIN_ELEMENTS``.
"""

from __future__ import annotations

from ..tir import expr as E
from ..tir import stmt as S
from ..tir.buffer import decl_buffer
from ..tir.stmt_functor import post_order, transform_expr
from .common import at_own_position, const_int, parallel_for, same_dims

BYTES = ("int8", "uint8")
LANES = 64  # lanes of one lookup (``tir.byte_lut256``)
# elements below which the stage keeps its plain loop (the table costs 256 evaluations)
MIN_ELEMENTS = 4096
# 64-byte blocks per parallel task (each task builds its own table: 256 evaluations per
# 16384 elements)
TASK_BLOCKS = 256


def applies() -> bool:
    """Does the host look bytes up by ``vpermi2b`` (AVX-512 VBMI)?"""
    from ..codegen.llvm.byte_lut import host_vbmi

    return host_vbmi()


def _varies(e, axes) -> bool:
    ids = {id(a) for a in axes}
    return any(isinstance(n, E.Var) and id(n) in ids for n in post_order(e))


def match(t, buf, body):
    """``(source buffer, f)`` when stage ``t`` (8-bit, static shape of ``MIN_ELEMENTS`` or
    more, stored to ``buf``) computes ``body`` from one 8-bit buffer read at its own position:
    ``f(v)`` is ``body`` where that read is ``v``, and reads no axis of ``t``; the body must
    gather (read a buffer at an index computed from the byte), else the plain loop is as fast.
    None otherwise."""
    if t.dtype not in BYTES or not hasattr(t.op, "axis"):
        return None
    dims = [const_int(d) for d in t.shape]
    if not dims or any(d is None for d in dims):
        return None
    n = 1
    for d in dims:
        n *= d
    if n < MIN_ELEMENTS:
        return None
    axes = [iv.var for iv in t.op.axis]
    srcs = {id(e.buffer): e.buffer for e in post_order(body) if isinstance(e, E.BufferLoad)
            and at_own_position(e.indices, axes, t.shape)}
    if len(srcs) != 1:
        return None
    (src,) = srcs.values()
    if src.dtype not in BYTES or src is buf or src.data is buf.data or \
            not same_dims(src.shape, t.shape):
        return None
    v = E.Var("byte", src.dtype)
    fv = transform_expr(body, lambda e: v if isinstance(e, E.BufferLoad) and e.buffer is src
                        and at_own_position(e.indices, axes, t.shape) else None)
    if _varies(fv, axes):
        return None
    if not any(isinstance(e, E.BufferLoad) and any(_varies(i, [v]) for i in e.indices)
               for e in post_order(fv)):
        return None

    def f(x):
        return transform_expr(fv, lambda e: x if e is v else None)

    return src, f


def emit(ctx, t, buf, found) -> S.Stmt:
    """The table and lookup loops of ``match``'s result for stage ``t`` into ``buf``."""
    src, f = found
    n = 1
    for d in t.shape:
        n *= const_int(d)
    xv, ov = ctx.flat_view(src), ctx.flat_view(buf)
    blocks = n // LANES
    tasks = -(-blocks // TASK_BLOCKS)

    def i32(v):
        return E.IntImm("int32", v)

    def task(c):
        lut = decl_buffer((256,), t.dtype, "byte_lut", scope="local")
        uo, ui = ctx.fresh("uo"), ctx.fresh("ui")
        u = uo * i32(16) + ui  # (a 16-lane block never crosses 127 -> 128: casts stay affine)
        build = S.For(uo, i32(0), i32(16), S.ForKind.SERIAL,
                      S.For(ui, i32(0), i32(16), S.ForKind.VECTORIZED,
                            S.BufferStore(lut, f(E.Cast(src.dtype, u)), [u])))
        b, lane = ctx.fresh("blk"), ctx.fresh("lane")
        first = c * i32(TASK_BLOCKS)
        count = E.Min(first + i32(TASK_BLOCKS), i32(blocks)) - first \
            if blocks % TASK_BLOCKS else i32(TASK_BLOCKS)
        at = (first + b) * i32(LANES) + lane
        look = E.Call(t.dtype, "tir.byte_lut256", [
            *(E.BufferLoad(lut, [i32(q * LANES) + lane]) for q in range(4)),
            E.BufferLoad(xv, [at])])
        loop = S.For(b, i32(0), count, S.ForKind.SERIAL,
                     S.For(lane, i32(0), i32(LANES), S.ForKind.VECTORIZED,
                           S.BufferStore(ov, look, [at])))
        return S.Allocate(lut.data, t.dtype, [256], True,
                          S.DeclBuffer(lut, S.SeqStmt([build, loop])))

    parts = [parallel_for(ctx, tasks, TASK_BLOCKS * LANES, task)]
    if n % LANES:  # the last elements: the body itself, element by element
        k = ctx.fresh("tail")
        parts.append(S.For(k, i32(blocks * LANES), i32(n % LANES), S.ForKind.SERIAL,
                           S.BufferStore(ov, f(E.BufferLoad(xv, [k])), [k])))
    return S.SeqStmt(parts) if len(parts) > 1 else parts[0]

"""A tile of 16-lane vectors transposed in registers, and what a fused epilogue reads.

``conv_lanes`` keeps a tile as one vector of 16 output channels a pixel; to store it as vectors
of pixels (one output channel each, the NCHW layout) it transposes the tile with two-vector
shuffles (``tir.vector_shuffle``, LLVM's shufflevector) rather than storing each pixel's
channels one lane at a time. Where the fused epilogue runs (on the channel vectors before the
transpose, or on the pixel vectors after it) depends on whether it reads an operand at the
output pixel (``reads_plane``).
"""

from __future__ import annotations

from ..tir import expr as E
from ..tir import stmt as S
from ..tir.buffer import decl_buffer
from ..tir.stmt_functor import post_order

LANES = 16


def transpose16(src, rows: int, consumer) -> S.Stmt:
    """The ``[16, 16]`` transpose of the first ``rows`` rows of the 16-wide ``src`` (its other
    rows repeat row 0: their lanes are don't-care) in four stages of 16 two-vector shuffles
    (``tir.vector_shuffle``), each swapping one bit of the row index with the same bit of the
    lane index, in local buffers LLVM keeps in registers; ``consumer(buffer)`` the statements
    reading the transpose."""
    if not 1 <= rows <= LANES:
        raise ValueError(f"lane_transpose.transpose16: {rows} rows of 16 lanes do not transpose "
                         "into 16 vectors")
    ramp = E.Ramp(E.IntImm("int32", 0), E.IntImm("int32", 1), LANES)
    return transpose16_of([E.BufferLoad(src, [E.IntImm("int32", i if i < rows else 0), ramp])
                           for i in range(LANES)], src.dtype, consumer)


def transpose16_of(vectors: list, dtype: str, consumer) -> S.Stmt:
    """``transpose16`` of 16 given 16-lane vectors (row ``i`` of the tile is ``vectors[i]``,
    e.g. loads from 16 rows of a matrix): ``consumer(buffer)`` reads the ``[16, 16]``
    transpose from a local buffer."""
    if len(vectors) != LANES:
        raise ValueError(f"lane_transpose.transpose16_of: {len(vectors)} vectors given, 16 "
                         "transpose into 16")
    ramp = E.Ramp(E.IntImm("int32", 0), E.IntImm("int32", 1), LANES)
    cur = list(vectors)
    stmts, bufs = [], []
    for k in range(4):
        d = 1 << k
        buf = decl_buffer((LANES, LANES), dtype, f"cl_tr{k}", scope="local")
        for i in range(LANES):
            up = 1 if i & d else 0  # (the upper row of the pair takes the odd half)
            mask = [((lane | d) if up else (lane & ~d)) + (LANES if lane & d else 0)
                    for lane in range(LANES)]
            stmts.append(S.BufferStore(buf, E.Call(f"{dtype}x{LANES}", "tir.vector_shuffle", [
                cur[i & ~d], cur[i | d], *[E.IntImm("int32", m) for m in mask]]),
                [E.IntImm("int32", i), ramp]))
        cur = [E.BufferLoad(buf, [E.IntImm("int32", i), ramp]) for i in range(LANES)]
        bufs.append(buf)
    body = S.SeqStmt([*stmts, consumer(bufs[-1])])
    for buf in reversed(bufs):
        body = S.Allocate(buf.data, dtype, [LANES * LANES], True, S.DeclBuffer(buf, body))
    return body


def reads_plane(epilogue, nv, channel) -> bool:
    """Does fused epilogue ``epilogue(indices, value)`` read an operand at the output pixel (a
    residual), not only per output channel (a bias, a scale) or nothing?"""
    y, x = E.Var("ey", "int32"), E.Var("ex", "int32")
    probe = epilogue([nv, channel, y, x], E.FloatImm("float32", 0.0))
    return any(e is y or e is x for e in post_order(probe))


def costly_plane_epilogue(epilogue) -> bool:
    """Does the fused epilogue both read an operand at the pixel (``reads_plane``: it runs
    after the transpose, on pieces of the tile's row) and call a function (a SiLU's sigmoid)?
    ``conv_lanes`` keeps such a conv's tiles across rows (``ROW_STORE``): YOLOv5's 16 -> 16 3x3 at 40x40
    with SiLU and a residual add, one thread, its kernel in the model, A/B in one process,
    0.086 ms across rows, 0.098 in rows."""
    n, c, y, x = (E.Var(v, "int32") for v in ("en", "ec", "ey", "ex"))
    probe = epilogue([n, c, y, x], E.FloatImm("float32", 0.0))
    nodes = list(post_order(probe))
    return any(e is y or e is x for e in nodes) and any(isinstance(e, E.Call) for e in nodes)

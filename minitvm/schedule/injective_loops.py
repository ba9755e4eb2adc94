"""The loop nest of an injective stage (``injective_nest``): outer loops fused and parallel, the
innermost axis in vector chunks plus a scalar tail, transposing stages tiled
(``transpose_nest``); and binding a stage's axes to loop indices."""

from __future__ import annotations

from ..tir import expr as E
from ..tir import stmt as S
from ..tir.stmt_functor import post_order, substitute, transform_expr
from . import (
    byte_table,
)
from .common import (
    PARALLEL_MIN_WORK,
)
from .common import const_int as _const_int
from .common import dims_of as _shape
from .common import imm as _i
from .common import index_dtype as _index_dtype
from .common import is_static as _is_static
from .common import lanes as _lanes
from .common import outer_loops as _outer_loops
from .common import prod_dims as _prod
from .common import static_part as _static_part
from .common import vector_inner as _vector_inner
from .flat_index import flat_nest
from .index_chains import simplify_index_chains
from .lane_loads import contiguous_lane_loads, strided_copy_axis
from .pieces import split_pieces, split_planes
from .plane_nest import merged_plane_nest
from .raise_patterns import affine
from .transpose_pieces import transpose_pieces


def _scalar_idx(buf) -> list:
    """Indices of the one element of a scalar tensor's buffer: none for a rank-0 buffer, [0]
    for the 1-element buffers ``lower_te`` gives scalars."""
    return [] if len(buf.shape) == 0 else [_i(0)]


def _bind(axis, idx) -> dict:
    """``axis var -> index`` (cast to the var's type when the loop index has another)."""
    out = {}
    for iv, ix in zip(axis, idx):
        v = iv.var if hasattr(iv, "var") else iv
        if isinstance(ix, int):
            ix = E.IntImm(v.dtype, ix)
        elif ix.dtype != v.dtype:
            ix = E.IntImm(v.dtype, ix.value) if isinstance(ix, E.IntImm) else E.Cast(v.dtype, ix)
        out[v] = ix
    return out


def _sub_axes(body, axis, idx):
    return substitute(body, _bind(axis, idx))


def injective_nest(ctx, t, buf, body):
    """The loop nest storing the inlined ``body`` of tensor ``t`` into ``buf``; with a static
    shape, its lane-by-lane gathers of consecutive elements become contiguous vector loads."""
    if _is_static(_shape(t)) and _prod(_shape(t)) == 0:  # (an empty tensor: nothing to store)
        return S.SeqStmt([])
    if _is_static(_shape(t)) and byte_table.applies():
        table = byte_table.match(t, buf, body)
        if table is not None:  # an 8-bit function of one byte: a table and byte shuffles
            return byte_table.emit(ctx, t, buf, table)
    if _is_static(_shape(t)):  # (reshapes over transposes: division chains folded)
        body = simplify_index_chains(t, body)
    nest = _injective_loops(ctx, t, buf, body)
    return contiguous_lane_loads(ctx, nest) if _is_static(_shape(t)) else nest


def _injective_loops(ctx, t, buf, body):
    shape = _shape(t)
    if not shape:
        return S.BufferStore(buf, body, _scalar_idx(buf))
    if not _is_static(shape):  # a reshape under a symbolic dim: rows of flat vectors
        flat = flat_nest(ctx, t, buf, body)
        if flat is not None:
            return flat
    lanes = _lanes(t.dtype)
    p = transposed_axis(t, body)
    if p is None and _is_static(shape):  # (a transpose behind reshapes: indices that divide)
        p = strided_copy_axis(t, body, shape)
    if p is not None:
        return transpose_pieces(ctx, t, buf, body, p, TRANSPOSE_TILE, lanes) or \
            transpose_nest(ctx, t, buf, body, p)

    if _is_static(shape):  # (a short last axis: whole planes of vectors)
        merged = merged_plane_nest(ctx, t, buf, body, lanes)
        if merged is not None:
            return merged
    split = _split_inner(t, body, lanes)
    if split is None and _is_static(shape):  # (a concatenate along an outer axis)
        planes = split_planes(ctx, t, buf, body, lanes, _prod(shape) >= PARALLEL_MIN_WORK)
        if planes is not None:
            return planes
    if split is None:  # (a divisor that is no whole number of vectors: a tail each row)
        split = _split_inner(t, body, lanes, whole_vectors=False)

    def store(outer):
        def at(j):
            idx = outer + [j]
            return S.BufferStore(buf, _sub_axes(body, t.op.axis, idx), idx)

        if split is None:  # (a concatenate along the last axis: piece by piece)
            by_piece = split_pieces(ctx, t, buf, body, outer, lanes)
            if by_piece is not None:
                return by_piece
            n = _const_int(shape[-1])
            if n is not None and n > lanes:  # (a row of 30: 16 + 8 + 4 lanes, not 14 scalars)
                return _split_row(ctx, n, lanes, at)
            return _vector_inner(ctx, shape[-1], lanes, at)
        c, jo_var, ji_var, split_body = split
        jo = ctx.fresh("jo")

        def at_split(ji):  # the last axis at jo * c + ji: its // c is jo and its % c is ji
            idx = outer + [jo * c + ji]
            vals = _bind(t.op.axis, idx)
            vals.update(_bind([jo_var, ji_var], [jo, ji]))
            return S.BufferStore(buf, substitute(split_body, vals), idx)

        return S.For(jo, 0, shape[-1] // c, S.ForKind.SERIAL,
                     _split_row(ctx, c, lanes, at_split))

    if _is_static(shape):
        return _outer_loops(ctx, list(shape[:-1]), _prod(shape) >= PARALLEL_MIN_WORK, store)
    return _outer_loops(ctx, list(shape[:-1]), True, store, _static_part(shape[-1:]))


def _split_row(ctx, c: int, lanes: int, body_fn):
    """One row of ``c`` values of an innermost axis: whole vectors, then a half vector where at
    least half a vector is left, then a quarter vector (of at least 4 lanes) where a quarter is
    left, then scalars (a row of 24 floats: 16 + 8 lanes, not 16 lanes and 8 scalar stores; of
    30: 16 + 8 + 4 lanes and 2 scalars)."""
    whole = c // lanes * lanes
    parts = [_vector_inner(ctx, whole, lanes, body_fn)] if whole else []
    done = whole
    for width in (lanes // 2, lanes // 4):
        if width >= 4 and c - done >= width:
            vi = ctx.fresh("vh")
            parts.append(S.For(vi, 0, width, S.ForKind.VECTORIZED, body_fn(vi + done)))
            done += width
    if done == whole:
        return _vector_inner(ctx, c, lanes, body_fn)
    if c - done:
        t = ctx.fresh("t")
        parts.append(S.For(t, done, c - done, S.ForKind.SERIAL, body_fn(t)))
    return S.SeqStmt(parts)


def _split_inner(t, body, lanes: int, whole_vectors: bool = True):
    """``(c, jo, ji, body')`` when ``body`` divides stage ``t``'s innermost axis ``j`` by one
    constant ``c`` (``j // c``, ``j % c``: a reshape that merges axes, as ``[.., 12, 64]``
    read as ``[.., 768]``) that is a whole number of vectors dividing the axis (or, without
    ``whole_vectors``, at least one vector); ``body'`` reads ``jo`` for ``j // c``, ``ji`` for
    ``j % c`` and ``jo * c + ji`` for ``j``. Else None.

    Looped as ``jo`` outer and ``ji`` vectorized, the loads are contiguous vectors; with ``j``
    vectorized, every lane's ``j // c`` and ``j % c`` were computed and the load gathered
    (BERT's merge of the heads at seq 128: 90 us, the split of the heads, its mirror: 37 us;
    ST-GCN's einsum operand ``[2, 3, 32, 64, 18] -> [.., 3 * 18]`` with ``c`` 18, a vector and a
    two-element tail a row: 170 -> 48 us).
    """
    n = _const_int(_shape(t)[-1])
    last = t.op.axis[-1].var
    divisors = set()
    for e in post_order(body):
        if isinstance(e, (E.FloorDiv, E.FloorMod)):
            a = e.a.value if isinstance(e.a, E.Cast) else e.a
            if a is last:
                divisors.add(_const_int(e.b))
    if n is None or len(divisors) != 1:
        return None
    c = divisors.pop()
    if c is None or c < lanes or (whole_vectors and c % lanes) or n % c or c == n:
        return None
    jo, ji = E.Var("jo", last.dtype), E.Var("ji", last.dtype)

    def fpost(e):
        if isinstance(e, (E.FloorDiv, E.FloorMod)) and _const_int(e.b) == c:
            a = e.a.value if isinstance(e.a, E.Cast) else e.a
            if a is last:
                v = jo if isinstance(e, E.FloorDiv) else ji
                return v if e.dtype == v.dtype else E.Cast(e.dtype, v)
        return None

    return c, jo, ji, transform_expr(body, fpost)


TRANSPOSE_TILE = 16  # rows of the output read per tile by a transposing stage


def transposed_axis(t, body) -> int | None:
    """The output axis ``p`` whose index is the innermost (unit-stride) index of a load that the
    innermost output axis reads across rows (a transpose), or None.

    Such a stage, written row by row, reads one element per cache line of its input; tiling
    ``p`` keeps those lines in cache while the tile's rows are written.
    """
    axis = [iv.var for iv in t.op.axis]
    if len(axis) < 2:
        return None
    last = axis[-1]
    for ld in post_order(body):
        if not isinstance(ld, E.BufferLoad) or len(ld.indices) < 2:
            continue
        inner = affine(ld.indices[-1])
        if inner is None or id(last) in inner[0]:
            continue
        if not any(id(last) in (affine(i) or ({id(last): 0}, 0))[0] for i in ld.indices[:-1]):
            continue
        for k, v in enumerate(axis[:-1]):
            if id(v) in inner[0] and inner[0][id(v)][1] == 1 and \
                    _const_int(_shape(t)[k]) != 1:
                return k
    return None


def transpose_nest(ctx, t, buf, body, p: int) -> S.Stmt:
    """Injective loops tiled over output axis ``p``: per tile of ``TRANSPOSE_TILE`` values of
    ``p`` and per vector chunk of the innermost axis, the tile's rows are written while the
    input lines they gather from stay in cache."""
    shape = list(_shape(t))
    n = len(shape)
    lanes = _lanes(t.dtype)
    static = _is_static(shape)
    dt = "int32" if static else _index_dtype(shape)
    tile = TRANSPOSE_TILE
    dp, dl = shape[p], shape[-1]
    others = [k for k in range(n - 1) if k != p]

    def c(v):
        return E.IntImm(dt, v) if isinstance(v, int) else v

    ntiles = -(-dp // tile) if isinstance(dp, int) else E.FloorDiv(dp + c(tile - 1), c(tile))

    def per_tile(idx):
        tp = idx[-1] if idx[-1].dtype == dt else E.Cast(dt, idx[-1])
        lo = tp * c(tile)
        if not isinstance(dp, int):
            return tile_rows(idx, lo, E.Min(c(tile), c(dp) - lo))
        whole, rem = divmod(dp, tile)  # static: whole tiles and the last one, each of a
        if not rem:                    # constant extent
            return tile_rows(idx, lo, c(tile))
        if not whole:
            return tile_rows(idx, lo, c(rem))
        return S.IfThenElse(E.LT(tp, c(whole)), tile_rows(idx, lo, c(tile)),
                            tile_rows(idx, lo, c(rem)))

    def tile_rows(idx, lo, ext):
        def store(pv, j):
            full = [None] * n
            for k, v in zip(others, idx[:-1]):
                full[k] = v
            full[p], full[-1] = pv, j
            return S.BufferStore(buf, _sub_axes(body, t.op.axis, full), full)

        nvec = dl // lanes if isinstance(dl, int) else E.FloorDiv(dl, c(lanes))
        parts = []
        if not isinstance(nvec, int) or nvec:
            vo, pv, vi = ctx.fresh("vo", dt), ctx.fresh("p", dt), ctx.fresh("vi", dt)
            if isinstance(ext, E.IntImm):  # a constant extent: p at lo + [0, ext), static bounds
                at, p_lo = lo + pv, c(0)   # (``contiguous_lane_loads`` evaluates them)
            else:
                at, p_lo = pv, lo
            vec = S.For(vi, c(0), c(lanes), S.ForKind.VECTORIZED,
                        store(at, vo * c(lanes) + vi))
            parts.append(S.For(vo, c(0), c(nvec), S.ForKind.SERIAL,
                               S.For(pv, p_lo, ext, S.ForKind.SERIAL, vec)))
        done = nvec * lanes if isinstance(nvec, int) else nvec * c(lanes)
        if not isinstance(dl, int) or dl - done:
            tl, pv2 = ctx.fresh("t", dt), ctx.fresh("p", dt)
            rest = dl - done if isinstance(dl, int) else dl - done
            parts.append(S.For(tl, c(done), c(rest), S.ForKind.SERIAL,
                               S.For(pv2, lo, ext, S.ForKind.SERIAL, store(pv2, tl))))
        return S.SeqStmt(parts) if len(parts) != 1 else parts[0]

    dims = [shape[k] for k in others] + [ntiles]
    if static:
        return _outer_loops(ctx, dims, _prod(shape) >= PARALLEL_MIN_WORK, per_tile)
    return _outer_loops(ctx, dims, True, per_tile, tile * _static_part([dl]))

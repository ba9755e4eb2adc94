"""ATen gathers and masks onto Relay: ``embedding``, ``take``, ``index_select``, ``gather``,
``take_along_dim``, indexing by integer tensors ``x[i0, i1, ...]`` (``index``), ``where``,
``masked_fill`` and ``masked_scatter``."""

from __future__ import annotations

import numpy as np

from ....frontend_common.torch_take_along import take_along_plan
from ... import expr as _expr
from ... import op as _op
from ..scatter import wrap_index as _wrap
from .aten import _is_expr, _norm_dim, _pair, _scalar_like, register


@register("embedding")
def _embedding(ctx, args):
    w, idx = args[0], args[1]
    return _op.take(w, idx, axis=0)


@register("take")
def _take(ctx, args):
    """take(self, index): elements of the flattened ``self`` (negative indices from its end),
    in the index's shape (a hashed lookup into a flattened table)."""
    x, index = args[0], args[1]
    n = int(np.prod([int(d) for d in ctx.shape(x)], dtype=np.int64))
    return _op.take(_op.reshape(x, (-1,)), _wrap(ctx, index, n), axis=0)


@register("masked_fill", "masked_fill_")
def _masked_fill(ctx, args):
    x, mask, value = args[:3]
    v = value if _is_expr(value) else _scalar_like(ctx, value, x)
    return _op.where(mask, v, x)


@register("masked_scatter", "masked_scatter_")
def _masked_scatter(ctx, args):
    """``x.masked_scatter(mask, source)``: the positions where ``mask`` (broadcast to ``x``)
    holds take ``source``'s leading elements in row-major order, the rest keep ``x`` (a VLM
    writing its image features over the image-token embeddings). Each masked position's
    source element is the running count of the mask before it: a cumsum, a take, a select."""
    x, mask, source = args[:3]
    shape = [int(d) for d in ctx.shape(x)]
    if [int(d) for d in ctx.shape(mask)] != shape:
        mask = _op.broadcast_to(mask, shape)
    flat_mask = _op.reshape(mask, (-1,))
    rank = _op.cumsum(_op.cast(flat_mask, "int64"), axis=0, exclusive=True)
    src = _op.reshape(source, (-1,))
    if ctx.dtype(source) != ctx.dtype(x):
        src = _op.cast(src, ctx.dtype(x))
    picked = _op.take(src, rank, axis=0, mode="clip")
    return _op.reshape(_op.where(flat_mask, picked, _op.reshape(x, (-1,))), shape)


@register("where")
def _where(ctx, args):
    """``torch.where(cond, a, b)``: the branches take the dtype torch promotes them to
    (``_pair``); with two Python numbers (``torch.where(keep, 0.0, -1e9)``, an additive
    mask) that is the default dtype of the numbers' kind, broadcast by ``where`` to ``cond``."""
    c, a, b = args[:3]
    if not _is_expr(a) and not _is_expr(b):
        dt = _numbers_dtype(a, b)
        return _op.where(c, _expr.const(np.array(a, dt), dt), _expr.const(np.array(b, dt), dt))
    a, b = _pair(ctx, a, b)
    return _op.where(c, a, b)


def _numbers_dtype(*values) -> str:
    """The dtype torch gives a result computed from Python numbers alone: float32 (torch's
    default) when any is a float, int64 otherwise (TorchScript traces no bool pair)."""
    return "float32" if any(isinstance(v, float) for v in values) else "int64"


@register("index_select")
def _index_select(ctx, args):
    x, dim, idx = args[:3]
    return _op.take(x, idx, axis=_norm_dim(dim, len(ctx.shape(x))))


@register("gather")
def _gather(ctx, args):
    x, dim, idx = args[:3]
    return _op.gather(x, _norm_dim(dim, len(ctx.shape(x))), idx)


@register("take_along_dim")
def _take_along_dim(ctx, args):
    """``torch.take_along_dim(x, idx, dim)``: a gather after broadcasting ``x`` and ``idx``
    against each other off ``dim`` (``frontend_common.torch_take_along``); without ``dim``, a
    take from the flattened ``x``. Negative indices count from the end."""
    x, idx = args[0], args[1]
    dim = args[2] if len(args) > 2 else None
    if dim is None:
        size = int(np.prod(ctx.shape(x)))
        return _op.take(_op.reshape(x, (-1,)),
                        _wrap_negative(ctx, _op.reshape(idx, (-1,)), size), axis=0)
    plan = take_along_plan(ctx.shape(x), ctx.shape(idx), int(dim), ctx.fail)
    size = int(ctx.shape(x)[plan.axis])
    x = x if plan.input_to is None else _op.broadcast_to(x, plan.input_to)
    idx = idx if plan.index_to is None else _op.broadcast_to(idx, plan.index_to)
    return _op.gather(x, plan.axis, _wrap_negative(ctx, idx, size))


def _wrap_negative(ctx, idx, size: int):
    """Indices below zero moved up by ``size`` (torch's count from the end)."""
    dt = ctx.dtype(idx)
    return _op.where(_op.less(idx, _expr.const(np.array(0, dt), dt)),
                     _op.add(idx, _expr.const(np.array(size, dt), dt)), idx)


def _take_rows(ctx, x, idx, lead, rest):
    """``x[idx0, idx1, ...]`` over x's leading axes (sizes ``lead``): one ``take`` of the row
    ``sum(idx_j * stride_j)`` from x with those axes flattened, when the sizes are static
    (adv_index has no compute: it ran through numpy, and took the fused ops before it along,
    e.g. CLIP's final layer norm ahead of its ``x[arange(b), ids.argmax(-1)]``)."""
    if not all(isinstance(d, int) for d in list(lead) + list(rest)):
        return _op.adv_index([x] + idx)
    stride, terms = 1, []
    for t, d in zip(idx[::-1], lead[::-1], strict=True):
        terms.append(t if stride == 1 else
                     _op.multiply(t, _expr.const(np.array(stride, "int64"), "int64")))
        stride *= d
    flat = terms[0]
    for t in terms[1:]:
        flat = _op.add(flat, t)
    rows = _op.reshape(x, [stride] + list(rest)) if len(lead) > 1 else x
    return _op.take(rows, flat, axis=0)


@register("index", "_unsafe_index")
def _index(ctx, args):
    """x[i0, i1, ...] with integer index tensors (None = a whole axis), numpy placement."""
    x, indices = args[0], list(args[1])
    s = ctx.shape(x)
    pos = [i for i, t in enumerate(indices) if t is not None]
    if not pos:
        return x
    for i in pos:
        if ctx.dtype(indices[i]) == "bool":
            raise ctx.fail("indexing with a boolean mask gives a data-dependent shape; it is "
                           "not supported (use torch.where or masked_fill)")
    bshape = tuple(np.broadcast_shapes(*[ctx.shape(indices[i]) for i in pos]))
    idx = []
    for i in pos:
        t = indices[i]
        t = t if ctx.dtype(t) == "int64" else _op.cast(t, "int64")
        n = _expr.const(np.array(s[i], "int64"), "int64")
        t = _op.where(_op.less(t, _expr.const(np.array(0, "int64"), "int64")), _op.add(t, n), t)
        idx.append(t if ctx.shape(t) == bshape else _op.broadcast_to(t, bshape))
    rest = [d for d in range(len(s)) if d not in pos]
    moved = x if pos == list(range(len(pos))) else _op.transpose(x, pos + rest)
    out = _take_rows(ctx, moved, idx, [s[i] for i in pos], [s[d] for d in rest])
    adjacent = pos == list(range(pos[0], pos[0] + len(pos)))
    if adjacent and pos[0] > 0:  # the indexed block stays where the indexed axes were
        k, lead = len(bshape), pos[0]
        order = list(range(k, k + lead)) + list(range(k)) + list(range(k + lead, k + len(rest)))
        out = _op.transpose(out, order)
    return out

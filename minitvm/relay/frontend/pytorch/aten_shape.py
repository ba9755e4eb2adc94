"""ATen shape and layout ops onto Relay: views and reshapes, ``flatten`` / ``unflatten``,
transposes and permutes, (un)squeeze, ``expand``, ``cat`` / ``stack``, ``slice`` (a sorted
prefix as a ``topk``), ``select``, ``split`` / ``chunk`` / ``unbind`` / ``narrow``, copies and casts
(``to``), ``tril`` / ``triu``, ``repeat``, ``flip`` / ``rot90`` / ``roll``, ``pixel_shuffle``,
``diagonal`` and its inverses ``diag_embed`` / ``diag``."""

from __future__ import annotations

import numpy as np

from ....frontend_common.torch_promote import tensors_result_dtype
from ....frontend_common.torch_rot90 import rot90_plan
from ... import expr as _expr
from ... import op as _op
from ...op import nn as _nn
from ..common import ImportError_
from .aten import DType, _is_expr, _norm_dim, register


@register("contiguous", "clone", "detach", "detach_", "alias", "lift_fresh", "lift_fresh_copy",
          "dropout", "dropout_", "feature_dropout", "alpha_dropout", "alpha_dropout_",
          "feature_alpha_dropout", "feature_alpha_dropout_", "type_as")
def _identity(ctx, args):
    return args[0]


def _resolve_shape(ctx, x, shape):
    shape = [int(s) for s in shape]
    if -1 in shape:
        total = int(np.prod(ctx.shape(x)))
        known = int(np.prod([s for s in shape if s != -1]))
        shape[shape.index(-1)] = total // known if known else 0
    return shape


@register("view", "reshape", "_unsafe_view", "_reshape_alias")
def _view(ctx, args):
    return _op.reshape(args[0], _resolve_shape(ctx, args[0], args[1]))


@register("view_as", "reshape_as")
def _view_as(ctx, args):
    """``x.view_as(other)``: x in other's shape (Medusa's candidate scores take the tree's)."""
    return _op.reshape(args[0], tuple(int(d) for d in ctx.shape(args[1])))


@register("flatten")
def _flatten(ctx, args):
    x = args[0]
    s = ctx.shape(x)
    nd = len(s)
    start = _norm_dim(args[1] if len(args) > 1 else 0, nd)
    end = _norm_dim(args[2] if len(args) > 2 else -1, nd)
    return _op.reshape(x, s[:start] + (int(np.prod(s[start:end + 1])),) + s[end + 1:])


@register("t")
def _t(ctx, args):
    return args[0] if len(ctx.shape(args[0])) < 2 else _op.transpose(args[0], (1, 0))


@register("transpose", "transpose_")
def _transpose(ctx, args):
    nd = len(ctx.shape(args[0]))
    perm = list(range(nd))
    a, b = _norm_dim(args[1], nd), _norm_dim(args[2], nd)
    perm[a], perm[b] = perm[b], perm[a]
    return _op.transpose(args[0], perm)


@register("mT", "mH", "adjoint")
def _matrix_transpose(ctx, args):
    """``x.mT`` (and, for real tensors, ``mH`` / ``adjoint``): the last two axes swapped."""
    nd = len(ctx.shape(args[0]))
    return _op.transpose(args[0], list(range(nd - 2)) + [nd - 1, nd - 2])


@register("permute")
def _permute(ctx, args):
    nd = len(ctx.shape(args[0]))
    return _op.transpose(args[0], [_norm_dim(d, nd) for d in args[1]])


@register("unsqueeze", "unsqueeze_")
def _unsqueeze(ctx, args):
    nd = len(ctx.shape(args[0]))
    return _op.expand_dims(args[0], _norm_dim(args[1], nd + 1))


@register("squeeze", "squeeze_")
def _squeeze(ctx, args):
    s = ctx.shape(args[0])
    if len(args) < 2 or args[1] is None:
        return _op.squeeze(args[0])
    dims = args[1] if isinstance(args[1], list | tuple) else [args[1]]
    dims = [_norm_dim(d, len(s)) for d in dims if s[_norm_dim(d, len(s))] == 1]
    return _op.squeeze(args[0], axis=dims) if dims else args[0]


@register("expand", "expand_as", "broadcast_to")
def _expand(ctx, args):
    x = args[0]
    s = ctx.shape(x)
    target = list(ctx.shape(args[1])) if ctx.op_name == "expand_as" else list(args[1])
    off = len(target) - len(s)
    target = [s[i - off] if d == -1 else int(d) for i, d in enumerate(target)]
    return x if tuple(target) == s else _op.broadcast_to(x, target)


def _promoted(ctx, tensors) -> list:
    """``tensors`` cast to the dtype torch joins them in (``torch_promote``)."""
    tensors = list(tensors)
    dt = tensors_result_dtype([ctx.dtype(t) for t in tensors])
    return [t if ctx.dtype(t) == dt else _op.cast(t, dt) for t in tensors]


@register("cat", "concat")
def _cat(ctx, args):
    tensors = _promoted(ctx, args[0])
    dim = args[1] if len(args) > 1 else 0
    nd = len(ctx.shape(tensors[0]))
    return _op.concatenate(tensors, _norm_dim(dim, nd))


@register("stack")
def _stack(ctx, args):
    dim = args[1] if len(args) > 1 else 0
    return _op.stack(_promoted(ctx, args[0]), dim)


@register("slice")
def _slice(ctx, args):
    x = args[0]
    s = ctx.shape(x)
    dim = _norm_dim(args[1] if len(args) > 1 else 0, len(s))
    start = args[2] if len(args) > 2 and args[2] is not None else 0
    end = args[3] if len(args) > 3 and args[3] is not None else s[dim]
    step = args[4] if len(args) > 4 and args[4] is not None else 1
    lo, hi, st = slice(start, min(end, 2 ** 62), step).indices(s[dim])
    if (lo, hi, st) == (0, s[dim], 1):
        return x
    if (lo, st) == (0, 1) and 0 < hi < s[dim]:
        prefix = _sorted_prefix(x, dim, hi, len(s))
        if prefix is not None:
            return prefix
    return _op.strided_slice(x, [lo], [max(hi, lo)], [st], axes=[dim])


def _sorted_prefix(x, dim: int, k: int, ndim: int):
    """The first ``k`` along ``dim`` of an ascending whole-axis ``sort`` / ``argsort`` as a
    ``topk`` of the ``k`` smallest (the same order, ties by position, NaN last, without
    ordering the rest): PointNet++'s ball
    query takes ``sort(idx)[..., :nsample]`` of 512 candidates, whose full sort cost 6 ms
    against 0.3 ms for the selection of 16. None when ``x`` is not such a sort."""
    if not (isinstance(x, _expr.Call) and getattr(x.op, "name", None) in ("sort", "argsort")):
        return None
    if int(x.attrs.axis) % ndim != dim or not bool(x.attrs.is_ascend):
        return None  # (a descending sort reverses ties and puts NaN first; topk does neither)
    if x.op.name == "sort":
        return _op.topk(x.args[0], k, dim, "values", True, "int64")
    return _op.topk(x.args[0], k, dim, "indices", True, str(x.attrs.dtype))


@register("select")
def _select(ctx, args):
    x, dim, index = args[:3]
    s = ctx.shape(x)
    dim = _norm_dim(dim, len(s))
    return _op.take(x, _expr.const(np.array(index % s[dim], "int64")), axis=dim)


@register("split", "split_with_sizes", "unsafe_split", "unsafe_split_with_sizes")
def _split(ctx, args):
    x, size = args[0], args[1]
    dim = args[2] if len(args) > 2 else 0
    s = ctx.shape(x)
    dim = _norm_dim(dim, len(s))
    sizes = list(size) if isinstance(size, list | tuple) else \
        [size] * (s[dim] // size) + ([s[dim] % size] if s[dim] % size else [])
    if len(sizes) == 1:
        return (x,)
    return tuple(_op.split(x, [int(v) for v in np.cumsum(sizes)[:-1]], axis=dim))


@register("chunk", "unsafe_chunk")
def _chunk(ctx, args):
    x, chunks = args[0], args[1]
    dim = args[2] if len(args) > 2 else 0
    s = ctx.shape(x)
    size = -(-s[_norm_dim(dim, len(s))] // chunks)
    return _split(ctx, [x, size, dim])


@register("to", "_to_copy", "type")
def _to(ctx, args):
    x = args[0]
    dtype = next((str(a) for a in args[1:] if isinstance(a, DType)), None)
    if not _is_expr(x) or dtype is None or dtype == ctx.dtype(x):
        return x
    if dtype == "bfloat16":
        # (a bfloat16 constant is widened to float32, frontend_common.torch_arrays, but no
        # converter computes in bfloat16 and the llvm back end has none: refused here, where
        # the value would be made, not by a numpy TypeError in the next converter)
        raise ImportError_("a cast to PyTorch dtype bfloat16 is not supported")
    return _op.cast(x, dtype)


@register("tril", "triu")
def _tril(ctx, args):
    x = args[0]
    k = args[1] if len(args) > 1 and args[1] is not None else 0
    s = ctx.shape(x)
    ones = np.ones(s[-2:], dtype=bool)
    mask = np.tril(ones, k) if ctx.op_name == "tril" else np.triu(ones, k)
    dt = ctx.dtype(x)
    return _op.where(_expr.const(mask), x, _expr.const(np.zeros((), dt), dt))


@register("repeat")
def _repeat(ctx, args):
    x, reps = args[0], [int(r) for r in args[1]]
    s = ctx.shape(x)
    if len(reps) > len(s):
        x = _op.reshape(x, (1,) * (len(reps) - len(s)) + s)
    return _op.tile(x, reps)


@register("flip")
def _flip(ctx, args):
    x = args[0]
    nd = len(ctx.shape(x))
    for d in args[1]:
        x = _op.reverse(x, _norm_dim(d, nd))
    return x


@register("fliplr", "flipud")
def _flip_lr_ud(ctx, args):
    """fliplr reverses axis 1, flipud axis 0 (numpy's names)."""
    return _op.reverse(args[0], 1 if ctx.op_name == "fliplr" else 0)


@register("rot90")
def _rot90(ctx, args):
    """``torch.rot90(x, k=1, dims=[0, 1])``: flips and an axis swap
    (``frontend_common.torch_rot90``)."""
    x = args[0]
    k = int(args[1]) if len(args) > 1 and args[1] is not None else 1
    dims = args[2] if len(args) > 2 and args[2] is not None else [0, 1]
    plan = rot90_plan(len(ctx.shape(x)), k, dims, ctx.fail)
    for axis in plan.flips:
        x = _op.reverse(x, axis)
    return x if plan.perm is None else _op.transpose(x, plan.perm)


@register("pixel_shuffle")
def _pixel_shuffle(ctx, args):
    return _nn.depth_to_space(args[0], int(args[1]), mode="CRD")


@register("diagonal")
def _diagonal(ctx, args):
    x = args[0]
    s = ctx.shape(x)
    nd = len(s)
    off = int(args[1]) if len(args) > 1 else 0
    d1 = _norm_dim(args[2] if len(args) > 2 else 0, nd)
    d2 = _norm_dim(args[3] if len(args) > 3 else 1, nd)
    rest = [d for d in range(nd) if d not in (d1, d2)]
    moved = _op.transpose(x, rest + [d1, d2])
    n1, n2 = s[d1], s[d2]
    rows = np.arange(max(0, -off), min(n1, n2 - off))
    flat_idx = (rows * n2 + rows + off).astype("int64")
    flat = _op.reshape(moved, tuple(s[d] for d in rest) + (n1 * n2,))
    return _op.take(flat, _expr.const(flat_idx), axis=len(rest))


def _embed_last(x, s, off: int, dtype: str):
    """(..., n) -> (..., m, m), m = n + |off|: x on the ``off``-th diagonal of the last two
    axes, zeros elsewhere (a ``where`` with a constant mask, so inf / NaN stay off it)."""
    n = s[-1]
    m = n + abs(off)
    pad = [(0, 0)] * (len(s) - 1) + [(0, abs(off))]
    xp = _nn.pad(x, pad) if off else x
    # off >= 0: row i holds x[i] at column i + off; off < 0: column j holds x[j] at row j - off.
    xp = _op.expand_dims(xp, len(s)) if off >= 0 else _op.expand_dims(xp, len(s) - 1)
    mask = np.eye(m, m, off, dtype=bool)
    return _op.where(_expr.const(mask), xp, _expr.const(np.zeros((), dtype), dtype))


@register("diag_embed")
def _diag_embed(ctx, args):
    """``torch.diag_embed(x, offset=0, dim1=-2, dim2=-1)``: the last axis of x becomes the
    ``offset``-th diagonal of a new pair of axes placed at ``dim1`` (rows) and ``dim2``."""
    x = args[0]
    s = list(ctx.shape(x))
    off = int(args[1]) if len(args) > 1 and args[1] is not None else 0
    nd = len(s) + 1
    d1 = _norm_dim(args[2] if len(args) > 2 and args[2] is not None else -2, nd)
    d2 = _norm_dim(args[3] if len(args) > 3 and args[3] is not None else -1, nd)
    if d1 == d2:
        raise ctx.fail(f"diag_embed: dim1 and dim2 are both {d1}")
    out = _embed_last(x, s, off, ctx.dtype(x))
    if (d1, d2) == (nd - 2, nd - 1):
        return out
    # output axis d1 takes the built row axis (nd - 2), d2 the column axis, the rest in order.
    batch = iter(range(nd - 2))
    perm = [nd - 2 if a == d1 else nd - 1 if a == d2 else next(batch) for a in range(nd)]
    return _op.transpose(out, perm)


@register("diag")
def _diag(ctx, args):
    """``torch.diag(x, diagonal=0)``: a 1-D x becomes that diagonal of a square matrix; a 2-D
    x gives its diagonal as a 1-D tensor."""
    x = args[0]
    off = int(args[1]) if len(args) > 1 and args[1] is not None else 0
    s = list(ctx.shape(x))
    if len(s) == 1:
        return _embed_last(x, s, off, ctx.dtype(x))
    if len(s) == 2:
        return _diagonal(ctx, [x, off, 0, 1])
    raise ctx.fail(f"diag takes a 1-D or 2-D tensor, got {len(s)}-D")


@register("unflatten")
def _unflatten(ctx, args):
    x, dim, sizes = args[0], args[1], [int(v) for v in args[2]]
    s = list(ctx.shape(x))
    dim = _norm_dim(dim, len(s))
    return _op.reshape(x, tuple(s[:dim] + sizes + s[dim + 1:]))


@register("narrow")
def _narrow(ctx, args):
    x, dim, start, length = args[:4]
    if _is_expr(start):
        raise ctx.fail("narrow with a tensor start is not supported")
    n = ctx.shape(x)[_norm_dim(dim, len(ctx.shape(x)))]
    start = start % n if start < 0 else start
    return _slice(ctx, [x, dim, start, start + length, 1])


@register("unbind")
def _unbind(ctx, args):
    x = args[0]
    dim = args[1] if len(args) > 1 and args[1] is not None else 0
    s = ctx.shape(x)
    dim = _norm_dim(dim, len(s))
    if s[dim] == 1:
        return (_op.squeeze(x, [dim]),)
    return tuple(_op.squeeze(p, [dim]) for p in _op.split(x, s[dim], axis=dim))


@register("roll")
def _roll(ctx, args):
    x = args[0]
    shifts = args[1] if isinstance(args[1], list | tuple) else [args[1]]
    dims = args[2] if len(args) > 2 and args[2] is not None else []
    dims = dims if isinstance(dims, list | tuple) else [dims]
    s = ctx.shape(x)
    if not dims:  # roll the flattened tensor, then restore the shape
        return _op.reshape(_roll(ctx, [_op.reshape(x, (-1,)), shifts, [0]]), s)
    if len(shifts) != len(dims):
        raise ctx.fail(f"roll got {len(shifts)} shifts for {len(dims)} dims")
    for shift, d in zip(shifts, dims, strict=True):
        d = _norm_dim(d, len(s))
        k = int(shift) % s[d]
        if k:
            tail = _op.strided_slice(x, [s[d] - k], [s[d]], [1], axes=[d])
            head = _op.strided_slice(x, [0], [s[d] - k], [1], axes=[d])
            x = _op.concatenate([tail, head], axis=d)
    return x

"""te computes of the Relax operators ported from TVM's topi after the first set: flip, tile,
stack, one_hot, gather_elements, gather_nd, scatter_elements, scatter_nd, collapse_sum,
meshgrid, quantize/dequantize, bucketize, pixel_shuffle, eye (sort, argsort and topk are
``topi.selection``'s).

Every compute works on possibly symbolic shapes. Data-dependent reads (gathers, scatters) clamp
their index into range before loading, so an index that the selecting condition rejects never
reads out of bounds.
"""

from __future__ import annotations

from .. import te
from ..tir import expr as E
from ..tir import op as tir_op
from .broadcast import ax_names, const_like
from .utils import i64 as _i64
from .utils import pick_piece

__all__ = [
    "flip", "tile", "stack", "one_hot", "gather_elements", "gather_nd", "scatter_elements",
    "scatter_nd", "collapse_sum", "collapse_sum_onto", "meshgrid", "quantize",
    "dequantize", "bucketize", "pixel_shuffle", "eye", "clamp_index", "instance_norm",
    "cross_entropy_with_logits", "nll_loss", "index_tensor", "index_put", "slice_scatter",
    "hamming_window",
    "multinomial_from_uniform", "dynamic_slice_lengths", "dynamic_strided_slice",
]

_REDUCTIONS = ("update", "add", "mul", "min", "max")


def _zero() -> E.IntImm:
    return E.IntImm("int64", 0)


def _compute(shape, body, name: str):
    shape = [_i64(s) for s in shape]
    if not shape:
        return te.compute((), lambda: body(), name=name)
    return te.compute(shape, body, name=name, varargs_names=ax_names(len(shape)))


def _rvar(extent, name: str):
    return te.reduce_axis((_zero(), _i64(extent)), name=name)


def clamp_index(j, n) -> E.PrimExpr:
    """``j`` (negative counts from the end) clamped into ``[0, n)``, as int64. A computed ``j``
    is let-bound: the wrap reads it three times, so a chain of gathers each indexed by the
    last one's output (a Viterbi back-trace), inlined into one kernel, would otherwise grow
    as 3 ** depth."""
    j = _i64(j)
    n = _i64(n)
    if isinstance(j, E.Var | E.IntImm):
        return _wrap_clamp(j, n)
    bound = E.Var("gather_index", "int64")
    return E.Let(bound, j, _wrap_clamp(bound, n))


def _wrap_clamp(j, n) -> E.PrimExpr:
    j = E.Select(j < _zero(), j + n, j)
    return E.Max(E.Min(j, n - E.IntImm("int64", 1)), _zero())


def _wrap(j, n) -> E.PrimExpr:
    """``j`` with a negative value counted from the end (no clamping)."""
    j = _i64(j)
    return E.Select(j < _zero(), j + _i64(n), j)


def _mul_dim(d, r: int) -> E.PrimExpr:
    """``d * r`` folded when ``d`` is a constant (a shape dim as TVM's operators build it)."""
    d = _i64(d)
    if isinstance(d, E.IntImm):
        return E.IntImm("int64", d.value * r)
    return d if r == 1 else d * E.IntImm("int64", r)


def _all(conds):
    out = None
    for c in conds:
        out = c if out is None else E.And(out, c)
    return out if out is not None else E.IntImm("bool", 1)


def flip(x, axis: int):
    """``x`` reversed along ``axis`` (``topi.flip``)."""
    nd = len(x.shape)
    axis %= nd
    one = E.IntImm("int64", 1)
    return _compute(x.shape, lambda *i: x[tuple(
        x.shape[d] - one - i[d] if d == axis else i[d] for d in range(nd))], "T_reverse_sequence")


def tile(x, reps):
    """``numpy.tile``: ``x`` repeated ``reps[k]`` times along each dim (ranks aligned right)."""
    reps = [int(r) for r in reps]
    nd = max(len(x.shape), len(reps))
    xs = [E.IntImm("int64", 1)] * (nd - len(x.shape)) + list(x.shape)
    reps = [1] * (nd - len(reps)) + reps
    shape = [_mul_dim(xs[d], reps[d]) for d in range(nd)]
    lead = nd - len(x.shape)

    def body(*i):
        idx = [i[d] if reps[d] == 1 else E.FloorMod(i[d], xs[d]) for d in range(lead, nd)]
        return x[tuple(idx)] if idx else x[()]

    return _compute(shape, body, "T_tile")


def stack(xs, axis: int):
    """The tensors ``xs`` (one shape) stacked along a new dim ``axis``. The element picks its
    input by ``pick_piece``'s ``if_then_else`` tree, as Relay's ``stack``: with the new dim
    outside the vector loop that is a branch and one load, where a ``Select`` chain loaded
    every input (a transposed conv's phases interleaved by two stacks read 4 inputs for 1)."""
    nd = len(xs[0].shape) + 1
    axis %= nd
    shape = list(xs[0].shape[:axis]) + [E.IntImm("int64", len(xs))] + list(xs[0].shape[axis:])

    def body(*i):
        rest = tuple(i[:axis]) + tuple(i[axis + 1:])
        starts = [E.IntImm("int64", k) for k in range(len(xs))]
        return pick_piece(i[axis], starts, lambda k: xs[k][rest])

    return _compute(shape, body, "T_stack")


def one_hot(indices, on_value, off_value, depth: int, axis: int, dtype: str):
    """``on_value`` where the new dim ``axis`` equals the index, ``off_value`` elsewhere (an
    index outside ``[0, depth)`` gives a row of ``off_value``, as TVM's topi)."""
    nd = len(indices.shape) + 1
    axis %= nd
    shape = list(indices.shape[:axis]) + [E.IntImm("int64", depth)] + \
        list(indices.shape[axis:])
    on = on_value if on_value.dtype == dtype else E.Cast(dtype, on_value)
    off = off_value if off_value.dtype == dtype else E.Cast(dtype, off_value)

    def body(*i):
        j = indices[tuple(i[:axis]) + tuple(i[axis + 1:])]  # out of range: all off_value
        return E.Select(E.EQ(_i64(j), i[axis]), on, off)

    return _compute(shape, body, "T_one_hot")


def gather_elements(x, indices, axis: int):
    """``out[i] = x[i with dim axis replaced by indices[i]]`` (``numpy.take_along_axis``)."""
    nd = len(x.shape)
    axis %= nd

    def body(*i):
        j = clamp_index(indices[i], x.shape[axis])
        return x[tuple(j if d == axis else i[d] for d in range(nd))]

    return _compute(indices.shape, body, "T_gather_elements")


def gather_nd(x, indices, batch_dims: int = 0):
    """``out[b, y, r] = x[b, indices[b, y, :], r]`` with the index tuple on the LAST dim of
    ``indices`` (ONNX's GatherND, TVM's Relax convention) and ``batch_dims`` leading batch
    dims shared by both."""
    m = int(indices.shape[-1].value)
    nb = int(batch_dims)
    ishape = list(indices.shape[:-1])
    shape = ishape + list(x.shape[nb + m:])

    def body(*i):
        lead = list(i[:len(ishape)])
        src = list(i[:nb])
        for k in range(m):
            src.append(clamp_index(indices[tuple(lead + [E.IntImm("int64", k)])],
                                   x.shape[nb + k]))
        src += list(i[len(ishape):])
        return x[tuple(src)]

    return _compute(shape, body, "T_gather_nd")


def _combine(reduction: str, old, new):
    if reduction == "update":
        return new
    if reduction == "add":
        return old + new
    if reduction == "mul":
        return old * new
    if reduction == "min":
        return E.Min(old, new)
    return E.Max(old, new)


def _scatter(x, n_upd_dims, upd_extents, match, load_update, reduction: str, name: str,
             match_dims: int | None = None):
    """Shared body of the scatters: for output element ``i``, the update positions ``y``
    (``n_upd_dims`` reduce dims of ``upd_extents``) with ``match(i, y)`` are combined into
    ``x[i]`` in row-major order of ``y``; with ``update`` the last match wins. ``match`` reads
    only the first ``match_dims`` dims of ``i`` (all when None), so ``update`` searches for the
    last match once per such prefix rather than once per element."""
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{name}: reduction must be one of {_REDUCTIONS}, got {reduction!r}")
    def flat(ys):
        f = _zero()
        for y, n in zip(ys, upd_extents):
            f = f * _i64(n) + y
        return f

    # the last matching position (row-major); -1 when none
    def last_body(*i):
        ys = [_rvar(n, f"r{k}") for k, n in enumerate(upd_extents)]
        return te.max(E.Select(match(i, [y.var for y in ys]), flat([y.var for y in ys]),
                               E.IntImm("int64", -1)), axis=ys)

    if reduction == "update":
        nm = len(x.shape) if match_dims is None else int(match_dims)
        last_at = _compute(x.shape[:nm], last_body, f"{name}_last")

        def body(*i):
            last = last_at[tuple(i[:nm])]
            pos = E.Max(last, _zero())
            ys, rest = [], pos
            for n in reversed(upd_extents[1:]):
                ys.append(E.FloorMod(rest, _i64(n)))
                rest = E.FloorDiv(rest, _i64(n))
            ys.append(rest)
            return E.Select(last >= _zero(), load_update(i, ys[::-1]), x[i])

        return _compute(x.shape, body, name)
    # the commutative reductions: a te reduction over the update positions that match
    ident = {"add": const_like(0, x.dtype), "mul": const_like(1, x.dtype),
             "min": tir_op.max_value(x.dtype), "max": tir_op.min_value(x.dtype)}[reduction]
    if reduction == "mul":
        red = te.comm_reducer(lambda a, b: a * b, lambda t: const_like(1, t), name="prod")
    else:
        red = {"add": te.sum, "min": te.min, "max": te.max}[reduction]

    def acc_body(*i):
        ys = [_rvar(n, f"r{k}") for k, n in enumerate(upd_extents)]
        vs = [y.var for y in ys]
        return red(E.Select(match(i, vs), load_update(i, vs), ident), axis=ys)

    acc = _compute(x.shape, acc_body, f"{name}_acc")
    return _compute(x.shape, lambda *i: _combine(reduction, x[i], acc[i]), name)


def scatter_elements(x, indices, updates, axis: int, reduction: str = "update"):
    """``out[... indices[j] ...] (op)= updates[j]`` along ``axis`` (ONNX ScatterElements)."""
    nd = len(x.shape)
    axis %= nd
    ext = list(indices.shape)

    def match(i, ys):
        conds = [E.EQ(_wrap(indices[tuple(_clamped(ys, ext))], x.shape[axis]), i[axis])]
        for d in range(nd):
            if d != axis:
                conds.append(E.EQ(ys[d], i[d]))
        return _all(conds)

    return _scatter(x, nd, ext, match, lambda i, ys: updates[tuple(_clamped(ys, ext))],
                    reduction, "T_scatter_elements")


def _clamped(ys, ext):
    return [E.Min(_i64(y), _i64(n) - E.IntImm("int64", 1)) for y, n in zip(ys, ext)]


def scatter_nd(x, indices, updates, reduction: str = "update"):
    """``out[indices[y, :]] (op)= updates[y]`` with the index tuple on the last dim of
    ``indices`` (ONNX ScatterND)."""
    m = int(indices.shape[-1].value)
    ext = list(indices.shape[:-1])
    ny = len(ext)

    def match(i, ys):
        ys = _clamped(ys, ext)
        return _all(E.EQ(_wrap(indices[tuple(ys + [E.IntImm("int64", k)])], x.shape[k]), i[k])
                    for k in range(m))

    def load(i, ys):
        return updates[tuple(_clamped(ys, ext) + list(i[m:]))]

    return _scatter(x, ny, ext, match, load, reduction, "T_scatter_nd", match_dims=m)


def collapse_sum_onto(x, target_shape):
    """``collapse_sum`` where target sizes may be symbolic: an aligned axis of input size
    ``n`` and target size ``m`` is summed over ``n - m + 1`` taps from the output index (one
    tap where ``m == n``, the whole axis from 0 where ``m == 1``; the type relation states
    ``m * (n - m + 1) == n``, i.e. ``m`` is 1 or ``n``, checked at each call). Static pairs
    reduce as ``collapse_sum`` does; the input's leading axes are summed whole."""
    xs = list(x.shape)
    lead = len(xs) - len(target_shape)
    red = {d: _rvar(xs[d], f"k{d}") for d in range(lead)}
    spans = {}
    for k, m in enumerate(target_shape):
        n = xs[lead + k]
        if isinstance(m, E.IntImm) and isinstance(n, E.IntImm):
            if m.value == 1 and n.value != 1:
                red[lead + k] = _rvar(n, f"k{lead + k}")
        else:
            spans[lead + k] = red[lead + k] = _rvar(_i64(n) - _i64(m) + _i64(1), f"k{lead + k}")
    if not red:
        return _compute(target_shape, lambda *i: x[tuple(i)], "T_collapse_sum")

    def body(*i):
        idx = []
        for d in range(len(xs)):
            if d in spans:
                idx.append(_i64(i[d - lead]) + spans[d].var)
            else:
                idx.append(red[d].var if d in red else i[d - lead])
        return te.sum(x[tuple(idx)], axis=list(red.values()))

    return _compute(target_shape, body, "T_collapse_sum")


def collapse_sum(x, target_shape):
    """The sum of ``x`` down to ``target_shape`` (the inverse of broadcasting it there)."""
    nd, nt = len(x.shape), len(target_shape)
    lead = nd - nt
    red_dims = list(range(lead)) + [lead + k for k in range(nt)
                                    if isinstance(target_shape[k], E.IntImm)
                                    and target_shape[k].value == 1
                                    and not (isinstance(x.shape[lead + k], E.IntImm)
                                             and x.shape[lead + k].value == 1)]
    if not red_dims:
        return _compute(target_shape, lambda *i: x[tuple(i)], "T_collapse_sum")

    def body(*i):
        rv = {d: _rvar(x.shape[d], f"k{d}") for d in red_dims}
        idx = [rv[d].var if d in rv else i[d - lead] for d in range(nd)]
        return te.sum(x[tuple(idx)], axis=[rv[d] for d in red_dims])

    return _compute(target_shape, body, "T_collapse_sum")


def meshgrid(xs, indexing: str = "ij"):
    """``numpy.meshgrid`` of 1-D tensors (``xy`` swaps the first two output dims)."""
    shape = [t.shape[0] if len(t.shape) else E.IntImm("int64", 1) for t in xs]
    if indexing == "xy" and len(xs) >= 2:
        shape[0], shape[1] = shape[1], shape[0]
    outs = []
    for k, t in enumerate(xs):
        d = k
        if indexing == "xy" and len(xs) >= 2 and k < 2:
            d = 1 - k
        outs.append(_compute(shape, lambda *i, t=t, d=d: t[(i[d],)] if len(t.shape) else t[()],
                             "T_meshgrid"))
    return outs


def _per_axis(t, i, axis):
    """A scale / zero point: a scalar, or a 1-D tensor read at ``i[axis]``."""
    if isinstance(t, E.PrimExpr):
        return t
    if len(t.shape) == 0:
        return t[()]
    if isinstance(t.shape[0], E.IntImm) and t.shape[0].value == 1:
        return t[(_zero(),)]
    return t[(i[axis],)]


def quantize(x, scale, zero_point, axis: int, out_dtype: str):
    """``clip(round(x / scale) + zero_point)`` into ``out_dtype``'s range (round half even)."""
    axis %= max(len(x.shape), 1)
    lo, hi = tir_op.min_value(out_dtype), tir_op.max_value(out_dtype)

    def body(*i):
        s = _per_axis(scale, i, axis)
        z = _per_axis(zero_point, i, axis)
        v = tir_op.nearbyint(x[i] / (s if s.dtype == x.dtype else E.Cast(x.dtype, s)))
        v = v + E.Cast(x.dtype, z)
        v = E.Min(E.Max(v, E.Cast(x.dtype, lo)), E.Cast(x.dtype, hi))
        return E.Cast(out_dtype, v)

    return _compute(x.shape, body, "quantized")


def dequantize(x, scale, zero_point, axis: int, out_dtype: str):
    """``(x - zero_point) * scale`` in ``out_dtype`` (the difference taken in int32)."""
    axis %= max(len(x.shape), 1)

    def body(*i):
        s = _per_axis(scale, i, axis)
        z = _per_axis(zero_point, i, axis)
        d = E.Cast("int32", x[i]) - E.Cast("int32", z)
        return E.Cast(out_dtype, E.Cast("float32", d) * (s if s.dtype == "float32" else
                                                          E.Cast("float32", s)))

    return _compute(x.shape, body, "dequantized")


def bucketize(x, boundaries, right: bool, dtype: str):
    """The bucket of each element of ``x`` among sorted ``boundaries`` (torch.bucketize)."""
    n = boundaries.shape[0]

    def body(*i):
        r = _rvar(n, "k")
        b = boundaries[(r.var,)]
        cond = b <= x[i] if right else b < x[i]
        return te.sum(E.Select(cond, const_like(1, dtype), const_like(0, dtype)), axis=r)

    return _compute(x.shape, body, "T_bucketize")


def pixel_shuffle(x, r: int):
    """Depth to space on the last two dims: ``(.., C*r*r, H, W)`` -> ``(.., C, H*r, W*r)``."""
    nd = len(x.shape)
    rr = E.IntImm("int64", r)
    c = x.shape[nd - 3]
    shape = list(x.shape[:nd - 3]) + [E.FloorDiv(c, E.IntImm("int64", r * r))
                                       if not isinstance(c, E.IntImm)
                                       else E.IntImm("int64", c.value // (r * r)),
                                       _mul_dim(x.shape[nd - 2], r), _mul_dim(x.shape[nd - 1], r)]

    def body(*i):
        ch, h, w = i[nd - 3], i[nd - 2], i[nd - 1]
        src_c = ch * E.IntImm("int64", r * r) + E.FloorMod(h, rr) * rr + E.FloorMod(w, rr)
        return x[tuple(list(i[:nd - 3]) + [src_c, E.FloorDiv(h, rr), E.FloorDiv(w, rr)])]

    return _compute(shape, body, "T_pixel_shuffle")


def eye(n, m, k, dtype: str):
    """Ones on the ``k``-th diagonal of an ``n x m`` matrix, zeros elsewhere."""
    kk = _i64(k)
    return _compute([n, m], lambda i, j: E.Select(E.EQ(j - i, kk), const_like(1, dtype),
                                                  const_like(0, dtype)), "T_eye")


def instance_norm(x, gamma, beta, channel_axis: int, axes, epsilon: float, center: bool = True,
                  scale: bool = True):
    """``(x - mean) / sqrt(var + eps) * gamma[c] + beta[c]`` with the moments over ``axes`` of
    each sample and channel (any channel count, symbolic included)."""
    nd = len(x.shape)
    axes = sorted({int(a) % nd for a in axes})
    ch = int(channel_axis) % nd
    red_shape = [E.IntImm("int64", 1) if d in axes else x.shape[d] for d in range(nd)]
    count = None
    for a in axes:
        count = _i64(x.shape[a]) if count is None else count * _i64(x.shape[a])
    dt = x.dtype
    cnt = E.Cast(dt, count if count is not None else E.IntImm("int64", 1))

    def src(i, rv):
        return tuple(rv[d].var if d in axes else i[d] for d in range(nd))

    def mean_body(*i):
        rv = {a: _rvar(x.shape[a], f"k{a}") for a in axes}
        return te.sum(x[src(i, rv)], axis=[rv[a] for a in axes])

    total = _compute(red_shape, mean_body, "T_instance_norm_sum")

    def at_red(t, i):
        return t[tuple(_zero() if d in axes else i[d] for d in range(nd))]

    def var_body(*i):
        rv = {a: _rvar(x.shape[a], f"k{a}") for a in axes}
        dv = x[src(i, rv)] - total[i] / cnt
        return te.sum(dv * dv, axis=[rv[a] for a in axes])

    sq = _compute(red_shape, var_body, "T_instance_norm_var")

    def body(*i):
        mean = at_red(total, i) / cnt
        var = at_red(sq, i) / cnt
        v = (x[i] - mean) * tir_op.rsqrt(var + E.FloatImm(dt, float(epsilon)))
        if scale:
            v = v * gamma[(i[ch],)]
        if center:
            v = v + beta[(i[ch],)]
        return v

    return _compute(x.shape, body, "T_instance_norm")


def cross_entropy_with_logits(pred, labels):
    """``-sum(pred * labels) / batch`` as a 0-D tensor (batch 1 for 1-D inputs)."""
    nd = len(pred.shape)

    def total():
        rv = [_rvar(pred.shape[d], f"k{d}") for d in range(nd)]
        idx = tuple(r.var for r in rv)
        return te.sum(pred[idx] * labels[idx], axis=rv)

    s = _compute([], total, "T_cross_entropy_sum")
    batch = E.Cast(pred.dtype, _i64(pred.shape[0])) if nd == 2 else E.FloatImm(pred.dtype, 1.0)
    return _compute([], lambda: -s[()] / batch, "T_cross_entropy")


def nll_loss(pred, targets, weights, reduction: str, ignore_index: int):
    """Negative log likelihood over class dim 1 (dim 0 for 1-D predictions)."""
    nd = len(pred.shape)
    dt = pred.dtype
    zero = const_like(0, dt)
    ign = E.IntImm("int64", int(ignore_index))

    def parts(t_idx):
        t = _i64(targets[tuple(t_idx)] if t_idx else targets[()])
        ncls = pred.shape[0] if nd == 1 else pred.shape[1]
        tc = clamp_index(t, ncls)
        w = weights[(tc,)] if weights is not None else const_like(1, dt)
        keep = E.NE(t, ign)
        if nd == 1:
            p = pred[(tc,)]
        else:
            p = pred[tuple([t_idx[0], tc] + list(t_idx[1:]))]
        return E.Select(keep, -w * p, zero), E.Select(keep, w, zero)

    if reduction == "none":
        return _compute(targets.shape, lambda *i: parts(list(i))[0], "T_nll_loss")
    tshape = list(targets.shape)

    def red(which):
        def body():
            rv = [_rvar(d, f"k{k}") for k, d in enumerate(tshape)]
            v = parts([r.var for r in rv])[which]
            return te.sum(v, axis=rv) if rv else v

        return body

    loss = _compute([], red(0), "T_nll_loss_sum")
    if reduction == "sum":
        return _compute([], lambda: loss[()], "T_nll_loss")
    wsum = _compute([], red(1), "T_nll_loss_weight")
    return _compute([], lambda: loss[()] / wsum[()], "T_nll_loss")


def _bcast_read(t, ys, out_nd):
    """``t`` read at position ``ys`` of a broadcast shape of rank ``out_nd`` (numpy rules)."""
    nd = len(t.shape)
    idx = []
    for k in range(nd):
        y = ys[out_nd - nd + k]
        d = t.shape[k]
        idx.append(_zero() if isinstance(d, E.IntImm) and d.value == 1 else y)
    return t[tuple(idx)] if idx else t[()]


def index_tensor(x, indices, bshape):
    """numpy advanced indexing ``x[i0, i1, ...]`` with index tensors broadcast to ``bshape``
    applied to the leading dims (negative indices count from the end)."""
    k = len(indices)
    nb = len(bshape)
    shape = list(bshape) + list(x.shape[k:])

    def body(*i):
        ys = list(i[:nb])
        src = [clamp_index(_bcast_read(t, ys, nb), x.shape[d]) for d, t in enumerate(indices)]
        return x[tuple(src + list(i[nb:]))]

    return _compute(shape, body, "T_index_tensor")


def index_put(x, indices, values, bshape, accumulate: bool):
    """``x`` with ``x[i0, i1, ...] = values`` (``+=`` when ``accumulate``), the index tensors
    broadcast to ``bshape`` and ``values`` broadcast to ``bshape + x.shape[k:]``."""
    k = len(indices)
    nb = len(bshape)
    vnd = nb + len(x.shape) - k

    def match(i, ys):
        ys = _clamped(ys, bshape)
        return _all(E.EQ(_wrap(_bcast_read(t, ys, nb), x.shape[d]), i[d])
                    for d, t in enumerate(indices))

    def load(i, ys):
        full = _clamped(ys, bshape) + list(i[k:])
        return _bcast_read(values, full, vnd)

    return _scatter(x, nb, list(bshape), match, load, "add" if accumulate else "update",
                    "T_index_put", match_dims=k)


def slice_scatter(x, src, start, step: int, axis: int):
    """``x`` with ``x[.., start::step, ..][:len] = src`` along ``axis``."""
    nd = len(x.shape)
    axis %= nd
    st = _i64(start)
    stp = E.IntImm("int64", int(step))
    length = src.shape[axis]

    def body(*i):
        off = i[axis] - st
        q = E.FloorDiv(off, stp)
        hit = _all([off >= _zero(), E.EQ(E.FloorMod(off, stp), _zero()), q < _i64(length)])
        qc = E.Max(E.Min(q, _i64(length) - E.IntImm("int64", 1)), _zero())
        s = src[tuple(qc if d == axis else i[d] for d in range(nd))]
        return E.Select(hit, s, x[i])

    return _compute(x.shape, body, "T_slice_scatter")


def hamming_window(size, periodic, alpha, beta, dtype: str):
    """``alpha - beta * cos(2 pi k / N)`` with ``N = size`` (periodic) or ``size - 1``."""
    import math

    n = _i64(size)
    per = periodic if isinstance(periodic, E.PrimExpr) else E.IntImm("int64", int(periodic))
    denom = E.Select(E.NE(_i64(per), _zero()), n, n - E.IntImm("int64", 1))

    def body(k):
        dd = E.Cast("float64", E.Max(denom, E.IntImm("int64", 1)))
        ang = E.FloatImm("float64", 2 * math.pi) * E.Cast("float64", k) / dd
        a = E.Cast("float64", alpha) if alpha.dtype != "float64" else alpha
        b = E.Cast("float64", beta) if beta.dtype != "float64" else beta
        v = E.Select(E.EQ(n, E.IntImm("int64", 1)), E.FloatImm("float64", 1.0),
                     a - b * tir_op.cos(ang))
        return E.Cast(dtype, v)

    return _compute([n], body, "T_hamming_window")


def multinomial_from_uniform(prob, uniform, sample_indices, dtype: str):
    """For each sample ``j``: the first class whose cumulative probability in row
    ``sample_indices[j]`` of ``prob`` exceeds ``uniform[j]`` (the last class at most)."""
    from .scan import cumsum

    cum = cumsum(prob, axis=1)
    vocab = prob.shape[1]

    def body(j, z):
        r = _rvar(vocab, "k")
        row = clamp_index(sample_indices[(j, z)], prob.shape[0])
        cnt = te.sum(E.Select(cum[(row, r.var)] <= uniform[(j, z)], E.IntImm("int64", 1),
                              _zero()), axis=r)
        return cnt

    count = _compute(uniform.shape, body, "T_multinomial_count")
    last = _i64(vocab) - E.IntImm("int64", 1)
    return _compute(uniform.shape, lambda j, z: E.Cast(dtype, E.Min(count[(j, z)], last))
                    if dtype != "int64" else E.Min(count[(j, z)], last), "T_multinomial")


def _canon_bound(v, n, s):
    """Slice bound ``v`` on an axis of length ``n`` with stride sign of ``s`` (numpy rules)."""
    v, n = _i64(v), _i64(n)
    one = E.IntImm("int64", 1)
    w = E.Select(v < _zero(), v + n, v)
    pos = E.Max(E.Min(w, n), _zero())
    neg = E.Max(E.Min(w, n - one), -one)
    return E.Select(s > _zero(), pos, neg)


def dynamic_slice_lengths(x, begin, end, strides):
    """The result length on each axis of ``x[begin:end:strides]`` with the bounds in tensors."""
    nd = len(x.shape)
    one = E.IntImm("int64", 1)

    def body(d):
        length = _zero()
        for k in range(nd - 1, -1, -1):
            n = x.shape[k]
            kk = E.IntImm("int64", k)
            s = _i64(strides[(kk,)])
            b = _canon_bound(begin[(kk,)], n, s)
            e = _canon_bound(end[(kk,)], n, s)
            span = E.Select(s > _zero(), e - b, b - e)
            step = E.Select(s > _zero(), s, -s)
            ln = E.Max(E.FloorDiv(span + step - one, step), _zero())
            length = ln if k == nd - 1 else E.Select(E.EQ(d, kk), ln, length)
        return length

    return _compute([E.IntImm("int64", nd)], body, "T_dynamic_slice_shape")


def dynamic_strided_slice(x, begin, strides, out_shape):
    """``x[begin::strides]`` cut to ``out_shape`` (the lengths computed at run time)."""
    nd = len(x.shape)

    def body(*i):
        idx = []
        for k in range(nd):
            kk = E.IntImm("int64", k)
            s = _i64(strides[(kk,)])
            b = _canon_bound(begin[(kk,)], x.shape[k], s)
            idx.append(b + i[k] * s)
        return x[tuple(idx)]

    return _compute(out_shape, body, "T_dynamic_strided_slice")

"""Shape and data-movement ONNX ops: Shape, Reshape, Transpose, Concat, Split, Slice, Gather,
(Un)Squeeze, Flatten, Expand, Where, Constant(OfShape), Range, Size, CumSum, Einsum.

Each folds when its inputs are known at import time (constants or symbolic shape values)."""

from __future__ import annotations

import numpy as np

from .... import tir
from ....frontend_common import onnx_model as _om
from ....frontend_common.onnx_resize import FUSED_TAPS, axis_taps, resize2d_params, resize_plan
from ....frontend_common.onnx_slice import onnx_slice
from ....ir.prim_expr import PrimExpr
from ....tir import Var
from ... import op as _op
from ...expr import const
from ...struct_info import TensorStructInfo
from .context import Context, normalize_known, onnx_dtype, register
from .run_time_resize import run_time_resize


def _axes(ctx: Context, ins, attrs, index: int, what: str) -> list[int] | None:
    """Axes from the attribute (before opset 13) or from input ``index`` (opset 13 on)."""
    if "axes" in attrs:
        return [int(a) for a in attrs["axes"]]
    if len(ins) > index and ins[index] is not None:
        return [int(a) for a in ctx.ints(ins[index], what)]
    return None


def _obj(values) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = list(values)
    return out


@register("Constant")
def _constant(ctx: Context, ins, attrs):
    for key in ("value", "value_float", "value_floats", "value_int", "value_ints"):
        if key in attrs:
            v = attrs[key]
            if key == "value":
                return np.array(v)
            dtype = "float32" if "float" in key else "int64"
            return np.array(v, dtype=dtype)
    raise ctx.fail(f"unsupported Constant attributes {sorted(attrs)}")


@register("Shape")
def _shape(ctx: Context, ins, attrs):
    dims = ctx.shape(ins[0])
    n = len(dims)
    start, end = int(attrs.get("start", 0)), attrs.get("end")
    dims = dims[start:(int(end) if end is not None else n)]
    return normalize_known(_obj(dims))


@register("Size")
def _size(ctx: Context, ins, attrs):
    out = 1
    for d in ctx.shape(ins[0]):
        out = out * d
    return normalize_known(np.array(ctx.simplify(out), dtype=object))


@register("Reshape")
def _reshape(ctx: Context, ins, attrs):
    shape = ctx.ints(ins[1], "Reshape's shape") if ctx.opset >= 5 else list(attrs["shape"])
    in_dims = ctx.shape(ins[0])
    if not attrs.get("allowzero", 0):
        shape = [in_dims[i] if isinstance(s, int) and s == 0 else s for i, s in enumerate(shape)]
    k = ctx.known(ins[0])
    if k is not None and all(isinstance(s, int) for s in shape):
        return normalize_known(k.reshape(shape))
    return ctx.emit(_op.reshape(ctx.expr(ins[0]), ctx.shape_expr(shape)))


@register("Transpose")
def _transpose(ctx: Context, ins, attrs):
    perm = attrs.get("perm")
    k = ctx.known(ins[0])
    if k is not None:
        return np.transpose(k, perm)
    x = ctx.expr(ins[0])
    return ctx.emit(_op.permute_dims(x, [int(p) for p in perm] if perm is not None else None))


@register("Concat")
def _concat(ctx: Context, ins, attrs):
    axis = int(attrs["axis"])
    ins = [v for v in ins if v is not None]
    known = [ctx.known(v) for v in ins]
    if all(k is not None for k in known):
        if any(k.dtype == object for k in known):
            known = [k.astype(object) for k in known]
        return normalize_known(np.concatenate(known, axis=axis))
    return ctx.emit(_op.concat([ctx.expr(v) for v in ins], axis))


@register("Split")
def _split(ctx: Context, ins, attrs):
    x = ctx.expr(ins[0])
    axis = int(attrs.get("axis", 0))
    dim = ctx.shape(x)[axis]
    if "split" in attrs:
        sizes = [int(s) for s in attrs["split"]]
    elif len(ins) > 1 and ins[1] is not None:
        sizes = ctx.ints(ins[1], "Split's split")  # (symbolic: from a dynamic batch)
    else:
        n = int(attrs.get("num_outputs", len(ctx.node.output)))
        if "num_outputs" not in attrs:  # (an even split; num_outputs lets the last be smaller)
            ctx.require(_eq(tir.floormod(dim, n) if isinstance(dim, PrimExpr) else dim % n,
                            0), f"the size {{}} of axis {axis} does not split evenly "
                        f"into {n} outputs", [dim])
        if not isinstance(dim, int):
            return _tuple_fields(ctx, ctx.emit(_op.split(x, n, axis)), n)
        chunk = -(-dim // n)
        sizes = [chunk] * (n - 1) + [dim - chunk * (n - 1)]
    # as ONNX Runtime: one size per output, none negative, adding up to the axis
    shown = str(sizes).replace("{", "{{").replace("}", "}}")
    ctx.require(len(sizes) == len(ctx.node.output),
                f"the split sizes {shown} must be {len(ctx.node.output)} values")
    for s in sizes:
        ctx.require(s >= 0 if isinstance(s, PrimExpr) else int(s) >= 0,
                    f"the split sizes {shown} must be values >= 0" +
                    (" ({} here)" if isinstance(s, PrimExpr) else ""),
                    [s] if isinstance(s, PrimExpr) else [])
    total = ctx.simplify(sum(sizes))
    ctx.require(_eq(dim, total), f"the split sizes {shown} add up to {{}}, not to {{}}, the "
                f"size of axis {axis}", [total, dim])
    if not isinstance(dim, int) and isinstance(total, int):  # (the parts stay static)
        shape = ctx.shape(x)
        shape[axis] = total
        x = ctx.bb.match_cast(x, TensorStructInfo(shape, ctx.dtype(x)))
    cuts, acc = [], 0
    for s in sizes[:-1]:
        acc += s
        cuts.append(acc)
    return _tuple_fields(ctx, ctx.emit(_op.split(x, cuts, axis)), len(sizes))


def _eq(a, b):
    """``a == b`` of two sizes, a ``tir`` condition where one is symbolic."""
    return tir.EQ(a, b) if isinstance(a, PrimExpr) or isinstance(b, PrimExpr) else a == b


def _require_sizes(ctx: Context, dims: list, message: str) -> None:
    """Check (at import, or at run time for symbolic ones) that ``dims`` are all >= 0;
    ``message``'s ``{}`` shows them."""
    shown = "[" + ", ".join(str(d) for d in dims) + "]"
    for d in dims:
        ctx.require(d >= 0 if isinstance(d, PrimExpr) else int(d) >= 0,
                    message.format(shown.replace("{", "{{").replace("}", "}}"))
                    + (" ({} here)" if isinstance(d, PrimExpr) else ""),
                    [d] if isinstance(d, PrimExpr) else [])


def _tuple_fields(ctx: Context, tup, n: int) -> list:
    from ...expr import TupleGetItem

    return [ctx.emit(TupleGetItem(tup, i)) for i in range(n)]


_INT_MAX = 2**62


@register("Slice")
def _slice(ctx: Context, ins, attrs):
    if ctx.opset < 10:
        starts, ends = list(attrs["starts"]), list(attrs["ends"])
        axes, steps = attrs.get("axes"), None
    else:
        if ctx.known(ins[1]) is None or ctx.known(ins[2]) is None or \
                (len(ins) > 3 and ins[3] is not None and ctx.known(ins[3]) is None):
            return _slice_at_run_time(ctx, ins)
        starts = ctx.ints(ins[1], "Slice's starts")
        ends = ctx.ints(ins[2], "Slice's ends")
        axes = ctx.ints(ins[3], "Slice's axes") if len(ins) > 3 and ins[3] is not None \
            else None
        steps = ctx.ints(ins[4], "Slice's steps") if len(ins) > 4 and ins[4] is not None \
            else None
    ndim = ctx.ndim(ins[0])
    axes = _om.axes_attr(axes if axes is not None else range(len(starts)), ndim, "Slice's axis")
    if steps is not None and any(isinstance(s, PrimExpr) for s in steps):
        return _slice_by_symbolic_steps(ctx, ctx.expr(ins[0]), axes, starts, ends, steps)
    steps = [int(s) for s in (steps if steps is not None else [1] * len(starts))]
    k = ctx.known(ins[0])
    if k is not None and all(isinstance(v, int) for v in starts + ends):
        index = [slice(None)] * ndim
        for a, b, e, s in zip(axes, starts, ends, steps, strict=True):
            index[a] = onnx_slice(b, e, s, k.shape[a])
        return normalize_known(k[tuple(index)])
    dims = ctx.shape(ins[0])
    begin, end = [], []
    for a, b, e, s in zip(axes, starts, ends, steps, strict=True):
        d = dims[a]
        if isinstance(d, int) and isinstance(b, int) and isinstance(e, int):
            sl = onnx_slice(b, e, s, d)  # (ONNX's clamping, not strided_slice's)
            b, e = sl.start, sl.stop if sl.stop is not None else -d - 1
        elif isinstance(e, int) and s > 0 and e >= _INT_MAX:
            e = d
        if isinstance(e, int) and s < 0 and e <= -_INT_MAX:
            e = -(2**31) if not isinstance(d, int) else -d - 1
        begin.append(b)
        end.append(e)
    return ctx.emit(_op.strided_slice(ctx.expr(ins[0]), axes, begin, end, steps))


def _slice_by_symbolic_steps(ctx: Context, x, axes, starts, ends, steps):
    """A Slice whose steps are symbolic dims (``x[:, ::batch]``): per axis a take of
    ``begin + arange(count) * step``, ONNX's clamping written over the dims for either step
    sign (``tir.Select``); a zero step raises at run time naming the node."""
    dims = ctx.shape(x)

    def at(v, d):  # (a negative index counts from the end)
        if isinstance(v, PrimExpr):
            return tir.Select(tir.LT(v, 0), v + d, v)
        return v + d if v < 0 else v

    def clamp(v, lo, hi):
        return tir.Max(tir.Min(v, hi), lo)

    for a, b, e, st in zip(axes, starts, ends, steps, strict=True):
        d = dims[a]
        if isinstance(st, PrimExpr):
            ctx.require(tir.NE(st, 0), f"the step {{}} of axis {a} is zero", [st])
            up = tir.GT(st, 0)
            begin = ctx.simplify(tir.Select(up, clamp(at(b, d), 0, d), clamp(at(b, d), 0, d - 1)))
            end = ctx.simplify(tir.Select(up, clamp(at(e, d), 0, d), clamp(at(e, d), -1, d - 1)))
        else:
            sl = onnx_slice(b, e, int(st), d) if isinstance(d, int) and not any(
                isinstance(v, PrimExpr) for v in (b, e)) else None
            if sl is None:  # (a constant step beside a symbolic one: the usual slice)
                x = ctx.emit(_op.strided_slice(x, [a], [b], [e], [int(st)]))
                continue
            begin, end = sl.start, sl.stop if sl.stop is not None else -1
        count = ctx.simplify(tir.Max(0 - tir.FloorDiv(begin - end, st), 0))
        pos = _op.arange(0, count, 1, "int64")
        idx = _op.add(_op.multiply(pos, ctx.expr(_obj([st]).reshape(()))),
                      ctx.expr(_obj([begin]).reshape(())))
        x = ctx.emit(_op.take(x, ctx.emit(idx), a))
    return x


def _slice_at_run_time(ctx: Context, ins):
    """A Slice whose starts, ends or axes are computed from data (an exported EmbeddingBag's
    loop slices the ids at offsets[i]:offsets[i + 1]): ``dynamic_strided_slice`` with one
    bound per axis (the whole axis where the Slice names none), its result shape known at
    run time. Axes from data spread the bounds with masks (``_spread_by_run_time_axes``)."""
    ndim = ctx.ndim(ins[0])
    n = ctx.shape(ins[1])[0]
    if not isinstance(n, int):
        raise ctx.fail("Slice's starts must have a static length")
    steps = ctx.ints(ins[4], "Slice's steps") if len(ins) > 4 and ins[4] is not None \
        else [1] * n
    if not all(isinstance(v, int) for v in steps):
        raise ctx.fail("a Slice with run-time starts, ends or axes needs constant steps")
    if any(int(s) == 0 for s in steps):
        raise ctx.fail(f"Slice's steps {steps} hold a zero")
    dims = ctx.shape(ins[0])
    given_axes = len(ins) > 3 and ins[3] is not None
    if given_axes and ctx.known(ins[3]) is None:
        begin, end, strides = _spread_by_run_time_axes(ctx, ins, ndim, n, steps)
        axes = list(range(ndim))
    else:
        axes = ctx.ints(ins[3], "Slice's axes") if given_axes else list(range(n))
        if not all(isinstance(v, int) for v in axes):
            raise ctx.fail("a Slice with run-time starts or ends needs constant axes")
        axes = _om.axes_attr(axes, ndim, "Slice's axis")
        # the Slice's values first, then the defaults (0, the axis length); ``take`` puts each
        # axis' bound in place
        pick = [axes.index(a) if a in axes else n + a for a in range(ndim)]
        index = const(np.array(pick, "int64"))

        def full(v, defaults):
            both = ctx.emit(_op.concat([_int64(ctx, v), ctx.expr(_obj(defaults), "int64")], 0))
            return ctx.emit(_op.take(both, index, 0))

        begin, end = full(ins[1], [0] * ndim), full(ins[2], dims)
        strides = const(np.array([int(steps[axes.index(a)]) if a in axes else 1
                                  for a in range(ndim)], "int64"))
    # (a start before -dim clamps to the first element, as ONNX has it for either step sign;
    # the kernel's numpy rules would make a negative-step slice from there empty)
    begin = ctx.emit(_op.maximum(begin, ctx.expr(_obj([-d for d in dims]), "int64")))
    out = ctx.emit(_op.dynamic_strided_slice(ctx.expr(ins[0]), begin, end, strides))
    # the untouched axes keep their lengths; each sliced one gets a fresh shape variable, so
    # what follows (a Gather, a reduction over the sliced axis) has a known shape again
    shape = [Var(f"slice_len{a}", "int64") if a in axes else d for a, d in enumerate(dims)]
    return ctx.bb.match_cast(out, TensorStructInfo(shape, ctx.dtype(ins[0])))


def _int64(ctx: Context, v):
    """The run-time 1-D value ``v`` as int64."""
    given = ctx.expr(v)
    return given if ctx.dtype(given) == "int64" else ctx.emit(_op.astype(given, "int64"))


def _spread_by_run_time_axes(ctx: Context, ins, ndim: int, n: int, steps: list):
    """(begin, end, strides) of every axis, int64 tensors, for a Slice whose axes are read
    from data: an axis the axes name takes its start, end and step, any other runs whole
    from 0 by 1 (TVM's importer scatters them so). An axis outside [-ndim, ndim) or named
    twice fails at run time (``R.assert_op``), as onnxruntime."""
    raw = _int64(ctx, ins[3])
    rank, zero = const(np.array(ndim, "int64")), const(np.array(0, "int64"))
    ax = ctx.emit(_op.where(_op.less(raw, zero), _op.add(raw, rank), raw))
    hits = ctx.emit(_op.equal(_op.reshape(ax, [n, 1]),
                              const(np.arange(ndim, dtype="int64").reshape(1, ndim))))
    count = ctx.emit(_op.sum(_op.astype(hits, "int64"), axis=[0]))
    inside = _op.astype(_op.logical_and(_op.greater_equal(ax, zero), _op.less(ax, rank)),
                        "int64")
    one = const(np.array(1, "int64"))
    ok = ctx.emit(_op.logical_and(_op.equal(_op.min(inside), one),
                                  _op.less_equal(_op.max(count), one)))
    where = ctx.where().replace("{", "{{").replace("}", "}}")
    ctx.emit(_op.assert_op(ok, [raw], format=f"{where}: the axes {{}} must lie in "
                           f"[-{ndim}, {ndim}) and name each axis once"))
    named = ctx.emit(_op.greater(count, zero))

    def spread(v, default):
        vals = ctx.emit(_op.reshape(v, [n, 1]))
        picked = ctx.emit(_op.sum(_op.where(hits, vals, zero), axis=[0]))
        return ctx.emit(_op.where(named, picked, default))

    dims = ctx.expr(_obj(ctx.shape(ins[0])), "int64")
    return (spread(_int64(ctx, ins[1]), zero), spread(_int64(ctx, ins[2]), dims),
            spread(const(np.array(steps, "int64")), one))


@register("Gather")
def _gather(ctx: Context, ins, attrs):
    ndim = ctx.ndim(ins[0])
    axis = _om.axis_attr(attrs.get("axis", 0), ndim)
    dim = ctx.shape(ins[0])[axis]
    data, idx = ctx.known(ins[0]), ctx.known(ins[1])
    if idx is not None and isinstance(dim, int):
        idx = np.where(idx < 0, idx + dim, idx).astype("int64")
    if data is not None and idx is not None:
        return normalize_known(np.take(data, idx, axis=axis))
    indices = ctx.expr(idx if idx is not None else ins[1])
    if idx is None and isinstance(dim, int):  # negative run-time indices count from the end
        zero = const(np.array(0, ctx.dtype(indices)))
        indices = ctx.emit(_op.where(_op.less(indices, zero), _op.add(
            indices, const(np.array(dim, ctx.dtype(indices)))), indices))
    return ctx.emit(_op.take(ctx.expr(ins[0]), indices, axis))


@register("Unsqueeze")
def _unsqueeze(ctx: Context, ins, attrs):
    axes = _axes(ctx, ins, attrs, 1, "Unsqueeze's axes")
    out_rank = ctx.ndim(ins[0]) + len(axes)
    axes = sorted(a % out_rank for a in axes)
    k = ctx.known(ins[0])
    if k is not None:
        for a in axes:
            k = np.expand_dims(k, a)
        return k
    return ctx.emit(_op.expand_dims(ctx.expr(ins[0]), axes))


@register("Squeeze")
def _squeeze(ctx: Context, ins, attrs):
    axes = _axes(ctx, ins, attrs, 1, "Squeeze's axes")
    ndim = ctx.ndim(ins[0])
    k = ctx.known(ins[0])
    if axes is not None:
        axes = _om.axes_attr(axes, ndim, "Squeeze's axis")
    if k is not None:
        return np.squeeze(k, tuple(axes) if axes is not None else None)
    return ctx.emit(_op.squeeze(ctx.expr(ins[0]), axes))


@register("Flatten")
def _flatten(ctx: Context, ins, attrs):
    x = ctx.expr(ins[0])
    dims = ctx.shape(x)
    # axis lies in [-rank, rank]: axis == rank flattens everything into rows, (N, 1)
    axis = int(attrs.get("axis", 1))
    axis = axis + len(dims) if axis < 0 else axis
    lead, rest = 1, 1
    for d in dims[:axis]:
        lead = lead * d
    for d in dims[axis:]:
        rest = rest * d
    return ctx.emit(_op.reshape(x, ctx.shape_expr([ctx.simplify(lead), ctx.simplify(rest)])))


def _broadcast_dims(ctx: Context, a: list, b: list) -> list:
    n = max(len(a), len(b))
    a = [1] * (n - len(a)) + a
    b = [1] * (n - len(b)) + b
    out = []
    for x, y in zip(a, b, strict=True):
        if isinstance(y, int) and y == 1:
            out.append(x)
        elif isinstance(x, int) and x == 1:
            out.append(y)
        elif isinstance(x, int) and isinstance(y, int) and x != y:
            raise ctx.fail(f"cannot broadcast dims {x} and {y}")
        else:
            out.append(x if isinstance(x, PrimExpr) or not isinstance(y, PrimExpr) else y)
    return out


@register("Expand")
def _expand(ctx: Context, ins, attrs):
    shape = ctx.ints(ins[1], "Expand's shape")
    _require_sizes(ctx, shape, "the shape {} has a negative size")
    out = _broadcast_dims(ctx, ctx.shape(ins[0]), shape)
    k = ctx.known(ins[0])
    if k is not None and k.dtype != object and all(isinstance(d, int) for d in out):
        return np.broadcast_to(k, out).copy()
    x = ctx.expr(ins[0])
    if list(ctx.shape(x)) == out:
        return x
    return ctx.emit(_op.broadcast_to(x, ctx.shape_expr(out)))


@register("Where")
def _where(ctx: Context, ins, attrs):
    c, a, b = (ctx.known(v) for v in ins)
    if c is not None and a is not None and b is not None:
        return normalize_known(np.where(c.astype(bool), a, b))
    return ctx.emit(_op.where(ctx.expr(ins[0]), ctx.expr(ins[1]), ctx.expr(ins[2])))


@register("ConstantOfShape")
def _constant_of_shape(ctx: Context, ins, attrs):
    shape = ctx.ints(ins[0], "ConstantOfShape's shape")
    _require_sizes(ctx, shape, "the shape {} has a negative size")
    value = np.asarray(attrs.get("value", np.zeros(1, "float32"))).reshape(-1)
    if all(isinstance(d, int) for d in shape):
        return np.full(shape, value[0], dtype=value.dtype)
    return ctx.emit(_op.full(ctx.shape_expr(shape), const(value[0], str(value.dtype)),
                             str(value.dtype)))


@register("Range")
def _range(ctx: Context, ins, attrs):
    start, limit, delta = (ctx.value(v, "Range's inputs").reshape(()) for v in ins)
    d = delta.item()
    ctx.require(tir.NE(d, 0) if isinstance(d, PrimExpr) else d != 0,
                "delta {} must not be zero", [d])
    if all(v.dtype != object for v in (start, limit, delta)):
        return np.arange(start, limit, delta, dtype=start.dtype)
    dtype = ctx.dtype(ins[0])
    if not dtype.startswith("int"):
        raise ctx.fail("a floating-point Range needs constant bounds")
    return ctx.emit(_op.arange(start.item(), limit.item(), delta.item(), dtype))


@register("CumSum")
def _cumsum(ctx: Context, ins, attrs):
    axis = int(ctx.value(ins[1], "CumSum's axis").reshape(-1)[0])
    x = ctx.expr(ins[0])
    exclusive = bool(attrs.get("exclusive", 0))
    if attrs.get("reverse", 0):  # a reversed scan is the scan of the flipped input, flipped
        flipped = ctx.emit(_op.flip(x, axis))
        return ctx.emit(_op.flip(_op.cumsum(flipped, axis, exclusive=exclusive), axis))
    return ctx.emit(_op.cumsum(x, axis, exclusive=exclusive))


@register("Einsum")
def _einsum(ctx: Context, ins, attrs):
    return ctx.emit(_op.einsum([ctx.expr(v) for v in ins], attrs["equation"]))


@register("EyeLike")
def _eye_like(ctx: Context, ins, attrs):
    dims = ctx.shape(ins[0])
    dtype = onnx_dtype(attrs["dtype"]) if "dtype" in attrs else ctx.dtype(ins[0])
    k = int(attrs.get("k", 0))
    if all(isinstance(d, int) for d in dims):
        return np.eye(dims[0], dims[1], k, dtype=dtype)
    # a symbolic size (SigLIP's ``2 * eye(batch) - 1`` labels under a dynamic batch): ones
    # where the column index is the row index plus k
    rows = _op.reshape(_op.arange(0, dims[0], 1, "int64"), ctx.shape_expr([dims[0], 1]))
    cols = _op.reshape(_op.arange(0, dims[1], 1, "int64"), ctx.shape_expr([1, dims[1]]))
    hit = _op.equal(_op.add(rows, const(np.array(k, "int64"))), cols)
    return ctx.emit(_op.astype(hit, dtype))


@register("Tile")
def _tile(ctx: Context, ins, attrs):
    # a repeat may be symbolic (``x.repeat(batch, 1, 1)`` under a dynamic batch)
    reps = ctx.ints(ins[1], "Tile's repeats")
    _require_sizes(ctx, reps, "the repeats {} have a negative value")
    k = ctx.known(ins[0])
    if k is not None and k.dtype != object and all(isinstance(r, int) for r in reps):
        return np.tile(k, reps)
    x = ctx.expr(ins[0])
    dims = ctx.shape(x)
    # (d0, d1, ...) -> (1, d0, 1, d1, ...) -> broadcast (r0, d0, r1, d1, ...) -> (r0*d0, ...)
    inter = [v for d in dims for v in (1, d)]
    wide = [v for r, d in zip(reps, dims, strict=True) for v in (r, d)]
    out = [ctx.simplify(r * d) for r, d in zip(reps, dims, strict=True)]
    y = _op.broadcast_to(_op.reshape(x, ctx.shape_expr(inter)), ctx.shape_expr(wide))
    return ctx.emit(_op.reshape(y, ctx.shape_expr(out)))


@register("Trilu")
def _trilu(ctx: Context, ins, attrs):
    k = int(ctx.value(ins[1], "Trilu's k").reshape(-1)[0]) if len(ins) > 1 and ins[1] \
        is not None else 0
    fn = _op.triu if attrs.get("upper", 1) else _op.tril
    return ctx.emit(fn(ctx.expr(ins[0]), k))


_RESIZE_MODES = {"nearest": "nearest_neighbor", "linear": "linear", "cubic": "cubic"}


@register("Resize")
def _resize(ctx: Context, ins, attrs):
    """Static shapes: one ``image.resize2d`` where it samples exactly as the ONNX taps (the
    decision Relay's importer shares, ``resize2d_params``), else per-axis ``take`` taps.
    Symbolic shapes: resize2d for the plain NCHW spatial resize, whose output size's ratio is
    the scale. Scales or sizes read from data: ``run_time_resize``."""
    x = ctx.expr(ins[0])
    dims = ctx.shape(x)

    def known(i, what):
        return ctx.value(ins[i], what) if len(ins) > i and ins[i] is not None else None

    given = ins[3] if len(ins) > 3 and ins[3] is not None else \
        (ins[2] if len(ins) > 2 else None)
    if given is not None and ctx.known(given) is None:  # (read from data: ``run_time_resize``)
        return run_time_resize(ctx, ins, attrs)
    sizes_v = known(3, "Resize's sizes")
    scales_v = known(2, "Resize's scales")
    if not all(isinstance(d, int) for d in dims):
        out = _symbolic_resize2d(ctx, x, dims, attrs, sizes_v, scales_v)
        if out is None:
            out = _symbolic_kept_axes(ctx, x, dims, attrs, known(1, "Resize's roi"), sizes_v,
                                      scales_v)
        if out is None:
            given = "sizes" if sizes_v is not None and sizes_v.size else "scales"
            name = ctx.node.input[3 if given == "sizes" else 2] if ctx.opset >= 11 else ""
            raise ctx.fail(f"this Resize resizes a symbolic axis of the input "
                           f"{ctx.node.input[0]!r} (dims {dims}) by its {given}"
                           f"{f' {name!r}' if name else ''}, which this importer takes only as a "
                           "plain NCHW resize2d whose sizes are the scales times the input's; "
                           "give those axes static sizes with from_onnx(..., shape_dict=...)")
        return out
    out, scales, roi = resize_plan(dims, attrs, known(1, "Resize's roi"), scales_v, sizes_v,
                                   ctx.fail)
    params = resize2d_params(attrs, dims, out, scales, ctx.dtype(x))
    if params is not None:
        return ctx.emit(_op.image.resize2d(x, out[2:], **params))
    return _resize_taps(ctx, x, attrs, out, scales, roi)


def _symbolic_resize2d(ctx: Context, x, dims, attrs, sizes_v, scales_v):
    """resize2d of an NCHW input with symbolic dims that resizes H and W only (else None)."""
    mode = attrs.get("mode", "nearest")
    ctm = attrs.get("coordinate_transformation_mode", "half_pixel")
    if len(dims) != 4 or ctm == "tf_crop_and_resize" or "axes" in attrs or \
            attrs.get("antialias", 0) or mode not in _RESIZE_MODES:
        return None
    if sizes_v is not None and sizes_v.size:
        sizes = [ctx.simplify(d) if not isinstance(d, np.integer) else int(d)
                 for d in sizes_v.reshape(-1)]
        plain = list(sizes[:2]) == list(dims[:2])
    else:
        sc = [float(v) for v in scales_v.reshape(-1)] if scales_v is not None else []
        sizes = [int(np.floor(d * f)) if isinstance(d, int) else None
                 for d, f in zip(dims, sc, strict=False)]
        plain = (len(sc) == 4 and sc[:2] == [1.0, 1.0] and None not in sizes[2:]
                 and all(float(sizes[i]) == dims[i] * sc[i] for i in (2, 3)))
    if not plain:
        return None
    return ctx.emit(_op.image.resize2d(
        x, sizes[2:], [0.0, 0.0, 0.0, 0.0], "NCHW", _RESIZE_MODES[mode], ctm,
        attrs.get("nearest_mode", "round_prefer_floor"),
        float(attrs.get("cubic_coeff_a", -0.75)), int(attrs.get("exclude_outside", 0)),
        float(attrs.get("extrapolation_value", 0.0))))


def _symbolic_kept_axes(ctx: Context, x, dims, attrs, roi_v, sizes_v, scales_v):
    """A Resize whose symbolic axes keep their size (a dynamic batch; a PSMNet cost volume's
    5-D trilinear upsampling): the static axes by taps as with static shapes, each symbolic
    axis planned as a stand-in of size 1 that is not resized (one left out of ``axes`` is
    not, whatever the mode or policy). None where a symbolic axis may change size."""
    nd = len(dims)
    axes = [int(a) % nd for a in attrs.get("axes", range(nd))]
    symbolic = [a for a, d in enumerate(dims) if not isinstance(d, int)]
    named = [a for a in symbolic if a in axes]  # (the symbolic axes the sizes / scales name)
    if named and (attrs.get("coordinate_transformation_mode") == "tf_crop_and_resize" or
                  attrs.get("keep_aspect_ratio_policy", "stretch") != "stretch"):
        return None
    if sizes_v is not None and sizes_v.size:
        sizes = list(sizes_v.reshape(-1))
        if len(sizes) != len(axes) or any(
                not isinstance(sizes[axes.index(a)], PrimExpr) or
                ctx.simplify(sizes[axes.index(a)] - dims[a]) != 0 for a in named):
            return None
        sizes_v = np.array([1 if a in named else int(v) for a, v in zip(axes, sizes,
                                                                         strict=True)], "int64")
    elif scales_v is not None and scales_v.size:
        if len(scales_v.reshape(-1)) != len(axes) or any(
                float(scales_v.reshape(-1)[axes.index(a)]) != 1.0 for a in named):
            return None
    stand_in = [1 if a in symbolic else d for a, d in enumerate(dims)]
    out, scales, roi = resize_plan(stand_in, attrs, roi_v, scales_v, sizes_v, ctx.fail)
    return _resize_taps(ctx, x, attrs, out, scales, roi, shape=stand_in)


def _resize_taps(ctx: Context, x, attrs, out_shape, scales, roi, shape=None):
    """Separable interpolation: per resized axis, a weighted sum of gathers at constant
    indices (exact for every coordinate-transformation mode); the input of a pass of more
    than ``FUSED_TAPS`` taps materialized, as the Relay importer does (its ``ops_resize``).
    ``shape``: the input's static dims, 1 for a symbolic axis that keeps its size (default: the
    input's shape)."""
    dt = ctx.dtype(x)
    if not dt.startswith("float") and attrs.get("mode", "nearest") != "nearest":
        # (weighted taps of an integer input: in float64, truncated back toward zero as
        # onnxruntime casts, a cubic overshoot saturated; weights in the integer dtype were 0)
        y = _resize_taps(ctx, ctx.emit(_op.astype(x, "float64")), attrs, out_shape, scales, roi,
                         shape)
        if attrs.get("mode") == "cubic":
            info = np.iinfo(dt)
            y = ctx.emit(_op.clip(y, float(info.min), float(info.max)))
        return ctx.emit(_op.astype(y, dt))
    shape = ctx.shape(x) if shape is None else shape
    nd = len(shape)
    ctm = attrs.get("coordinate_transformation_mode", "half_pixel")
    mask = np.zeros(out_shape, dtype=bool)
    for a in range(nd):
        if shape[a] == out_shape[a] and scales[a] == 1.0 and ctm != "tf_crop_and_resize":
            continue
        try:
            taps, outside = axis_taps(attrs, shape[a], out_shape[a], scales[a], roi[a],
                                      roi[a + nd])
        except NotImplementedError as e:
            raise ctx.fail(str(e)) from e
        bshape = [1] * nd
        bshape[a] = out_shape[a]
        if len(taps) > FUSED_TAPS:
            x = ctx.emit(_op.stop_fusion(x))
        acc = None
        for idx, w in taps:
            term = _op.take(x, const(idx), a)
            if w is not None:
                term = _op.multiply(term, const(w.reshape(bshape).astype(dt), dt))
            acc = term if acc is None else _op.add(acc, term)
        x = ctx.emit(acc)
        mask |= outside.reshape(bshape)
    if mask.any():
        fill = ctx.expr(np.array(attrs.get("extrapolation_value", 0.0), dt))
        x = ctx.emit(_op.where(const(mask), fill, x))
    return x


@register("NonZero")
def _nonzero(ctx: Context, ins, attrs):
    """Folded when the input is known at import; else ``relax.nonzero`` (two native passes,
    ``schedule.nonzero_scan``: the count, then the indices), its length the data's."""
    v = ctx.known(ins[0])
    if v is not None:
        return np.array(np.nonzero(v), dtype="int64").reshape(np.ndim(v), -1)
    x = ctx.expr(ins[0])
    if ctx.ndim(x) == 0:
        raise ctx.fail("NonZero of a scalar is not supported")
    return ctx.emit(_op.nonzero(x))

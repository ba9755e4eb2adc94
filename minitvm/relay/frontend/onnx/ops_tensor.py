"""ONNX shape and data-movement operators: Reshape, Transpose, Concat, Split, Slice, Gather, ...

Shape arguments (Reshape's shape, Slice's starts, Expand's shape, ...) are folded to constants
first, so models exported with static input shapes import without dynamic shapes. Ones computed
at run time from a dynamic input's sizes take run-time forms where the op has one (Split's
sizes, Pad's pads, OneHot's depth, Trilu's k, ConstantOfShape's shape: ``run_time_sized``).
"""

from __future__ import annotations

import numpy as np

from ....frontend_common import onnx_model as _om
from ....frontend_common.onnx_slice import onnx_slice
from ... import expr as _expr
from ... import op as _op
from ...op import nn as _nn
from . import run_time_sized
from .dynamic_dim import DynamicDim, has_dynamic, one_inferred
from .dynamic_reshape import copy_codes, merge_leading, reshape_exact, reshape_to
from .registry import register
from .shape_values import SizeOf


def _ints(arr) -> list[int]:
    return [int(v) for v in np.asarray(arr).reshape(-1)]


def dynamic_reshape_target(in_shape, target, allowzero: bool = False) -> list[int]:
    """A Relay reshape's new shape for ONNX Reshape of an input with dynamic dimensions:
    0 copies the input's dim (as in Relay), -1 is inferred at run time. Every dynamic input
    dim must be copied by a 0 or absorbed by the -1, or the output's size is unknowable."""
    target = [int(d) for d in target]
    if allowzero and 0 in target:
        raise ValueError(f"Reshape with allowzero of a dynamic shape {tuple(in_shape)}")
    if target.count(-1) > 1:
        raise ValueError(f"Reshape: more than one -1 in the target shape {target}")
    copied = {i for i, d in enumerate(target) if d == 0}
    lost = [i for i, d in enumerate(in_shape) if isinstance(d, DynamicDim) and i not in copied]
    if lost and -1 not in target:
        raise ValueError(f"Reshape of the dynamic shape {tuple(in_shape)} into {target}: the "
                         f"dynamic axes {lost} are neither copied (0) nor inferred (-1)")
    return target


def reshape_target(in_shape, target, allowzero: bool = False) -> tuple[int, ...]:
    """ONNX Reshape's output shape: 0 copies the input dim (unless allowzero), -1 is inferred."""
    out = [in_shape[i] if d == 0 and not allowzero else d for i, d in enumerate(target)]
    if out.count(-1) > 1:
        raise ValueError(f"Reshape: more than one -1 in the target shape {list(target)}")
    if -1 in out:
        known = int(np.prod([d for d in out if d != -1]))
        total = int(np.prod(in_shape))
        if known == 0 or total % known:
            raise ValueError(f"Reshape: cannot reshape {tuple(in_shape)} into {list(target)}")
        out[out.index(-1)] = total // known
    if int(np.prod(out)) != int(np.prod(in_shape)):
        raise ValueError(f"Reshape: cannot reshape {tuple(in_shape)} into {list(target)}")
    return tuple(out)


@register("Reshape")
def _reshape(ctx, ins, attrs):
    x = ins[0]
    in_shape = ctx.shape(x)
    allowzero = bool(attrs.get("allowzero", 0))
    if len(ins) > 1 and has_dynamic(in_shape) and ctx.maybe_value(ins[1]) is None:
        return _reshape_run_time(ctx, x, in_shape, ins[1], allowzero)
    target = _ints(ctx.value(ins[1], "Reshape's shape")) if len(ins) > 1 else list(
        attrs["shape"])
    if has_dynamic(in_shape):
        return _op.reshape(x, dynamic_reshape_target(in_shape, target, allowzero))
    return reshape_exact(x, reshape_target(in_shape, target, allowzero))


def _reshape_run_time(ctx, x, in_shape, shape, allowzero: bool):
    """Reshape to a target computed from run-time sizes (``shape_values``): each size that is a
    tensor's axis becomes that axis's ``DynamicDim``, so sizes the input has at the same place
    are copied and the rest inferred or read (``dynamic_reshape.reshape_to``); what the type
    cannot say is reshaped by the model's own shape tensor at run time (``dyn.reshape``)."""
    elems = ctx.elements(shape)
    if elems is None:
        ctx.value(shape, "Reshape's shape")  # (raises its clear error)
    run_time = ctx.fold(shape)
    target = []
    for i, v in enumerate(elems.ravel()):
        if isinstance(v, SizeOf):  # (a size computed from others has no axis to read: fresh)
            target.append(_computed(ctx, i, v) if v.tensor is None else
                          ctx.shape(v.tensor)[v.axis])
        elif int(v) == 0 and not allowzero and i < len(in_shape):
            target.append(in_shape[i])  # ONNX's 0 copies the input's size
        else:
            target.append(int(v))
    ints = [d for d in target if not isinstance(d, DynamicDim)]
    if allowzero and 0 in ints:
        return _op.reshape(x, run_time, allowzero=True)
    if -1 in ints:
        codes = copy_codes(in_shape, target)
        if has_dynamic(codes):  # an unknown size besides the -1
            static = _static_inferred(ctx, in_shape, target)
            if static is not None:
                return reshape_to(ctx.shape, x, in_shape, static, run_time)
            return _op.reshape(x, run_time)
        return _op.reshape(x, dynamic_reshape_target(in_shape, codes))
    return reshape_to(ctx.shape, x, in_shape, target, run_time)


def _computed(ctx, axis: int, size: SizeOf) -> DynamicDim:
    """A fresh ``DynamicDim`` for a size the graph computed from others, noted in
    ``ctx.size_factors`` as the product it is where the arithmetic said so (``batch * 2``)."""
    d = DynamicDim(axis)
    if size.factors is not None:
        ctx.size_factors.define(d.symbol, *size.factors)
    return d


def _static_inferred(ctx, in_shape, target) -> list | None:
    """``target`` with its -1 as the static size it must be, when the input's run-time sizes
    and the target's multiply the same graph-input sizes (``size_factors``): ``(batch * 64,
    C)`` to ``(batch, 64, -1)`` infers C; else None."""
    factors = ctx.size_factors

    def dims(shape):
        return [d.symbol if isinstance(d, DynamicDim) else d for d in shape]

    bases_in, k_in = factors.expand(dims(in_shape))
    bases_t, k_t = factors.expand(dims([d for d in target
                                        if isinstance(d, DynamicDim) or d != -1]))
    if not bases_in or not factors.same_sizes(bases_in, bases_t) or k_t <= 0 or k_in % k_t:
        return None
    return [k_in // k_t if not isinstance(d, DynamicDim) and d == -1 else d for d in target]


@register("Flatten")
def _flatten(ctx, ins, attrs):
    shape = ctx.shape(ins[0])
    axis = int(attrs.get("axis", 1))
    axis = axis + len(shape) if axis < 0 else axis
    if has_dynamic(shape):  # the dynamic side is inferred: (-1, cols) or (rows, -1)
        if has_dynamic(shape[:axis]) and has_dynamic(shape[axis:]):  # rows merged, cols inferred
            return _op.reshape(merge_leading(ins[0], axis), (0, -1))
        if has_dynamic(shape[axis:]):
            return _op.reshape(ins[0], (int(np.prod(shape[:axis])) if axis else 1, -1))
        return _op.reshape(ins[0], (-1, int(np.prod(shape[axis:]))))
    rows = int(np.prod(shape[:axis])) if axis else 1
    return reshape_exact(ins[0], (rows, int(np.prod(shape[axis:]))))


@register("Transpose")
def _transpose(ctx, ins, attrs):
    nd = ctx.ndim(ins[0])
    perm = attrs.get("perm", list(range(nd))[::-1])
    return _op.transpose(ins[0], [int(p) for p in perm])


@register("Concat")
def _concat(ctx, ins, attrs):
    present = [x for x in ins if x is not None]
    rank = max(len(ctx.shape(x)) for x in present)
    axis = int(attrs["axis"]) % max(rank, 1)

    def adds_nothing(x):  # (an empty input of another rank: an exporter's legacy (0,))
        s = ctx.shape(x)
        return isinstance(s[axis], int) and s[axis] == 0 if len(s) == rank else 0 in s

    # an input with elements elsewhere but none along the axis adds nothing; one empty along
    # another axis still adds its slices: (0, 2, 0) ++ (0, 1, 0) is (0, 3, 0)
    parts = [x for x in present if not adds_nothing(x)] or [
        next((x for x in present if len(ctx.shape(x)) == rank), present[0])]
    if len(parts) == 1:
        return parts[0]
    return _op.concatenate(parts, axis=int(attrs["axis"]))


@register("Split")
def _split(ctx, ins, attrs):
    x = ins[0]
    shape = ctx.shape(x)
    axis = _om.axis_attr(attrs.get("axis", 0), len(shape), "Split's axis")
    dim = shape[axis]
    n_out = len(ctx.node.output)
    if len(ins) > 1 and ins[1] is not None and ctx.at_run_time(ins[1]):
        return run_time_sized.split(ctx, x, ins[1], axis, n_out)  # (sizes from the batch)
    if len(ins) > 1 and ins[1] is not None:
        sizes = _ints(ctx.value(ins[1], "Split's split sizes"))
    elif "split" in attrs:
        sizes = [int(s) for s in attrs["split"]]
    elif isinstance(dim, DynamicDim):  # (equal parts of a run-time size)
        return run_time_sized.split_evenly(ctx, x, axis, n_out, exact="num_outputs" not in attrs)
    else:
        n = int(attrs.get("num_outputs", n_out))
        if "num_outputs" not in attrs and dim % n:  # (onnxruntime: "cannot be split evenly")
            raise ctx.fail(f"axis {axis} of size {dim} does not split evenly into {n} outputs")
        chunk = -(-dim // n)
        sizes = [chunk] * (n - 1) + [dim - chunk * (n - 1)]
    if isinstance(dim, DynamicDim) and len(sizes) > 1:  # (constant parts of a run-time size)
        return run_time_sized.split(ctx, x, ctx.const(np.array(sizes, "int64")), axis, n_out)
    if sum(sizes) != dim:
        raise ctx.fail(f"split sizes {sizes} do not add up to dimension {dim}")
    if len(sizes) == 1:
        return [x]
    indices = list(np.cumsum(sizes)[:-1])
    return list(_op.split(x, [int(i) for i in indices], axis=axis))


@register("Slice")
def _slice(ctx, ins, attrs):
    x = ins[0]
    shape = ctx.shape(x)
    bounds = [v for v in ins[1:5] if v is not None]  # (starts, ends, axes, steps)
    if len(ins) > 1 and any(ctx.maybe_value(v) is None for v in bounds) and \
            all(ctx.maybe_value(v) is not None or ctx.at_run_time(v) for v in bounds):
        # bounds, axes or steps computed from run-time sizes (``mask[:, :t]``, a loop's
        # ``ids[off[i]:off[i + 1]]``), or read from data in a model with run-time sizes: sliced
        # at run time
        return _slice_run_time(ctx, x, len(shape), ins)
    if len(ins) > 1:
        starts = _ints(ctx.value(ins[1], "Slice's starts"))
        ends = _ints(ctx.value(ins[2], "Slice's ends"))
        axes = _ints(ctx.value(ins[3], "Slice's axes")) if len(ins) > 3 and ins[3] is not None \
            else list(range(len(starts)))
        steps = _ints(ctx.value(ins[4], "Slice's steps")) if len(ins) > 4 and ins[4] is not None \
            else [1] * len(starts)
    else:
        starts, ends = list(attrs["starts"]), list(attrs["ends"])
        axes = list(attrs.get("axes", range(len(starts))))
        steps = [1] * len(starts)
    return slice_axes(x, shape, starts, ends, axes, steps)


def _slice_run_time(ctx, x, nd: int, ins):
    """Slice whose starts, ends, steps or axes are known only at run time (``mask[:, :, :t,
    :t]`` for a dynamic seq length ``t``, ``x[::s]`` for a step read from data): per sliced
    axis, a take of the positions ONNX's clamped start:end:step selects (an arange at run
    time), which keeps every other axis's size in the type. Axes read from data slice every
    axis, an axis they do not name whole (``_named_bounds``). A zero step, and axes out of
    range or repeated, raise naming the node, as onnxruntime."""
    starts_shape = ctx.shape(ins[1])
    n = int(starts_shape[0]) if starts_shape else 1
    has_axes = len(ins) > 3 and ins[3] is not None
    if has_axes and ctx.maybe_value(ins[3]) is None:
        return _slice_by_run_time_axes(ctx, x, nd, n, ins)
    axes = _ints(ctx.value(ins[3], "Slice's axes")) if has_axes else list(range(n))
    has_steps = len(ins) > 4 and ins[4] is not None
    steps = ctx.maybe_value(ins[4]) if has_steps else np.ones(n, "int64")
    if steps is not None and any(int(st) == 0 for st in np.ravel(steps)):
        raise ctx.fail(f"Slice's steps {_ints(steps)} hold a zero")

    def scalar(v, j):
        return _op.cast(_op.take(_op.reshape(ctx.fold(v), [-1]),
                                 ctx.const(np.array(j, "int64"))), "int64")

    bounds = [(a % nd, lambda i, j=j: scalar(ins[i], j),
               None if steps is None else int(np.ravel(steps)[j]), j)
              for j, a in enumerate(axes)]
    return _take_slices(ctx, x, ins, bounds)


def _slice_by_run_time_axes(ctx, x, nd: int, n: int, ins):
    """A Slice whose axes are read from data: each axis of ``x`` sliced by the bounds the
    axes give it, from 0 to its end by 1 where they name none (TVM's importer spreads the
    bounds so, with scatter, for ``dyn.strided_slice``). The axes are checked at run time:
    each in [-rank, rank), none twice."""
    raw = _op.cast(_op.reshape(ctx.fold(ins[3]), [-1]), "int64")
    rank, zero = ctx.const(np.array(nd, "int64")), ctx.const(np.array(0, "int64"))
    ax = _op.where(_op.less(raw, zero), _op.add(raw, rank), raw)
    hits = _op.cast(_op.equal(_op.reshape(ax, [-1, 1]),
                              ctx.const(np.arange(nd, dtype="int64").reshape(1, nd))), "int64")
    ok = _op.logical_and(
        _op.all(_op.logical_and(_op.greater_equal(ax, zero), _op.less(ax, rank))),
        _op.all(_op.less_equal(_op.sum(hits, axis=[0]), ctx.const(np.array(1, "int64")))))
    ax = run_time_sized.checked(ctx, ax, ok, f"the axes {{}} must lie in [-{nd}, {nd}) and "
                                "name each axis once", [raw])
    has_steps = len(ins) > 4 and ins[4] is not None
    steps = ctx.maybe_value(ins[4]) if has_steps else np.ones(n, "int64")
    if steps is not None and any(int(st) == 0 for st in np.ravel(steps)):
        raise ctx.fail(f"Slice's steps {_ints(steps)} hold a zero")
    # (steps all 1, known: every axis' step is 1, the named ones' and the rest's)
    unit = steps is not None and bool(np.all(np.ravel(steps) == 1))
    defaults = {1: 0, 2: np.iinfo("int64").max, 4: 1}

    def named(a):
        mask = _op.equal(ax, ctx.const(np.array(a, "int64")))

        def bound(i, mask=mask):
            vals = _op.cast(_op.reshape(ctx.fold(ins[i]), [-1]), "int64")
            picked = _op.sum(_op.where(mask, vals, zero))
            return _op.where(_op.any(mask), picked, ctx.const(np.array(defaults[i], "int64")))
        return bound

    if has_steps and steps is not None and not unit:
        ins = list(ins[:4]) + [ctx.const(np.asarray(steps, "int64").reshape(-1))]
    bounds = [(a, named(a), 1 if unit else None, None) for a in range(nd)]
    return _take_slices(ctx, x, ins, bounds)


def _take_slices(ctx, x, ins, bounds):
    """``x`` sliced on each axis of ``bounds`` -- (axis, bound(i) -> that axis' int64 value
    of the Slice's input ``i`` (1 starts, 2 ends, 4 steps), the step where known, the position in the
    Slice's own lists or None) -- by a take of the positions ONNX's clamped start:end:step
    selects."""
    zero, one = (ctx.const(np.array(v, "int64")) for v in (0, 1))
    out = x
    shape = ctx.shape(x)
    begins, ends = (ctx.elements(v) for v in ins[1:3])
    for a, scalar, known, j in bounds:
        if j is not None and known is not None and \
                _whole_axis(ctx, shape[a], begins, ends, j, known):
            continue  # (x[:, :n] with n x's own run-time size: nothing to slice)
        dim = _op.take(_op.shape_of(out, "int64"), ctx.const(np.array(a, "int64")))
        if known is not None and known > 0:  # ONNX: a negative index counts from the end;
            lo, hi = zero, dim  # then [0, dim] for a positive step, [-1, dim - 1] else
            step = ctx.const(np.array(known, "int64"))
        else:
            step = ctx.const(np.array(known, "int64")) if known is not None else \
                run_time_sized.checked(ctx, scalar(4), _op.not_equal(
                    scalar(4), zero), f"the step {{}} of axis {a} is zero",
                    [scalar(4)])
            up = _op.greater(step, zero)
            lo = _op.where(up, zero, _op.negative(one))
            hi = _op.where(up, dim, _op.subtract(dim, one))

        def clamped(v, lo, hi, dim=dim):
            v = _op.where(_op.less(v, zero), _op.add(v, dim), v)
            return _op.minimum(_op.maximum(v, lo), hi)

        # (a start clamps to [0, dim] or [0, dim - 1]; an end to [0, dim] or [-1, dim - 1])
        begin = clamped(scalar(1), zero, hi)
        end = clamped(scalar(2), lo, hi)
        count = _op.maximum(_op.negative(_op.floor_divide(_op.subtract(begin, end), step)),
                            zero)  # (ceil((end - begin) / step), none below 0)
        positions = _op.add(begin, _op.multiply(_op.arange(zero, count, one, "int64"), step))
        out = _op.take(out, positions, axis=a)
    return out


def _whole_axis(ctx, size, begins, ends, j: int, step: int) -> bool:
    """Whether a slice takes all of an axis of ``size``: from 0 (or a start at or before it),
    step 1, to a static end at or past a static size, or to that run-time size itself."""
    if begins is None or ends is None or step != 1:
        return False
    b, e = begins.ravel()[j], ends.ravel()[j]
    if isinstance(b, SizeOf) or int(b) != 0:
        return False
    if isinstance(e, SizeOf):
        return e.tensor is not None and ctx.shape(e.tensor)[e.axis] == size and \
            isinstance(size, DynamicDim)
    return not isinstance(size, DynamicDim) and int(e) >= size


def slice_axes(x, shape, starts, ends, axes, steps):
    """Python slicing per axis; negative steps become a take with constant indices. An axis of
    run-time size (``DynamicDim``) keeps ONNX's bounds in strided_slice, which clamps them
    to the size at run time (``x[1:]`` / ``x[::-1]`` over the batch)."""
    begin, end, stride, ax = [], [], [], []
    out = x
    for s, e, a, st in zip(starts, ends, axes, steps, strict=True):
        a = _om.axis_attr(a, len(shape), "Slice's axis")
        if isinstance(shape[a], DynamicDim):
            if st == 0:
                raise ValueError("Slice: a step cannot be zero")
            if (int(s), int(st)) == (0, 1) and int(e) >= 2**31 - 1:
                continue  # (x[0:] of the whole axis)
            begin.append(int(s))
            end.append(int(e))
            stride.append(int(st))
            ax.append(a)
            continue
        lo, hi, step = onnx_slice(s, e, st, shape[a]).indices(shape[a])
        if st < 0:
            idx = np.arange(lo, hi, step, dtype="int64")
            out = _op.take(out, _expr.const(idx, "int64"), axis=a)
            continue
        hi = max(hi, lo)
        if (lo, hi, step) == (0, shape[a], 1):
            continue
        begin.append(lo)
        end.append(hi)
        stride.append(step)
        ax.append(a)
    if ax:
        out = _op.strided_slice(out, begin, end, stride, axes=ax)
    return out


def _normalize_indices(ctx, idx, dim):
    v = ctx.maybe_value(idx)
    if v is not None:
        v = np.where(v < 0, v + dim, v).astype(v.dtype)
        return ctx.const(v)
    zero = ctx.const(np.array(0, ctx.dtype(idx)))
    return _op.where(_op.less(idx, zero), _op.add(idx, ctx.const(np.array(dim, ctx.dtype(idx)))),
                     idx)


def _axis_indices(ctx, idx, x, axis: int):
    """``idx`` into axis ``axis`` of ``x`` with each negative index counted from the end.
    Where that axis is dynamic (a ``DynamicDim``), its size is read at run time (``shape_of``)
    for the negative indices; constant indices that are all non-negative stay as they are."""
    dim = ctx.shape(x)[axis]
    if not isinstance(dim, DynamicDim):
        return _normalize_indices(ctx, idx, dim)
    v = ctx.maybe_value(idx)
    if v is not None and not (v < 0).any():
        return ctx.const(v)
    dtype = ctx.dtype(idx)
    size = _op.take(_op.shape_of(x, dtype), ctx.const(np.array(axis, "int64")), axis=0)
    return _op.where(_op.less(idx, ctx.const(np.array(0, dtype))), _op.add(idx, size), idx)


@register("Gather")
def _gather(ctx, ins, attrs):
    x, idx = ins
    axis = _om.axis_attr(attrs.get("axis", 0), ctx.ndim(x))
    return _op.take(x, _axis_indices(ctx, idx, x, axis), axis=axis)


@register("GatherElements")
def _gather_elements(ctx, ins, attrs):
    x, idx = ins
    axis = _om.axis_attr(attrs.get("axis", 0), ctx.ndim(x))
    return _op.gather(x, axis, _axis_indices(ctx, idx, x, axis))


@register("GatherND")
def _gather_nd(ctx, ins, attrs):
    x, idx = ins
    nd = ctx.ndim(idx)
    idx_t = _op.transpose(idx, [nd - 1] + list(range(nd - 1)))
    return _op.gather_nd(x, idx_t, batch_dims=int(attrs.get("batch_dims", 0)))


def _axes_arg(ctx, ins, attrs, what):
    if len(ins) > 1 and ins[1] is not None:
        return _ints(ctx.value(ins[1], f"{what}'s axes"))
    return [int(a) for a in attrs["axes"]] if "axes" in attrs else None


@register("Unsqueeze")
def _unsqueeze(ctx, ins, attrs):
    shape = list(ctx.shape(ins[0]))
    axes = _axes_arg(ctx, ins, attrs, "Unsqueeze")
    nd = len(shape) + len(axes)
    new_shape = list(shape)
    for a in sorted(a % nd for a in axes):
        new_shape.insert(a, 1)
    if one_inferred(new_shape) is None:  # expand_dims keeps each dynamic size in the type
        out = ins[0]
        for a in sorted(a % nd for a in axes):
            out = _op.expand_dims(out, a)
        return out
    return reshape_exact(ins[0], new_shape)


@register("Squeeze")
def _squeeze(ctx, ins, attrs):
    shape = ctx.shape(ins[0])
    axes = _axes_arg(ctx, ins, attrs, "Squeeze")
    if axes is None:
        axes = [i for i, d in enumerate(shape) if d == 1]
    axes = sorted(_om.axes_attr(axes, len(shape), "Squeeze's axis"))
    kept = one_inferred([d for i, d in enumerate(shape) if i not in axes])
    if kept is None:  # several dynamic sizes: squeeze keeps each in the type
        return _op.squeeze(ins[0], axis=axes)
    return reshape_exact(ins[0], kept)


@register("Expand")
def _expand(ctx, ins, attrs):
    x = ins[0]
    if ctx.maybe_value(ins[1]) is None and has_dynamic_source(ctx, ins[1]):
        return _expand_run_time(ctx, x, ctx.elements(ins[1]).ravel(), ins[1])
    target = _ints(ctx.value(ins[1], "Expand's shape"))
    if has_dynamic(ctx.shape(x)):  # (a dynamic axis keeps its size: a target is 1 there)
        return _expand_run_time(ctx, x, target)
    out = tuple(np.broadcast_shapes(ctx.shape(x), tuple(target)))
    return x if out == ctx.shape(x) else _op.broadcast_to(x, out)


def has_dynamic_source(ctx, shape) -> bool:
    elems = ctx.elements(shape)
    return elems is not None and any(isinstance(v, SizeOf) for v in elems.ravel())


def _expand_run_time(ctx, x, target, sizes=None):
    """Expand to a shape with run-time sizes: each one that is axis ``a`` of a tensor ``t``
    grows a size-1 axis of ``x`` by taking index 0 once per element of ``t`` along ``a``; one
    computed from sizes (``batch * 9``) once per element of ``arange`` of it, read from the
    1-D ``sizes`` (the target shape tensor) at run time."""
    shape = list(ctx.shape(x))
    n_target = len(target)
    nd = max(len(shape), len(target))
    if len(shape) < nd:
        x = _op.expand_dims(x, 0, nd - len(shape))
        shape = [1] * (nd - len(shape)) + shape
    target = [1] * (nd - len(target)) + list(target)
    static = [1 if isinstance(t, SizeOf) else max(int(t), 1) if s == 1 else s
              for s, t in zip(shape, target)]
    if tuple(static) != tuple(shape) and not has_dynamic(shape):
        x = _op.broadcast_to(x, tuple(int(d) for d in np.broadcast_shapes(shape, static)))
    elif has_dynamic(shape):  # (broadcast_to needs every size: repeat each static 1 -> n)
        for axis, (s, n) in enumerate(zip(shape, static, strict=True)):
            if not isinstance(s, DynamicDim) and s == 1 and n != 1:
                x = _op.repeat(x, int(n), axis)
    for axis, t in enumerate(target):
        if not isinstance(t, SizeOf) or shape[axis] != 1:
            continue
        if t.tensor is not None:
            # one index (0) per element of ``t.tensor`` along its axis: x's axis grows to it
            line = first_line(t.tensor, t.axis, len(ctx.shape(t.tensor)))
        elif sizes is not None:  # (a size computed from others: arange of it, at run time)
            line = _size_line(ctx, sizes, axis - (nd - n_target))
        else:
            raise ctx.fail(f"a size computed at run time at axis {axis}, with no shape tensor "
                           "to read it from")
        x = _op.take(x, _op.cast(_op.zeros_like(line), "int64"), axis=axis)
    return x


def _size_line(ctx, sizes, index: int):
    """``arange(sizes[index])``: as many elements as that run-time size (``sizes`` a 1-D
    integer shape tensor)."""
    n = _op.take(_op.cast(ctx.fold(sizes), "int64"), _expr.const(np.array(index, "int64")))
    return _op.arange(n, dtype="int64")


def first_line(t, axis: int, nd: int):
    """The elements of ``t`` along ``axis`` at index 0 of every other axis (1-D)."""
    for a in reversed(range(nd)):
        if a != axis:
            t = _op.take(t, _expr.const(np.array(0, "int64")), axis=a)
    return t


@register("Tile")
def _tile(ctx, ins, attrs):
    if ctx.maybe_value(ins[1]) is None and has_dynamic_source(ctx, ins[1]):
        return _tile_run_time(ctx, ins[0], ctx.elements(ins[1]).ravel(), ins[1])
    return _op.tile(ins[0], _ints(ctx.value(ins[1], "Tile's repeats")))


def _tile_run_time(ctx, x, reps, sizes):
    """Tile by repeats holding run-time sizes (a learned query tiled to the batch,
    ``q.repeat(B, 1, 1)``, or to ``B * heads``): the static repeats tile, and an axis of size 1
    repeated a run-time number of times grows as Expand grows it (the type keeps that size's
    ``relay.Any()``)."""
    shape = ctx.shape(x)
    if len(reps) != len(shape):
        raise ctx.fail(f"{len(reps)} repeats for a rank-{len(shape)} input")
    for axis, r in enumerate(reps):
        if isinstance(r, SizeOf) and shape[axis] != 1:
            raise ctx.fail(f"a run-time repeat count at axis {axis} of {shape}: only an axis "
                           "of size 1 may be repeated a run-time number of times; pass static "
                           "sizes in from_onnx's shape=")
    static = [1 if isinstance(r, SizeOf) else int(r) for r in reps]
    if any(r != 1 for r in static):
        x = _op.tile(x, static)
    return _expand_run_time(ctx, x, list(reps), sizes)


@register("Shape")
def _shape(ctx, ins, attrs):
    shape = ctx.shape(ins[0])
    nd = len(shape)
    start = attrs.get("start", 0)
    end = attrs.get("end", nd)
    start = min(max(start + nd if start < 0 else start, 0), nd)
    end = min(max(end + nd if end < 0 else end, 0), nd)
    if has_dynamic(shape[start:end]):  # computed at run time
        out = _op.shape_of(ins[0], "int64")
        return out if (start, end) == (0, nd) else _op.strided_slice(out, [start], [end])
    return ctx.const(np.array(shape[start:end], dtype="int64"))


@register("Size")
def _size(ctx, ins, attrs):
    return ctx.const(np.array(int(np.prod(ctx.shape(ins[0]))), dtype="int64"))


@register("ConstantOfShape")
def _constant_of_shape(ctx, ins, attrs):
    value = attrs.get("value", np.zeros(1, "float32"))
    value = np.asarray(value).reshape(-1)
    if ctx.maybe_value(ins[0]) is None and has_dynamic_source(ctx, ins[0]):
        return _run_time_full(ctx, value[0], ins[0])
    if ctx.at_run_time(ins[0]):  # (not shape arithmetic: dyn.full, its sizes relay.Any())
        return run_time_sized.full(ctx, value[0], ins[0])
    shape = _ints(ctx.value(ins[0], "ConstantOfShape's shape"))
    if min(shape, default=0) < 0:
        raise ctx.fail(f"the shape {shape} has a negative size")
    return ctx.const(np.full(shape, value[0], dtype=value.dtype))


def _run_time_full(ctx, value: np.generic, shape):
    """``value`` broadcast to ``shape``, shape arithmetic holding run-time sizes: a constant
    with 1 at each run-time size, grown along that axis by a take of index 0 once per element of
    the tensor axis that size is read from (the type keeps that axis's ``relay.Any()``), or of
    ``arange(size)`` for a size computed from others (a product of sizes)."""
    elems = ctx.elements(shape).ravel()
    x = ctx.const(np.full([1 if isinstance(v, SizeOf) else int(v) for v in elems], value))
    sizes = _op.cast(ctx.fold(shape), "int64")
    if any(isinstance(v, SizeOf) and v.tensor is None for v in elems):
        sizes = run_time_sized.non_negative_shape(ctx, sizes)  # (batch - 5 can be < 0)
    for axis, v in enumerate(elems):
        if not isinstance(v, SizeOf):
            continue
        if v.tensor is not None:
            line = first_line(v.tensor, v.axis, len(ctx.shape(v.tensor)))
        else:
            line = _op.arange(_op.take(sizes, _expr.const(np.array(axis, "int64"))),
                              dtype="int64")
        x = _op.take(x, _op.cast(_op.zeros_like(line), "int64"), axis=axis)
    return x


@register("Constant")
def _constant(ctx, ins, attrs):
    if "value" in attrs:
        return ctx.const(np.asarray(attrs["value"]))
    for key, dt in (("value_float", "float32"), ("value_floats", "float32"),
                    ("value_int", "int64"), ("value_ints", "int64")):
        if key in attrs:
            return ctx.const(np.array(attrs[key], dtype=dt))
    raise ctx.fail(f"unsupported Constant attributes {sorted(attrs)} (sparse or string values)")


@register("Identity")
def _identity(ctx, ins, attrs):
    return ins[0]


@register("Range")
def _range(ctx, ins, attrs):
    if any(ctx.maybe_value(v) is None for v in ins) and \
            all(ctx.maybe_value(v) is not None or ctx.at_run_time(v) for v in ins):
        # bounds computed from run-time sizes (positions 0..seq, EmbeddingBag's offsets
        # 0..batch*9 step 9), or read from data in a model with run-time sizes: Relay's
        # arange, of a length known at run time (a zero delta raises, as onnxruntime)
        start, limit, delta = (ctx.fold(v) for v in ins)
        step = ctx.maybe_value(ins[2])
        if step is not None and not np.all(step):
            raise ctx.fail("delta must not be zero")
        if step is None:
            zero = ctx.const(np.zeros((), ctx.dtype(ins[2])))
            delta = run_time_sized.checked(ctx, delta, _op.not_equal(_op.reshape(delta, ()), zero),
                                           "delta {} must not be zero", [delta])
        return _op.arange(start, limit, delta, dtype=ctx.dtype(ins[0]))
    # the output length depends on the values: they must be static for a static shape
    start, limit, delta = (ctx.value(v, f"Range's {w}").item() for v, w in
                           zip(ins, ("start", "limit", "delta")))
    dt = ctx.dtype(ins[0])
    if delta == 0:
        raise ctx.fail("delta must not be zero")
    n = max(int(np.ceil((limit - start) / delta)), 0)
    return ctx.const((start + np.arange(n) * delta).astype(dt))


_UNTIL_END = 2**62  # a strided_slice end past any axis (clipped to its size)


@register("Pad")
def _pad(ctx, ins, attrs):
    x = ins[0]
    shape = ctx.shape(x)
    nd = len(shape)
    mode = attrs.get("mode", "constant")
    if mode not in ("constant", "reflect", "edge", "wrap"):
        raise NotImplementedError(f"{ctx.where()}: Pad mode {mode!r} is not supported")
    axes_in = ins[3] if len(ins) > 3 and ins[3] is not None else None
    if len(ins) > 1 and (ctx.at_run_time(ins[1]) or
                         axes_in is not None and ctx.at_run_time(axes_in)):
        return _pad_run_time(ctx, x, ins, mode)  # (pads or axes read at run time)
    if len(ins) > 1:
        pads = _ints(ctx.value(ins[1], "Pad's pads"))
        value = ctx.value(ins[2], "Pad's constant_value") if len(ins) > 2 and \
            ins[2] is not None else None
        value = 0 if value is None else value.item()
        axes = _ints(ctx.value(ins[3], "Pad's axes")) if len(ins) > 3 and ins[3] is not None \
            else list(range(nd))
    else:
        pads = list(attrs.get("pads", attrs.get("paddings", [])))
        value = attrs.get("value", 0.0)
        axes = list(range(nd))
    k = len(axes)
    width = [[0, 0] for _ in range(nd)]
    for i, a in enumerate(axes):
        width[a % nd] = [pads[i], pads[i + k]]
    full = [list(w) for w in width]
    bad = _pad_error(shape, width, mode)
    if bad:
        raise ctx.fail(bad)
    pad_value = ctx.const(np.array(value, ctx.dtype(x)))
    if mode == "constant" and any(min(w) < 0 for w in width):
        # pad, then crop: a crop reaching into the other end's padding keeps it (onnxruntime)
        x = _nn.pad(x, [(max(b, 0), max(e, 0)) for b, e in width], pad_value=pad_value)
        return _op.strided_slice(x, [max(-b, 0) for b, _ in width],
                                 [e if e < 0 else _UNTIL_END for _, e in width])
    # negative pads crop (a dynamic axis's end counted from its end)
    starts = [-min(b, 0) for b, _ in width]
    ends = [(d if e >= 0 else e) if isinstance(d, DynamicDim) else d + min(e, 0)
            for d, (_, e) in zip(shape, width)]
    if any(s for s in starts) or any(e is not d and e != d for e, d in zip(ends, shape)):
        x = _op.strided_slice(x, starts, [_UNTIL_END if isinstance(e, DynamicDim) else e
                                          for e in ends])
    width = [(max(b, 0), max(e, 0)) for b, e in width]
    if not any(b or e for b, e in width):
        return x
    if mode == "wrap":
        # circular padding of the (cropped) input: gather each padded axis with indices
        # taken modulo its length
        for a, (b, e) in enumerate(width):
            if b or e:
                if isinstance(shape[a], DynamicDim):  # (its size read at run time)
                    pads = ctx.const(np.array([w[0] for w in full] + [w[1] for w in full],
                                              "int64"))
                    return run_time_sized.pad(ctx, ins[0], pads, pad_value, list(range(nd)),
                                              mode)
                n = ends[a] - starts[a]
                x = _op.take(x, ctx.const(np.arange(-b, n + e, dtype="int64") % n), axis=a)
        return x
    return _nn.pad(x, width, pad_value=pad_value, pad_mode=mode)


def _pad_error(shape, width, mode: str) -> str:
    """Why onnxruntime rejects ``width`` (begin, end per axis) on the static axes of
    ``shape``, or "": an output size below 0; in the other modes an axis padded or cropped
    down to nothing; for reflect a pad not below the (cropped) size (as
    ``run_time_sized`` checks at run time)."""
    for a, (d, (b, e)) in enumerate(zip(shape, width, strict=True)):
        if isinstance(d, DynamicDim):
            continue
        kept = d + min(b, 0) + min(e, 0)
        if d + b + e < 0:
            return f"pads ({b}, {e}) of axis {a} (size {d}) give a negative output size"
        if mode != "constant" and (b or e) and kept <= 0:
            return f"{mode} pads ({b}, {e}) of axis {a} (size {d}) leave nothing to pad from"
        if mode == "reflect" and (b >= kept or e >= kept):
            return f"reflect pads ({b}, {e}) of axis {a} must be below its size {kept}"
    return ""


def _pad_run_time(ctx, x, ins, mode: str):
    """Pad with pads or axes computed at run time (``run_time_sized.pad``); the constant
    value may be too."""
    nd = len(ctx.shape(x))
    axes = ins[3] if len(ins) > 3 and ins[3] is not None else None
    if axes is None:
        axes = list(range(nd))
    elif ctx.maybe_value(axes) is not None:
        axes = [int(a) % nd for a in ctx.maybe_value(axes).reshape(-1)]
        if len(set(axes)) != len(axes):
            raise ctx.fail(f"repeated axes {axes}")
    dt = ctx.dtype(x)
    if len(ins) > 2 and ins[2] is not None:
        v = ctx.maybe_value(ins[2])
        value = ctx.const(np.asarray(v, dt).reshape(())) if v is not None else \
            _op.cast(_op.reshape(ctx.fold(ins[2]), ()), dt)
    else:
        value = ctx.const(np.zeros((), dt))
    return run_time_sized.pad(ctx, x, ins[1], value, axes, mode)


def _copied_batch(n):
    """A rearrangement's batch in its reshapes: 0 (copied from axis 0, which every step keeps
    in place) when it is dynamic."""
    return 0 if isinstance(n, DynamicDim) else n


@register("DepthToSpace")
def _depth_to_space(ctx, ins, attrs):
    x = ins[0]
    n, c, h, w = ctx.shape(x)
    b = int(attrs["blocksize"])
    if all(isinstance(d, int) for d in (n, c, h, w)):  # one injective kernel (topi.rearrange)
        return _nn.depth_to_space(x, b, mode=attrs.get("mode", "DCR"))
    n = _copied_batch(n)
    if attrs.get("mode", "DCR") == "DCR":
        y = _op.reshape(x, (n, b, b, c // (b * b), h, w))
        y = _op.transpose(y, (0, 3, 4, 1, 5, 2))
    else:
        y = _op.reshape(x, (n, c // (b * b), b, b, h, w))
        y = _op.transpose(y, (0, 1, 4, 2, 5, 3))
    return _op.reshape(y, (n, c // (b * b), h * b, w * b))


@register("SpaceToDepth")
def _space_to_depth(ctx, ins, attrs):
    x = ins[0]
    n, c, h, w = ctx.shape(x)
    b = int(attrs["blocksize"])
    crd = attrs.get("mode", "DCR") == "CRD"
    if not crd and all(isinstance(d, int) for d in (n, c, h, w)):
        return _nn.space_to_depth(x, b)  # one injective kernel (topi.rearrange)
    n = _copied_batch(n)
    y = _op.reshape(x, (n, c, h // b, b, w // b, b))
    y = _op.transpose(y, (0, 1, 3, 5, 2, 4) if crd else (0, 3, 5, 1, 2, 4))
    return _op.reshape(y, (n, c * b * b, h // b, w // b))


@register("OneHot")
def _one_hot(ctx, ins, attrs):
    idx, depth, values = ins
    vals = ctx.value(values, "OneHot's values")
    if not ctx.dtype(idx).startswith("int"):
        idx = _op.cast(idx, "int64")
    axis = int(attrs.get("axis", -1))
    axis = axis + ctx.ndim(idx) + 1 if axis < 0 else axis  # (ONNX: -1 the new last axis)
    on, off, dt = ctx.const(vals[1]), ctx.const(vals[0]), str(vals.dtype)
    if ctx.at_run_time(depth):  # (dyn.one_hot: the new axis' size is relay.Any())
        return run_time_sized.one_hot(ctx, idx, depth, on, off, axis, dt)
    depth = int(ctx.value(depth, "OneHot's depth").reshape(-1)[0])
    if depth <= 0:  # (onnxruntime rejects it)
        raise ctx.fail(f"depth {depth} must be positive")
    idx = _normalize_indices(ctx, idx, depth)
    return _op.one_hot(idx, on, off, depth, axis, dt)


@register("Trilu")
def _trilu(ctx, ins, attrs):
    x = ins[0]
    shape = ctx.shape(x)
    upper = bool(attrs.get("upper", 1))
    zero = ctx.const(np.zeros((), ctx.dtype(x)))
    given = len(ins) > 1 and ins[1] is not None
    if given and ctx.at_run_time(ins[1]):  # (k computed at run time: the mask is too)
        k = _op.cast(_op.reshape(ctx.fold(ins[1]), ()), "int64")
        return _op.where(run_time_sized.trilu_mask(ctx, x, k, upper), x, zero)
    k = int(ctx.value(ins[1], "Trilu's k").reshape(-1)[0]) if given else 0
    if has_dynamic(shape[-2:]):  # (the last two sizes known at run time only)
        mask = run_time_sized.trilu_mask(ctx, x, ctx.const(np.array(k, "int64")), upper)
        return _op.where(mask, x, zero)
    ones = np.ones(shape[-2:], dtype=bool)
    mask = np.triu(ones, k) if upper else np.tril(ones, k)
    return _op.where(ctx.const(mask), x, zero)


@register("EyeLike")
def _eye_like(ctx, ins, attrs):
    from .registry import onnx_dtype

    shape = ctx.shape(ins[0])
    dt = onnx_dtype(attrs["dtype"]) if "dtype" in attrs else ctx.dtype(ins[0])
    k = int(attrs.get("k", 0))
    if has_dynamic(shape):  # (a run-time size: each element's row and column by a running count)
        ones = _op.cast(_op.ones_like(ins[0]), "int64")
        rows, cols = (_op.cumsum(ones, axis=a) for a in (0, 1))
        return _op.cast(_op.equal(_op.add(rows, ctx.const(np.array(k, "int64"))), cols), dt)
    return ctx.const(np.eye(shape[0], shape[1], k=k, dtype=dt))


@register("CumSum")
def _cumsum(ctx, ins, attrs):
    """Relay's cumsum (one pass per row, ``schedule/scan.py``); ``reverse`` flips around it."""
    x = ins[0]
    axis = int(ctx.value(ins[1], "CumSum's axis").reshape(-1)[0]) % len(ctx.shape(x))
    rev, excl = bool(attrs.get("reverse", 0)), bool(attrs.get("exclusive", 0))
    if rev:
        x = _op.reverse(x, axis)
    out = _op.cumsum(x, axis=axis, exclusive=excl)
    return _op.reverse(out, axis) if rev else out


@register("ReverseSequence")
def _reverse_sequence(ctx, ins, attrs):
    return _op.reverse_sequence(ins[0], ins[1], seq_axis=int(attrs.get("time_axis", 0)),
                                batch_axis=int(attrs.get("batch_axis", 1)))

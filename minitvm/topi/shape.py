"""Operator shape rules shared by the dialects' type relations and topi's numpy references."""

from __future__ import annotations

from ..ir.prim_expr import Any
from ..ir.type import TensorType
from ..tir.expr import FloorDiv, IntImm, Max, Min, Mul
from .layout import parse_layout
from .shape_conditions import agree, assume_divisible, assume_equal
from .utils import (
    arith,
    dims_equal,
    dims_product,
    is_static_dim,
    normalize_axis,
    shape_str,
    type_str,
)

__all__ = [
    "div_dim", "infer_reshape", "reshape_type", "reverse_reshape_type", "reshape_like_type",
    "transpose_axes", "expand_dims_type", "squeeze_axes", "squeeze_type", "slice_like_axes",
    "window_tuple", "spatial_axes", "pool_tuple", "pool_out_size", "adaptive_output_size",
    "hw_axes", "slice_start", "slice_extent",
]


# ------------------------------------------------------------------ reshape
def _factor(d):
    """A dim as (static multiplier, [symbolic factors])."""
    if is_static_dim(d):
        return d, []
    if isinstance(d, IntImm):
        return d.value, []
    if isinstance(d, Mul):
        sa, fa = _factor(d.a)
        sb, fb = _factor(d.b)
        return sa * sb, fa + fb
    return 1, [d]


def div_dim(num, den):
    """Exact division of dims, cancelling shared symbolic factors (``n*12 / 12 = n``)."""
    if isinstance(num, Any) or isinstance(den, Any):
        return Any()
    ns, nf = _factor(num)
    ds, df = _factor(den)
    rest = list(nf)
    for f in df:
        for i, g in enumerate(rest):
            if dims_equal(f, g):
                del rest[i]
                break
        else:
            assume_divisible(num, den)
            return FloorDiv(num if not is_static_dim(num) else IntImm("int32", num),
                            den if not is_static_dim(den) else IntImm("int32", den))
    if ds == 0 or ns % ds:
        if not rest and ds:
            raise ValueError(f"cannot split {num} elements evenly by {den}")
        assume_divisible(num, den)
        return FloorDiv(dims_product([ns] + rest), ds)
    return dims_product([ns // ds] + rest)


def infer_reshape(shape, newshape, allowzero: bool = False) -> tuple:
    """Output shape of ``reshape`` with TVM's special codes 0, -1, -2, -3, -4."""
    oshape: list = []
    used_in: set[int] = set()
    used_out: set[int] = set()
    infer_idx = -1
    src = 0
    i = 0
    ndim = len(shape)

    def need(k):
        if src + k > ndim:
            raise ValueError(f"reshape: newshape {list(newshape)} refers to more dimensions than "
                             f"the input shape {shape_str(shape)} has")

    while i < len(newshape):
        v = int(newshape[i])
        if v > 0 or (v == 0 and allowzero):
            oshape.append(v)
            src += 1
        elif v == 0:
            need(1)
            used_in.add(src)
            used_out.add(len(oshape))
            oshape.append(shape[src])
            src += 1
        elif v == -1:
            if infer_idx >= 0:
                raise ValueError("reshape: one and only one dim can be inferred (-1)")
            infer_idx = len(oshape)
            oshape.append(1)
            src += 1
        elif v == -2:
            while src < ndim:
                used_in.add(src)
                used_out.add(len(oshape))
                oshape.append(shape[src])
                src += 1
        elif v == -3:
            need(2)
            used_in.update((src, src + 1))
            used_out.add(len(oshape))
            oshape.append(dims_product([shape[src], shape[src + 1]]))
            src += 2
        elif v == -4:
            need(1)
            if i + 2 >= len(newshape):
                raise ValueError("reshape: -4 must be followed by two dims")
            d0 = shape[src]
            d1, d2 = int(newshape[i + 1]), int(newshape[i + 2])
            if d1 == -1 and d2 == -1:
                raise ValueError("reshape: -4 may infer only one of its two dims")
            if d1 == -1:
                d1 = div_dim(d0, d2)
            elif d2 == -1:
                d2 = div_dim(d0, d1)
            elif not agree(d0, d1 * d2):
                raise ValueError(f"reshape: -4 splits dim {d0} into {d1} x {d2}, which differ "
                                 "in size")
            used_in.add(src)
            used_out.update((len(oshape), len(oshape) + 1))
            oshape += [d1, d2]
            src += 1
            i += 2
        else:
            raise ValueError(f"reshape: unsupported special value {v} in newshape")
        i += 1

    if infer_idx >= 0:
        in_rest = dims_product([d for k, d in enumerate(shape) if k not in used_in])
        out_rest = dims_product([d for k, d in enumerate(oshape)
                                 if k not in used_out and k != infer_idx])
        if is_static_dim(out_rest) and out_rest == 0:
            raise ValueError("reshape: cannot infer a -1 dim next to a zero-sized dim")
        if is_static_dim(in_rest) and is_static_dim(out_rest) and in_rest % out_rest:
            raise ValueError(f"reshape: cannot reshape {shape_str(shape)} into "
                             f"{list(newshape)}: {in_rest} is not divisible by {out_rest}")
        oshape[infer_idx] = div_dim(in_rest, out_rest)
        rest = [d for k, d in enumerate(shape) if k not in used_in]
        unknown = [d for d in rest if isinstance(d, Any)]
        if len(unknown) == 1 and is_static_dim(out_rest) and \
                dims_product([d for d in rest if d is not unknown[0]]) == out_rest:
            # the one unknown size times the same static rest: the -1 is that size itself
            oshape[infer_idx] = unknown[0]
    else:
        a, b = dims_product(shape), dims_product(oshape)
        if is_static_dim(a) and is_static_dim(b) and a != b:
            raise ValueError(f"reshape: cannot reshape {shape_str(shape)} ({a} elements) into "
                             f"{shape_str(oshape)} ({b} elements)")
        assume_equal(a, b)
    return tuple(oshape)


def reshape_type(t: TensorType, attrs) -> TensorType:
    """``reshape`` of ``t`` by ReshapeAttrs (newshape, allowzero)."""
    return TensorType(infer_reshape(t.shape, attrs.newshape, attrs.allowzero), t.dtype)


def reverse_reshape_type(t: TensorType, attrs) -> TensorType:
    """``contrib_reverse_reshape``: the special codes are matched from the right."""
    out = infer_reshape(tuple(reversed(t.shape)), tuple(reversed(attrs.newshape)),
                        attrs.allowzero)
    return TensorType(tuple(reversed(out)), t.dtype)


def reshape_like_type(data: TensorType, like: TensorType, attrs) -> TensorType:
    """``reshape_like``: ``data[lhs_begin:lhs_end]`` takes ``like.shape[rhs_begin:rhs_end]``."""
    ls, rs = data.shape, like.shape
    le = len(ls) if attrs.lhs_end is None else attrs.lhs_end
    re = len(rs) if attrs.rhs_end is None else attrs.rhs_end
    lb, rb = attrs.lhs_begin, attrs.rhs_begin
    lb, le = (x + len(ls) if x < 0 else x for x in (lb, le))
    rb, re = (x + len(rs) if x < 0 else x for x in (rb, re))
    out = tuple(ls[:lb]) + tuple(rs[rb:re]) + tuple(ls[le:])
    a, b = dims_product(ls), dims_product(out)
    if is_static_dim(a) and is_static_dim(b) and a != b:
        raise TypeError(f"reshape_like: cannot reshape {type_str(data)} like {type_str(like)}: "
                        f"{a} vs {b} elements")
    assume_equal(a, b)
    return TensorType(out, data.dtype)


# ------------------------------------------------------------------ transpose / expand / squeeze
def transpose_axes(ndim, axes):
    """The permutation ``transpose`` applies (reversed dims when ``axes`` is empty)."""
    if axes is None or len(axes) == 0:
        return tuple(reversed(range(ndim)))
    if len(axes) != ndim:
        raise ValueError(f"transpose: axes {list(axes)} must name each of the {ndim} dims once")
    norm = tuple(normalize_axis(a, ndim, "transpose") for a in axes)
    if sorted(norm) != list(range(ndim)):
        raise ValueError(f"transpose: axes {list(axes)} is not a permutation of {ndim} dims")
    return norm


def expand_dims_type(t: TensorType, attrs) -> TensorType:
    """``expand_dims``: ``num_newaxis`` unit dims inserted at ``axis``."""
    ndim, n = len(t.shape), int(attrs.num_newaxis)
    if n < 0:
        raise ValueError(f"expand_dims: num_newaxis must be >= 0, got {n}")
    axis = int(attrs.axis)
    if not -ndim - 1 <= axis <= ndim:
        raise ValueError(f"expand_dims: axis {axis} is out of range [{-ndim - 1}, {ndim}] for "
                         f"{type_str(t)}")
    pivot = axis if axis >= 0 else axis + ndim + 1
    shape = t.shape[:pivot] + (1,) * n + t.shape[pivot:]
    return TensorType(shape, t.dtype)


def squeeze_axes(shape, axis):
    """The dims ``squeeze`` drops: those in ``axis`` (each must be 1), or every static 1."""
    ndim = len(shape)
    if axis is None:
        return [i for i, d in enumerate(shape) if is_static_dim(d) and d == 1]
    out = []
    for a in axis:
        k = normalize_axis(a, ndim, "squeeze")
        d = shape[k]
        if not agree(d, 1):  # (a symbolic one must be 1 at each call)
            raise ValueError(f"squeeze: cannot squeeze axis {a} of shape {shape_str(shape)}: "
                             f"its dimension is {d}, not 1")
        if k in out:  # (numpy refuses it too; the compute would drop one axis, the type two)
            raise ValueError(f"squeeze: axis {a} is listed twice in {list(axis)}")
        out.append(k)
    return out


def squeeze_type(t: TensorType, attrs) -> TensorType:
    """``squeeze`` of ``t`` by SqueezeAttrs (axis)."""
    drop = set(squeeze_axes(t.shape, attrs.axis))
    return TensorType(tuple(d for i, d in enumerate(t.shape) if i not in drop), t.dtype)


def slice_like_axes(data: TensorType, like: TensorType, axes):
    """The axes ``slice_like`` cuts (all of ``like``'s when ``axes`` is None)."""
    if axes is None:
        if len(like.shape) > len(data.shape):
            raise TypeError(f"slice_like: shape_like {type_str(like)} has more dims than the "
                            f"data {type_str(data)}")
        return list(range(len(like.shape)))
    return [normalize_axis(a, len(data.shape), "slice_like") for a in axes]


# ------------------------------------------------------------------ convolution / pooling windows
def window_tuple(value, nd, name, op_name):
    """A convolution attribute (strides, dilation, ...) as ``nd`` values; one value repeats."""
    if isinstance(value, int):
        return (value,) * nd
    value = tuple(int(v) for v in value)
    if len(value) == 1:
        return value * nd
    if len(value) != nd:
        raise ValueError(f"{op_name}: {name} must have {nd} values, got {list(value)}")
    return value


def spatial_axes(layout: str, ndim: int, spatial: str, op_name: str) -> list[int]:
    """Positions of the pooled axes (``spatial``, e.g. ``HW``) in ``layout``; none may be split."""
    axes = parse_layout(layout, op_name)
    if len(axes) != ndim:
        raise TypeError(f"{op_name}: input has rank {ndim} but layout {layout} has {len(axes)} "
                        f"axes")
    names = [n for n, _ in axes]
    out = []
    for a in spatial:
        if a not in names:
            raise ValueError(f"{op_name}: layout {layout} has no {a} axis")
        if a.lower() in names:
            raise ValueError(f"{op_name}: layout {layout} splits the pooled axis {a}")
        out.append(names.index(a))
    return out


def pool_tuple(v, n):
    """A pooling attribute as ``n`` values (an int or a single value repeats)."""
    if isinstance(v, int):
        return (v,) * n
    v = tuple(int(x) for x in v)
    return v * n if len(v) == 1 else v


def pool_out_size(size, k, pb, pa, stride, dilation, ceil_mode):
    """Pooled extent of a dim of ``size`` (window k, paddings pb/pa, floor or ceil mode)."""
    dk = (k - 1) * dilation + 1
    if ceil_mode:
        return arith(lambda s: (s + pb + pa - dk + stride - 1) // stride + 1, size)
    return arith(lambda s: (s + pb + pa - dk) // stride + 1, size)


def adaptive_output_size(attrs, shape, idx, op_name):
    """(H, W) of adaptive pooling: ``output_size`` (None entries keep the input's), global 1x1."""
    if "output_size" not in attrs:
        return (1, 1)
    size = tuple(attrs.output_size or ())
    if len(size) == 0:
        return tuple(shape[i] for i in idx)
    if len(size) == 1:
        return size * 2
    if len(size) != 2:
        raise ValueError(f"{op_name}: output_size must have 1 or 2 values, got {list(size)}")
    return tuple(shape[i] if s is None else s for s, i in zip(size, idx))


def hw_axes(layout, ndim, op_name):
    """Positions of H and W in ``layout``, which must fit a rank-``ndim`` tensor."""
    axes = parse_layout(layout, op_name)
    names = [n for n, _ in axes]
    if len(axes) != ndim or "H" not in names or "W" not in names:
        raise TypeError(f"{op_name}: layout {layout} does not fit a rank-{ndim} tensor with H "
                        f"and W axes")
    return names.index("H"), names.index("W")


# ------------------------------------------------------------------ strided_slice
def _imm(v: int, like) -> IntImm:
    return IntImm(getattr(like, "dtype", "int64"), int(v))


def _clamp_index(i: int | None, n, step: int, default_lo: bool):
    """Python's clamping of a slice bound ``i`` (None: the slice's own end) on a symbolic
    size ``n``: a negative bound counts from the end, a bound past the end stops there
    (``-1`` / ``n - 1`` bound a negative step's reach)."""
    lo, hi = (0, n) if step > 0 else (-1, n - 1)
    if i is None:
        return _imm(lo, n) if default_lo else hi
    if step > 0 and i == 0:  # (a size is never negative)
        return _imm(0, n)
    if i >= 2**31 - 1:  # (an "until the end" bound; as an IntImm it would wrap)
        return n if step > 0 else hi
    if i <= -(2**31):  # (ONNX's INT64_MIN "before the start": n + i would wrap in int64)
        return _imm(lo, n)
    if i < 0:
        return Max(n + _imm(i, n), _imm(lo, n))
    return Min(_imm(i, n), hi)


def slice_start(n, begin: int | None, step: int):
    """The first index ``x[begin::step]`` reads on an axis of symbolic size ``n``, clamped as
    Python clamps it (an expression of ``n``)."""
    from ..arith import Analyzer

    return Analyzer().simplify(_clamp_index(begin, n, step, step > 0))


def slice_extent(n, begin: int | None, end: int | None, step: int):
    """``len(range(n)[begin:end:step])`` for a symbolic size ``n``: an expression (Min / Max
    clamp the bounds, an empty slice gives 0), as ``slice(begin, end, step).indices(n)``
    gives it for an int."""
    from ..arith import Analyzer

    start = _clamp_index(begin, n, step, step > 0)
    stop = _clamp_index(end, n, step, step < 0)
    span = stop - start if step > 0 else start - stop
    a = abs(step)
    count = FloorDiv(span + _imm(a - 1, n), _imm(a, n)) if a != 1 else span
    return Analyzer().simplify(Max(count, _imm(0, n)))

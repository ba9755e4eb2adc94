"""Shape manipulation ops: permute_dims, reshape, expand_dims, squeeze, flatten, concat, split,
broadcast_to. They move data without computing on it (injective), so the output shape is a
rearrangement of the input's."""

from __future__ import annotations

from collections.abc import Sequence

from ...ir.op import Op, OpPattern
from ...ir.prim_expr import IntImm, PrimExpr
from ...tir import expr as T
from ..expr import Call, Expr, ShapeExpr, Tuple
from ..struct_info import (
    ShapeStructInfo,
    StructInfo,
    TensorStructInfo,
    TupleStructInfo,
    as_dim,
)
from ._common import (
    UNKNOWN_NDIM,
    add,
    arg_sinfo,
    check_num_args,
    fail,
    floordiv,
    fmt_dim,
    fmt_shape,
    fmt_sinfo,
    int_attr,
    is_const,
    is_void,
    make_tensor,
    mul,
    normalize_axes,
    normalize_axis,
    prove_equal,
    prove_not_equal,
    shape_expr_values,
    shape_product,
    shape_values,
    simplify,
    sub,
    tensor_arg,
    tensor_args,
    tuple_tensor_fields,
)
from .base import StructInfoError, register_op_rule
from .op_attrs import (
    ConcatAttrs,
    ExpandDimsAttrs,
    PermuteDimsAttrs,
    RepeatAttrs,
    SplitAttrs,
    SqueezeAttrs,
)

__all__ = [
    "permute_dims", "reshape", "expand_dims", "squeeze", "flatten", "concat", "split",
    "broadcast_to", "repeat",
]


def _axes_list(axes) -> tuple | None:
    if axes is None:
        return None
    if isinstance(axes, int | IntImm):
        return (int(axes),)
    return tuple(int(a) for a in axes)


# --------------------------------------------------------------------------- permute_dims
def _infer_permute_dims(call: Call, ctx) -> StructInfo:
    (x,) = tensor_args(call, ["x"])
    axes = call.attrs.axes
    if axes is not None and x.ndim != UNKNOWN_NDIM and len(axes) != x.ndim:
        fail(call, f"expects as many axes as the input has dimensions, but the input is "
                   f"{fmt_sinfo(x)} and the axes are {list(axes)}")
    if x.ndim == UNKNOWN_NDIM:
        return make_tensor(None, x.dtype, UNKNOWN_NDIM if axes is None else len(axes),
                           x.vdevice)
    perm = normalize_axes(call, x.ndim, axes) if axes is not None else \
        list(range(x.ndim - 1, -1, -1))
    if perm == list(range(x.ndim)):
        return x
    dims = shape_expr_values(x)
    if dims is None:
        return make_tensor(None, x.dtype, x.ndim, x.vdevice)
    return make_tensor([dims[a] for a in perm], x.dtype, vdevice=x.vdevice)


register_op_rule("relax.permute_dims", _infer_permute_dims, pattern=OpPattern.INJECTIVE,
                 num_inputs=1, arguments=("x",), attrs_type=PermuteDimsAttrs)


def permute_dims(x: Expr, axes: Sequence[int] | None = None) -> Call:
    """Permute the dimensions of ``x`` (reverse them when ``axes`` is None)."""
    return Call(Op.get("relax.permute_dims"), [x], PermuteDimsAttrs(axes=_axes_list(axes)))


# --------------------------------------------------------------------------- reshape
def _maybe_empty(x: Expr) -> bool:
    """Whether ``x`` may have no elements (a static 0 dimension, or a shape not known)."""
    s = getattr(x, "struct_info_", None)
    dims = shape_values(s) if isinstance(s, TensorStructInfo) else None
    if dims is None:
        return True
    return not all(isinstance(d, IntImm) and d.value > 0 for d in dims)


def _new_shape_expr(x: Expr, shape) -> Expr:
    """``shape`` as a Relax expr; a ``-1`` entry is inferred from ``x``'s shape (as TVM)."""
    if isinstance(shape, Expr) and not isinstance(shape, ShapeExpr):
        return shape  # a shape-valued Var or call: used as is
    values = list(shape.values) if isinstance(shape, ShapeExpr) else list(shape)
    dims: list[PrimExpr] = []
    infer_at = -1
    known: PrimExpr = IntImm("int64", 1)
    for i, v in enumerate(values):
        if isinstance(v, bool) or not isinstance(v, int | PrimExpr) or \
                not getattr(as_dim(v), "dtype", "").startswith("int"):
            raise StructInfoError(f"relax.reshape: the new shape must be integers, got "
                                  f"{values!r}")
        d = as_dim(v)
        if is_const(d, -1):
            if infer_at != -1:
                raise StructInfoError(f"relax.reshape: at most one -1 is allowed in the new "
                                      f"shape, got {fmt_shape(values)}")
            infer_at = i
        else:
            if isinstance(d, IntImm) and (d.value < 0 or (d.value == 0
                                                          and not _maybe_empty(x))):
                raise StructInfoError(f"relax.reshape: the new shape must be positive except "
                                      f"for a single -1 (0 only for an empty tensor), got "
                                      f"{fmt_shape(values)}")
            known = mul(known, d)
        dims.append(d)
    if infer_at == -1:
        return ShapeExpr(dims)
    s = getattr(x, "struct_info_", None)
    old = shape_values(s) if isinstance(s, TensorStructInfo) else None
    if old is None:
        raise StructInfoError(f"relax.reshape: inferring the -1 of new shape "
                              f"{fmt_shape(values)} needs an input of known shape, got "
                              f"{fmt_sinfo(s)}")
    if is_const(known, 0):
        raise StructInfoError(f"relax.reshape: the -1 of new shape {fmt_shape(values)} is "
                              "ambiguous when the other dimensions multiply to 0")
    dims[infer_at] = simplify(floordiv(shape_product(old), known))
    return ShapeExpr(dims)


def _infer_reshape(call: Call, ctx) -> StructInfo:
    check_num_args(call, 2)
    x = tensor_arg(call, 0, "x")
    new = arg_sinfo(call, 1)
    if not isinstance(new, ShapeStructInfo):
        fail(call, f"expects the new shape to be a shape value, got {fmt_sinfo(new)}",
             type_error=True)
    old = shape_values(x)
    if new.values is not None and old is not None:
        p_new, p_old = shape_product(new.values), shape_product(old)
        if prove_not_equal(simplify(p_old, ctx), simplify(p_new, ctx), ctx):
            fail(call, f"cannot reshape {fmt_sinfo(x)} (of {fmt_dim(simplify(p_old, ctx))} "
                       f"elements) to {fmt_shape(new.values)} (of "
                       f"{fmt_dim(simplify(p_new, ctx))} elements)")
    target = call.args[1]
    if not isinstance(target, ShapeExpr) and new.values is not None:
        return make_tensor(new.values, x.dtype, vdevice=x.vdevice)
    return TensorStructInfo(target, x.dtype, x.vdevice)


register_op_rule("relax.reshape", _infer_reshape, pattern=OpPattern.INJECTIVE, num_inputs=2,
                 arguments=("x", "shape"))


def reshape(x: Expr, shape) -> Call:
    """Reshape ``x`` to ``shape`` (a list of dims with at most one -1, or a shape Expr)."""
    return Call(Op.get("relax.reshape"), [x, _new_shape_expr(x, shape)])


# --------------------------------------------------------------------------- expand_dims
def _infer_expand_dims(call: Call, ctx) -> StructInfo:
    (x,) = tensor_args(call, ["x"])
    axes = call.attrs.axis
    if x.ndim == UNKNOWN_NDIM:
        return make_tensor(None, x.dtype, UNKNOWN_NDIM, x.vdevice)
    n_out = x.ndim + len(axes)
    norm = normalize_axes(call, n_out, axes)
    dims = shape_expr_values(x)
    if dims is None:
        return make_tensor(None, x.dtype, n_out, x.vdevice)
    out: list = [None] * n_out
    for a in norm:
        out[a] = IntImm("int64", 1)
    rest = iter(dims)
    out = [d if d is not None else next(rest) for d in out]
    return make_tensor(out, x.dtype, vdevice=x.vdevice)


register_op_rule("relax.expand_dims", _infer_expand_dims, pattern=OpPattern.INJECTIVE,
                 num_inputs=1, arguments=("x",), attrs_type=ExpandDimsAttrs)


def expand_dims(x: Expr, axis: int | Sequence[int]) -> Call:
    """Insert unit dimensions at positions ``axis`` (of the output)."""
    return Call(Op.get("relax.expand_dims"), [x], ExpandDimsAttrs(axis=_axes_list(axis)))


# --------------------------------------------------------------------------- squeeze
def _infer_squeeze(call: Call, ctx) -> StructInfo:
    (x,) = tensor_args(call, ["x"])
    axis = call.attrs.axis
    if axis is not None and len(axis) == 0:
        return x
    if x.ndim == UNKNOWN_NDIM:
        return make_tensor(None, x.dtype, UNKNOWN_NDIM, x.vdevice)
    values = shape_values(x)
    remove = [False] * x.ndim
    if axis is not None:
        norm = normalize_axes(call, x.ndim, axis)
        if values is None:
            return make_tensor(None, x.dtype, x.ndim - len(norm), x.vdevice)
        for a in norm:
            d = values[a]
            if isinstance(d, IntImm) and d.value != 1:
                fail(call, f"can only squeeze dimensions of length 1, but dimension {a} of "
                           f"{fmt_sinfo(x)} is {fmt_dim(d)} (a symbolic length must be cast "
                           "to 1 with match_cast first)")
            remove[a] = True
    else:
        if values is None:
            return make_tensor(None, x.dtype, UNKNOWN_NDIM, x.vdevice)
        remove = [is_const(d, 1) for d in values]
    out = [d for d, r in zip(values, remove) if not r]
    if not isinstance(x.shape, ShapeExpr):
        if len(out) == x.ndim:
            return x
        return make_tensor(None, x.dtype, len(out) if axis is not None else UNKNOWN_NDIM,
                           x.vdevice)
    return make_tensor(out, x.dtype, vdevice=x.vdevice)


register_op_rule("relax.squeeze", _infer_squeeze, pattern=OpPattern.INJECTIVE, num_inputs=1,
                 arguments=("x",), attrs_type=SqueezeAttrs)


def squeeze(x: Expr, axis: int | Sequence[int] | None = None) -> Call:
    """Remove unit dimensions (those at ``axis``, or all of them when None)."""
    return Call(Op.get("relax.squeeze"), [x], SqueezeAttrs(axis=_axes_list(axis)))


# --------------------------------------------------------------------------- flatten
def _infer_flatten(call: Call, ctx) -> StructInfo:
    (x,) = tensor_args(call, ["x"])
    if x.ndim == UNKNOWN_NDIM:
        return make_tensor(None, x.dtype, 1, x.vdevice)
    if x.ndim == 0:
        return make_tensor([1], x.dtype, vdevice=x.vdevice)
    if x.ndim == 1 and x.shape is not None:
        return x
    dims = shape_expr_values(x)
    if dims is None:
        return make_tensor(None, x.dtype, 1, x.vdevice)
    return make_tensor([shape_product(dims)], x.dtype, vdevice=x.vdevice)


register_op_rule("relax.flatten", _infer_flatten, pattern=OpPattern.INJECTIVE, num_inputs=1,
                 arguments=("x",))


def flatten(x: Expr) -> Call:
    """Flatten ``x`` into one dimension."""
    return Call(Op.get("relax.flatten"), [x])


# --------------------------------------------------------------------------- concat
def _infer_concat(call: Call, ctx) -> StructInfo:
    check_num_args(call, 1)
    fields = tuple_tensor_fields(call, 0)
    if not fields:
        fail(call, "expects at least one tensor in the input tuple, got an empty tuple")
    dtype = fields[0].dtype
    void = False
    ndim = UNKNOWN_NDIM
    all_dims = []
    for s in fields:
        if is_void(s.dtype):
            void = True
        elif is_void(dtype):
            dtype = s.dtype
        elif s.dtype != dtype:
            fail(call, f"expects all input tensors to have the same dtype, but got {dtype} and "
                       f"{s.dtype} (inputs {', '.join(fmt_sinfo(f) for f in fields)})")
        if ndim == UNKNOWN_NDIM:
            ndim = s.ndim
        elif s.ndim != UNKNOWN_NDIM and s.ndim != ndim:
            fail(call, f"expects all input tensors to have the same rank, but got {ndim} and "
                       f"{s.ndim} (inputs {', '.join(fmt_sinfo(f) for f in fields)})")
        all_dims.append(shape_expr_values(s))
    if void:
        dtype = "void"
    if ndim == UNKNOWN_NDIM:
        return fields[0] if len(fields) == 1 else make_tensor(None, dtype, ndim)
    axis = call.attrs.axis
    axis = normalize_axis(call, ndim, 0 if axis is None else axis)
    if len(fields) == 1:
        return fields[0]
    if any(d is None for d in all_dims):
        return make_tensor(None, dtype, ndim)
    first = all_dims[0][axis]
    if all(prove_equal(d[axis], first, ctx) for d in all_dims):
        total = mul(first, IntImm(first.dtype, len(all_dims)))
    else:
        total = IntImm(first.dtype, 0)
        for d in all_dims:
            total = add(total, d[axis])
        total = simplify(total, ctx)  # x, y, x: n * m * 2 + k, as TVM's analyzer writes it
    unknown = False
    for k in range(ndim):
        if k == axis:
            continue
        for d in all_dims[1:]:
            if prove_not_equal(d[k], all_dims[0][k], ctx):
                fail(call, f"expects the inputs to have the same shape except on the "
                           f"concatenation axis {axis}, but dimension {k} is "
                           f"{fmt_dim(all_dims[0][k])} and {fmt_dim(d[k])} (inputs "
                           f"{', '.join(fmt_sinfo(f) for f in fields)})")
            if not prove_equal(d[k], all_dims[0][k], ctx):
                unknown = True
    if unknown:
        return make_tensor(None, dtype, ndim)
    out = list(all_dims[0])
    out[axis] = total
    return make_tensor(out, dtype)


register_op_rule("relax.concat", _infer_concat, pattern=OpPattern.INJECTIVE, num_inputs=1,
                 arguments=("tensors",), attrs_type=ConcatAttrs)


def concat(tensors, axis: int | None = 0) -> Call:
    """Concatenate a tuple (or list) of tensors along ``axis``."""
    if not isinstance(tensors, Expr):
        tensors = Tuple(list(tensors))
    return Call(Op.get("relax.concat"), [tensors],
                ConcatAttrs(axis=None if axis is None else int_attr(axis, "relax.concat's axis")))


# --------------------------------------------------------------------------- split
def _clamp(v, lo, hi):
    """min(max(v, lo), hi) with constants folded."""
    v = as_dim(v)
    if isinstance(v, IntImm) and isinstance(lo, IntImm) and v.value < lo.value:
        v = lo
    elif not isinstance(v, IntImm) or not isinstance(lo, IntImm):
        v = T.Max(v, lo)
    if isinstance(v, IntImm) and isinstance(hi, IntImm):
        return IntImm(v.dtype, min(v.value, hi.value))
    return T.Min(v, hi)


def _infer_split(call: Call, ctx) -> StructInfo:
    (x,) = tensor_args(call, ["x"])
    ios = call.attrs.indices_or_sections
    axis = UNKNOWN_NDIM if x.ndim == UNKNOWN_NDIM else normalize_axis(call, x.ndim,
                                                                       call.attrs.axis)
    dims = shape_expr_values(x)
    if isinstance(ios, tuple):
        if not ios:
            return TupleStructInfo([x])
        n_out = len(ios) + 1
        if dims is None:
            return TupleStructInfo([make_tensor(None, x.dtype, x.ndim, x.vdevice)] * n_out)
        length = dims[axis]
        zero = IntImm("int64", 0)
        outs = []
        for i in range(n_out):
            lo = zero if i == 0 else as_dim(ios[i - 1])
            hi = as_dim(ios[i]) if i < n_out - 1 else length
            lo = _clamp(lo, zero, length)
            hi = _clamp(hi, lo, length)
            d = list(dims)
            d[axis] = simplify(sub(hi, lo), ctx)
            outs.append(make_tensor(d, x.dtype, vdevice=x.vdevice))
        return TupleStructInfo(outs)
    n = int(ios)
    if n <= 0:
        fail(call, f"the number of sections must be a positive integer, got {n}")
    if n == 1:
        return TupleStructInfo([x])
    if dims is None:
        return TupleStructInfo([make_tensor(None, x.dtype, x.ndim, x.vdevice)] * n)
    length = dims[axis]
    if isinstance(length, IntImm):
        part = IntImm(length.dtype, -(-length.value // n))
    else:
        part = simplify(floordiv(T.Add(length, IntImm(length.dtype, n - 1)),
                                 IntImm(length.dtype, n)), ctx)
    d = list(dims)
    d[axis] = part
    first = make_tensor(d, x.dtype, vdevice=x.vdevice)
    last = list(dims)
    last[axis] = simplify(sub(length, mul(part, IntImm(length.dtype, n - 1))), ctx)
    return TupleStructInfo([first] * (n - 1) + [make_tensor(last, x.dtype, vdevice=x.vdevice)])


register_op_rule("relax.split", _infer_split, pattern=OpPattern.INJECTIVE, num_inputs=1,
                 arguments=("x",), attrs_type=SplitAttrs)


def split(x: Expr, indices_or_sections: int | Sequence[int], axis: int = 0) -> Call:
    """Split ``x`` along ``axis`` into N equal sections or at the given indices."""
    if isinstance(indices_or_sections, int | IntImm):
        ios = int(indices_or_sections)
    else:
        ios = tuple(indices_or_sections)
    return Call(Op.get("relax.split"), [x], SplitAttrs(indices_or_sections=ios, axis=int_attr(axis, "relax.split's axis")))


# --------------------------------------------------------------------------- broadcast_to
def _infer_broadcast_to(call: Call, ctx) -> StructInfo:
    check_num_args(call, 2)
    x = tensor_arg(call, 0, "x")
    tgt = arg_sinfo(call, 1)
    if not isinstance(tgt, ShapeStructInfo):
        fail(call, f"expects the target shape to be a shape value, got {fmt_sinfo(tgt)}",
             type_error=True)
    if x.ndim != UNKNOWN_NDIM and tgt.ndim != UNKNOWN_NDIM and tgt.ndim < x.ndim:
        fail(call, f"cannot broadcast {fmt_sinfo(x)} to a shape of fewer dimensions "
                   f"({fmt_shape(tgt.values) if tgt.values is not None else tgt.ndim})")
    target = call.args[1]
    old = shape_values(x)
    if old is not None and tgt.values is not None:
        new = tgt.values
        for i in range(1, len(old) + 1):
            o, t = old[len(old) - i], new[len(new) - i]
            if is_const(o, 1):
                continue
            if prove_not_equal(o, t, ctx):
                fail(call, f"cannot broadcast {fmt_sinfo(x)} to {fmt_shape(new)}: dimension "
                           f"{len(new) - i} of the target is {fmt_dim(t)} while dimension "
                           f"{len(old) - i} of the input is {fmt_dim(o)}")
    if not isinstance(target, ShapeExpr) and tgt.values is not None:
        return make_tensor(tgt.values, x.dtype, vdevice=x.vdevice)
    return TensorStructInfo(target, x.dtype, x.vdevice)


register_op_rule("relax.broadcast_to", _infer_broadcast_to, pattern=OpPattern.BROADCAST,
                 num_inputs=2, arguments=("x", "shape"))


def broadcast_to(x: Expr, shape) -> Call:
    """Broadcast ``x`` to ``shape`` (numpy rules)."""
    if not isinstance(shape, Expr):
        shape = ShapeExpr(list(shape))
    return Call(Op.get("relax.broadcast_to"), [x, shape])


# --------------------------------------------------------------------------- repeat
def _infer_repeat(call: Call, ctx) -> StructInfo:
    (x,) = tensor_args(call, ["data"])
    reps, axis = call.attrs.repeats, call.attrs.axis
    if reps < 0:
        fail(call, f"repeats must be non-negative, got {reps}")
    if axis is None:
        dims = shape_expr_values(x)
        if dims is None:
            return make_tensor(None, x.dtype, 1, x.vdevice)
        return make_tensor([mul(shape_product(dims), reps)], x.dtype, vdevice=x.vdevice)
    if x.ndim == UNKNOWN_NDIM:
        return make_tensor(None, x.dtype, UNKNOWN_NDIM, x.vdevice)
    axis = normalize_axis(call, x.ndim, axis)
    dims = shape_expr_values(x)
    if dims is None:
        return make_tensor(None, x.dtype, x.ndim, x.vdevice)
    out = list(dims)
    out[axis] = mul(out[axis], reps)
    return make_tensor(out, x.dtype, vdevice=x.vdevice)


register_op_rule("relax.repeat", _infer_repeat, pattern=OpPattern.INJECTIVE, num_inputs=1,
                 arguments=("data",), attrs_type=RepeatAttrs)


def repeat(data: Expr, repeats: int, axis: int | None = None) -> Call:
    """Repeat each element ``repeats`` times along ``axis`` (of the flattened input if None)."""
    return Call(Op.get("relax.repeat"), [data],
                RepeatAttrs(repeats=int(repeats), axis=None if axis is None else int(axis)))

"""The rest of TVM's data-movement and small compute ops: flip, tile, stack, one_hot, the
gathers and scatters, collapse_sum_like/to, meshgrid, masked_fill, outer, log_add_exp, eye,
eye_like, bucketize and ewise_fma. Each op is registered once with its struct-info rule (shapes
symbolic where the inputs are) and printed / parsed by the generic TVMScript handling."""

from __future__ import annotations

from ...ir.op import Op, OpPattern
from ...ir.prim_expr import IntImm
from ..expr import Call, Expr, PrimValue, ShapeExpr, Tuple
from ..struct_info import (
    PrimStructInfo,
    ShapeStructInfo,
    StructInfo,
    TensorStructInfo,
    TupleStructInfo,
)
from ._common import (
    UNKNOWN_NDIM,
    arg_sinfo,
    check_num_args,
    fail,
    fmt_dim,
    fmt_sinfo,
    is_const,
    is_float,
    is_int,
    is_uint,
    is_void,
    make_tensor,
    mul,
    normalize_axis,
    prove_equal,
    prove_not_equal,
    shape_expr_values,
    shape_values,
    tensor_arg,
    tensor_args,
    tuple_tensor_fields,
    with_dtype,
)
from .base import register_op_rule
from .binary import infer_broadcast
from .op_attrs import _attrs

__all__ = [
    "flip", "tile", "stack", "one_hot", "gather_elements", "gather_nd", "scatter_elements",
    "scatter_nd", "collapse_sum_like", "collapse_sum_to", "meshgrid", "masked_fill", "outer",
    "log_add_exp", "eye", "eye_like", "bucketize", "ewise_fma", "index_tensor", "index_put",
    "slice_scatter", "hamming_window", "wrap_param", "multinomial_from_uniform",
    "dynamic_strided_slice",
]

FlipAttrs = _attrs("FlipAttrs", [("axis", 0)], "Attributes of flip.")
TileAttrs = _attrs("TileAttrs", [("repeats", ())], "Attributes of tile.")
StackAttrs = _attrs("StackAttrs", [("axis", 0)], "Attributes of stack.")
OneHotAttrs = _attrs("OneHotAttrs", [("depth", 1), ("axis", -1)], "Attributes of one_hot.")
GatherElementsAttrs = _attrs("GatherElementsAttrs", [("axis", 0)],
                             "Attributes of gather_elements.")
GatherNDAttrs = _attrs("GatherNDAttrs", [("batch_dims", 0)], "Attributes of gather_nd.")
ScatterElementsAttrs = _attrs("ScatterElementsAttrs", [("axis", 0), ("reduction", "update")],
                              "Attributes of scatter_elements.")
ScatterNDAttrs = _attrs("ScatterNDAttrs", [("reduction", "update")], "Attributes of scatter_nd.")
MeshgridAttrs = _attrs("MeshgridAttrs", [("indexing", "ij")], "Attributes of meshgrid.")
EyeAttrs = _attrs("EyeAttrs", [("dtype", "float32")], "Attributes of eye / eye_like.")
BucketizeAttrs = _attrs("BucketizeAttrs", [("out_int32", False), ("right", False)],
                        "Attributes of bucketize.")

_REDUCTIONS = ("update", "add", "mul", "min", "max")
_I64 = "int64"


def _int_dtype(call: Call, s: TensorStructInfo, what: str) -> None:
    if not is_void(s.dtype) and not (is_int(s.dtype) or is_uint(s.dtype)):
        fail(call, f"requires {what} to have an integer dtype, but it is {fmt_sinfo(s)}",
             type_error=True)


def _static_int(call: Call, d, what: str) -> int:
    if not isinstance(d, IntImm):
        fail(call, f"requires {what} to be a static integer, but it is {fmt_dim(d)}")
    return int(d.value)


# --------------------------------------------------------------------------- flip
def _infer_flip(call: Call, ctx) -> StructInfo:
    (x,) = tensor_args(call, ["data"])
    if x.ndim != UNKNOWN_NDIM:
        normalize_axis(call, x.ndim, call.attrs.axis)
    return x


register_op_rule("relax.flip", _infer_flip, pattern=OpPattern.INJECTIVE, num_inputs=1,
                 arguments=("data",), attrs_type=FlipAttrs)


def flip(data: Expr, axis: int) -> Call:
    """``data`` reversed along ``axis``."""
    return Call(Op.get("relax.flip"), [data], FlipAttrs(axis=int(axis)))


# --------------------------------------------------------------------------- tile
def _infer_tile(call: Call, ctx) -> StructInfo:
    (x,) = tensor_args(call, ["data"])
    reps = [int(r) for r in call.attrs.repeats]
    if any(r < 0 for r in reps):
        fail(call, f"repeats must be non-negative, got {reps}")
    if x.ndim == UNKNOWN_NDIM:
        return make_tensor(None, x.dtype, UNKNOWN_NDIM, x.vdevice)
    nd = max(x.ndim, len(reps))
    dims = shape_expr_values(x)
    if dims is None:
        return make_tensor(None, x.dtype, nd, x.vdevice)
    dims = [IntImm(_I64, 1)] * (nd - len(dims)) + list(dims)
    reps = [1] * (nd - len(reps)) + reps
    return make_tensor([mul(d, IntImm(d.dtype, r)) for d, r in zip(dims, reps)], x.dtype,
                       vdevice=x.vdevice)


register_op_rule("relax.tile", _infer_tile, pattern=OpPattern.INJECTIVE, num_inputs=1,
                 arguments=("data",), attrs_type=TileAttrs)


def tile(data: Expr, repeats) -> Call:
    """``numpy.tile(data, repeats)``."""
    reps = (int(repeats),) if isinstance(repeats, int) else tuple(int(r) for r in repeats)
    return Call(Op.get("relax.tile"), [data], TileAttrs(repeats=reps))


# --------------------------------------------------------------------------- stack
def _same_fields(call: Call, fields, what: str) -> tuple[str, int, list | None]:
    """The common dtype, rank and dims (None when any is unknown) of tuple fields."""
    dtype, ndim, dims = fields[0].dtype, fields[0].ndim, shape_expr_values(fields[0])
    for s in fields[1:]:
        if not is_void(s.dtype) and not is_void(dtype) and s.dtype != dtype:
            fail(call, f"expects all {what} to have the same dtype, got {dtype} and {s.dtype}")
        if s.ndim != UNKNOWN_NDIM and ndim != UNKNOWN_NDIM and s.ndim != ndim:
            fail(call, f"expects all {what} to have the same rank, got {ndim} and {s.ndim}")
        ndim = s.ndim if ndim == UNKNOWN_NDIM else ndim
        other = shape_expr_values(s)
        if dims is not None and other is not None:
            for k, (a, b) in enumerate(zip(dims, other)):
                if prove_not_equal(a, b, ctx=None):
                    fail(call, f"expects all {what} to have the same shape, but dim {k} is "
                               f"{fmt_dim(a)} and {fmt_dim(b)}")
        else:
            dims = None
    return dtype, ndim, list(dims) if dims is not None else None


def _infer_stack(call: Call, ctx) -> StructInfo:
    check_num_args(call, 1)
    fields = tuple_tensor_fields(call, 0)
    if not fields:
        fail(call, "expects at least one tensor in the input tuple, got an empty tuple")
    dtype, ndim, dims = _same_fields(call, fields, "input tensors")
    if ndim == UNKNOWN_NDIM:
        return make_tensor(None, dtype, UNKNOWN_NDIM)
    axis = normalize_axis(call, ndim + 1, call.attrs.axis)
    if dims is None:
        return make_tensor(None, dtype, ndim + 1)
    return make_tensor(dims[:axis] + [IntImm(_I64, len(fields))] + dims[axis:], dtype)


register_op_rule("relax.stack", _infer_stack, pattern=OpPattern.INJECTIVE, num_inputs=1,
                 arguments=("tensors",), attrs_type=StackAttrs)


def stack(tensors, axis: int = 0) -> Call:
    """The tensors (one shape) stacked along a new dim ``axis``."""
    if not isinstance(tensors, Expr):
        tensors = Tuple(list(tensors))
    return Call(Op.get("relax.stack"), [tensors], StackAttrs(axis=int(axis)))


# --------------------------------------------------------------------------- one_hot
def _prim_operand(call: Call, i: int, what: str) -> str:
    s = arg_sinfo(call, i)
    if not isinstance(s, PrimStructInfo):
        fail(call, f"expects {what} to be an R.Prim value, got {fmt_sinfo(s)}", type_error=True)
    return s.dtype


def _infer_one_hot(call: Call, ctx) -> StructInfo:
    check_num_args(call, 3)
    ind = tensor_arg(call, 0, "indices")
    _int_dtype(call, ind, "the indices")
    on = _prim_operand(call, 1, "on_value")
    off = _prim_operand(call, 2, "off_value")
    if on != off:
        fail(call, f"expects on_value and off_value to have the same dtype, got {on} and {off}")
    depth = int(call.attrs.depth)
    if depth <= 0:
        fail(call, f"depth must be positive, got {depth}")
    if ind.ndim == UNKNOWN_NDIM:
        return make_tensor(None, on, UNKNOWN_NDIM)
    axis = call.attrs.axis
    axis = ind.ndim if axis == -1 else normalize_axis(call, ind.ndim + 1, axis)
    dims = shape_expr_values(ind)
    if dims is None:
        return make_tensor(None, on, ind.ndim + 1)
    return make_tensor(list(dims[:axis]) + [IntImm(_I64, depth)] + list(dims[axis:]), on)


register_op_rule("relax.one_hot", _infer_one_hot, pattern=OpPattern.INJECTIVE, num_inputs=3,
                 arguments=("indices", "on_value", "off_value"), attrs_type=OneHotAttrs)


def _prim(v) -> Expr:
    return v if isinstance(v, Expr) else PrimValue(v)


def one_hot(indices: Expr, on_value, off_value, depth: int, axis: int = -1) -> Call:
    """``on_value`` at each index along a new dim ``axis`` of size ``depth``, else
    ``off_value``."""
    return Call(Op.get("relax.one_hot"), [indices, _prim(on_value), _prim(off_value)],
                OneHotAttrs(depth=int(depth), axis=int(axis)))


# --------------------------------------------------------------------------- gathers
def _infer_gather_elements(call: Call, ctx) -> StructInfo:
    x, ind = tensor_args(call, ["data", "indices"])
    _int_dtype(call, ind, "the indices")
    if x.ndim != UNKNOWN_NDIM and ind.ndim != UNKNOWN_NDIM and x.ndim != ind.ndim:
        fail(call, f"expects data and indices to have the same rank, got {fmt_sinfo(x)} and "
                   f"{fmt_sinfo(ind)}")
    if x.ndim != UNKNOWN_NDIM:
        normalize_axis(call, x.ndim, call.attrs.axis)
    if ind.shape is not None:
        return TensorStructInfo(ind.shape, x.dtype, x.vdevice)
    return make_tensor(None, x.dtype, max(x.ndim, ind.ndim), x.vdevice)


register_op_rule("relax.gather_elements", _infer_gather_elements, pattern=OpPattern.INJECTIVE,
                 num_inputs=2, arguments=("data", "indices"), attrs_type=GatherElementsAttrs)


def gather_elements(data: Expr, indices: Expr, axis: int = 0) -> Call:
    """``numpy.take_along_axis(data, indices, axis)``."""
    return Call(Op.get("relax.gather_elements"), [data, indices],
                GatherElementsAttrs(axis=int(axis)))


def _infer_gather_nd(call: Call, ctx) -> StructInfo:
    x, ind = tensor_args(call, ["data", "indices"])
    _int_dtype(call, ind, "the indices")
    nb = int(call.attrs.batch_dims)
    xd, idims = shape_expr_values(x), shape_expr_values(ind)
    if idims is None or xd is None:
        return make_tensor(None, x.dtype, UNKNOWN_NDIM, x.vdevice)
    if not idims:
        fail(call, "expects indices of rank at least 1 (the last dim holds the index tuple)")
    m = _static_int(call, idims[-1], "the last dim of indices")
    if nb < 0 or nb + m > len(xd):
        fail(call, f"batch_dims {nb} plus the index length {m} exceed the rank {len(xd)} of "
                   f"data {fmt_sinfo(x)}")
    for k in range(nb):
        if prove_not_equal(xd[k], idims[k], ctx):
            fail(call, f"expects the batch dim {k} of data and indices to match, got "
                       f"{fmt_dim(xd[k])} and {fmt_dim(idims[k])}")
    return make_tensor(list(idims[:-1]) + list(xd[nb + m:]), x.dtype, vdevice=x.vdevice)


register_op_rule("relax.gather_nd", _infer_gather_nd, pattern=OpPattern.INJECTIVE,
                 num_inputs=2, arguments=("data", "indices"), attrs_type=GatherNDAttrs)


def gather_nd(data: Expr, indices: Expr, batch_dims: int = 0) -> Call:
    """``data[indices[..., 0], indices[..., 1], ...]`` (index tuples on the last dim)."""
    return Call(Op.get("relax.gather_nd"), [data, indices],
                GatherNDAttrs(batch_dims=int(batch_dims)))


# --------------------------------------------------------------------------- scatters
def _scatter_args(call: Call) -> tuple:
    """``(data, indices, updates)`` of a scatter call, checked: integer indices, a known
    reduction, and data and updates of one dtype."""
    x, ind, upd = tensor_args(call, ["data", "indices", "updates"])
    _int_dtype(call, ind, "the indices")
    r = call.attrs.reduction
    if r not in _REDUCTIONS:
        fail(call, f"reduction must be one of {', '.join(_REDUCTIONS)}, got {r!r}")
    if not is_void(x.dtype) and not is_void(upd.dtype) and x.dtype != upd.dtype:
        fail(call, f"expects data and updates to have the same dtype, got {fmt_sinfo(x)} and "
                   f"{fmt_sinfo(upd)}")
    return x, ind, upd


def _infer_scatter_elements(call: Call, ctx) -> StructInfo:
    x, ind, upd = _scatter_args(call)
    ranks = {s.ndim for s in (x, ind, upd)} - {UNKNOWN_NDIM}
    if len(ranks) > 1:
        fail(call, f"expects data, indices and updates of one rank, got {fmt_sinfo(x)}, "
                   f"{fmt_sinfo(ind)} and {fmt_sinfo(upd)}")
    if x.ndim != UNKNOWN_NDIM:
        normalize_axis(call, x.ndim, call.attrs.axis)
    di, du = shape_expr_values(ind), shape_expr_values(upd)
    if di is not None and du is not None:
        for k, (a, b) in enumerate(zip(di, du)):
            if prove_not_equal(a, b, ctx):
                fail(call, f"expects indices and updates of one shape, but dim {k} is "
                           f"{fmt_dim(a)} and {fmt_dim(b)}")
    return x


register_op_rule("relax.scatter_elements", _infer_scatter_elements,
                 pattern=OpPattern.OPAQUE, num_inputs=3,
                 arguments=("data", "indices", "updates"), attrs_type=ScatterElementsAttrs)


def scatter_elements(data: Expr, indices: Expr, updates: Expr, axis: int = 0,
                     reduction: str = "update") -> Call:
    """ONNX ScatterElements: ``updates`` written (or combined) at ``indices`` along ``axis``."""
    return Call(Op.get("relax.scatter_elements"), [data, indices, updates],
                ScatterElementsAttrs(axis=int(axis), reduction=str(reduction)))


def _infer_scatter_nd(call: Call, ctx) -> StructInfo:
    x, ind, upd = _scatter_args(call)
    xd, idims, ud = shape_expr_values(x), shape_expr_values(ind), shape_expr_values(upd)
    if xd is not None and idims is not None and ud is not None:
        if not idims:
            fail(call, "expects indices of rank at least 1 (the last dim holds the index tuple)")
        m = _static_int(call, idims[-1], "the last dim of indices")
        if m > len(xd):
            fail(call, f"the index length {m} exceeds the rank of data {fmt_sinfo(x)}")
        want = list(idims[:-1]) + list(xd[m:])
        if len(want) != len(ud) or any(prove_not_equal(a, b, ctx) for a, b in zip(want, ud)):
            fail(call, f"expects updates of shape indices.shape[:-1] + data.shape[{m}:] = "
                       f"({', '.join(fmt_dim(d) for d in want)}), got {fmt_sinfo(upd)}")
    return x


register_op_rule("relax.scatter_nd", _infer_scatter_nd, pattern=OpPattern.OPAQUE,
                 num_inputs=3, arguments=("data", "indices", "updates"),
                 attrs_type=ScatterNDAttrs)


def scatter_nd(data: Expr, indices: Expr, updates: Expr, reduction: str = "update") -> Call:
    """ONNX ScatterND: ``updates`` written (or combined) at the index tuples of ``indices``."""
    return Call(Op.get("relax.scatter_nd"), [data, indices, updates],
                ScatterNDAttrs(reduction=str(reduction)))


# --------------------------------------------------------------------------- collapse_sum
def _collapse_check(call: Call, x: TensorStructInfo, target, ctx) -> None:
    xd = shape_expr_values(x)
    if xd is None or target is None:
        return
    if len(target) > len(xd):
        fail(call, f"cannot collapse {fmt_sinfo(x)} to a shape of higher rank "
                   f"({', '.join(fmt_dim(d) for d in target)})")
    for k in range(1, len(target) + 1):
        t, s = target[-k], xd[-k]
        if not is_const(t, 1) and prove_not_equal(t, s, ctx):
            fail(call, f"cannot collapse {fmt_sinfo(x)} to "
                       f"({', '.join(fmt_dim(d) for d in target)}): dim {len(target) - k} "
                       f"is {fmt_dim(t)}, neither 1 nor the input's {fmt_dim(s)}")


def _infer_collapse_sum_like(call: Call, ctx) -> StructInfo:
    x, like = tensor_args(call, ["data", "collapse_target"])
    _collapse_check(call, x, shape_expr_values(like), ctx)
    if like.shape is not None:
        return TensorStructInfo(like.shape, x.dtype, x.vdevice)
    return make_tensor(None, x.dtype, like.ndim, x.vdevice)


def _infer_collapse_sum_to(call: Call, ctx) -> StructInfo:
    check_num_args(call, 2)
    x = tensor_arg(call, 0, "data")
    s = arg_sinfo(call, 1)
    if not isinstance(s, ShapeStructInfo):
        fail(call, f"requires the shape argument to be a shape value, got {fmt_sinfo(s)}",
             type_error=True)
    _collapse_check(call, x, s.values, ctx)
    if s.values is not None:
        return make_tensor(list(s.values), x.dtype, vdevice=x.vdevice)
    return make_tensor(None, x.dtype, s.ndim, x.vdevice)


register_op_rule("relax.collapse_sum_like", _infer_collapse_sum_like,
                 pattern=OpPattern.COMM_REDUCE, num_inputs=2,
                 arguments=("data", "collapse_target"))
register_op_rule("relax.collapse_sum_to", _infer_collapse_sum_to, pattern=OpPattern.COMM_REDUCE,
                 num_inputs=2, arguments=("data", "shape"))


def collapse_sum_like(data: Expr, collapse_target: Expr) -> Call:
    """``data`` summed down to the shape of ``collapse_target`` (undoes broadcasting)."""
    return Call(Op.get("relax.collapse_sum_like"), [data, collapse_target])


def collapse_sum_to(data: Expr, shape) -> Call:
    """``data`` summed down to ``shape`` (undoes broadcasting)."""
    if not isinstance(shape, Expr):
        shape = ShapeExpr(list(shape))
    return Call(Op.get("relax.collapse_sum_to"), [data, shape])


# --------------------------------------------------------------------------- meshgrid
def _infer_meshgrid(call: Call, ctx) -> StructInfo:
    check_num_args(call, 1)
    fields = tuple_tensor_fields(call, 0)
    if not fields:
        fail(call, "expects at least one tensor in the input tuple, got an empty tuple")
    indexing = call.attrs.indexing
    if indexing not in ("ij", "xy"):
        fail(call, f"indexing must be 'ij' or 'xy', got {indexing!r}")
    dims = []
    dtype = fields[0].dtype
    for k, f in enumerate(fields):
        if f.ndim not in (0, 1, UNKNOWN_NDIM):
            fail(call, f"expects 0-D or 1-D tensors, but tensor {k} is {fmt_sinfo(f)}")
        if f.dtype != dtype and not is_void(f.dtype):
            fail(call, f"expects tensors of one dtype, got {dtype} and {f.dtype}")
        d = shape_expr_values(f)
        dims.append(None if d is None else (d[0] if d else IntImm(_I64, 1)))
    n = len(fields)
    if any(d is None for d in dims):
        out = make_tensor(None, dtype, n)
    else:
        if indexing == "xy" and n >= 2:
            dims[0], dims[1] = dims[1], dims[0]
        out = make_tensor(dims, dtype)
    return TupleStructInfo([out] * n)


register_op_rule("relax.meshgrid", _infer_meshgrid, pattern=OpPattern.INJECTIVE, num_inputs=1,
                 arguments=("tensors",), attrs_type=MeshgridAttrs)


def meshgrid(tensors, indexing: str = "ij") -> Call:
    """``numpy.meshgrid`` of 1-D tensors (a tuple of ``len(tensors)`` grids)."""
    if not isinstance(tensors, Expr):
        tensors = Tuple(list(tensors))
    return Call(Op.get("relax.meshgrid"), [tensors], MeshgridAttrs(indexing=str(indexing)))


# --------------------------------------------------------------------------- masked_fill
def masked_fill(x: Expr, mask: Expr, value: Expr) -> Call:
    """``value`` where ``mask`` is true, ``x`` elsewhere (``where(mask, full_like(x, value),
    x)``, as TVM composes it)."""
    from .create import full_like
    from .search import where

    return where(mask, full_like(x, value), x)


# --------------------------------------------------------------------------- outer
def _infer_outer(call: Call, ctx) -> StructInfo:
    a, b = tensor_args(call, ["x1", "x2"])
    for s, what in ((a, "x1"), (b, "x2")):
        if s.ndim not in (1, UNKNOWN_NDIM):
            fail(call, f"expects 1-D tensors, but {what} is {fmt_sinfo(s)}")
    if not is_void(a.dtype) and not is_void(b.dtype) and a.dtype != b.dtype:
        fail(call, f"expects x1 and x2 of one dtype, got {a.dtype} and {b.dtype}")
    da, db = shape_expr_values(a), shape_expr_values(b)
    if da is None or db is None:
        return make_tensor(None, a.dtype, 2, a.vdevice)
    return make_tensor([da[0], db[0]], a.dtype, vdevice=a.vdevice)


register_op_rule("relax.outer", _infer_outer, pattern=OpPattern.BROADCAST, num_inputs=2,
                 arguments=("x1", "x2"))


def outer(x1: Expr, x2: Expr) -> Call:
    """The outer product ``x1[:, None] * x2[None, :]`` of two 1-D tensors."""
    return Call(Op.get("relax.outer"), [x1, x2])


# --------------------------------------------------------------------------- log_add_exp
def _infer_log_add_exp(call: Call, ctx) -> StructInfo:
    out = infer_broadcast(call, ctx, None)
    dtype = getattr(out, "dtype", "void")
    if not is_void(dtype) and not is_float(dtype):
        fail(call, f"requires float operands, got dtype {dtype}")
    return out


register_op_rule("relax.log_add_exp", _infer_log_add_exp, pattern=OpPattern.BROADCAST,
                 num_inputs=2, arguments=("x1", "x2"))


def log_add_exp(x1: Expr, x2: Expr) -> Call:
    """``log(exp(x1) + exp(x2))`` without overflow, with numpy broadcasting."""
    return Call(Op.get("relax.log_add_exp"), [x1, x2])


# --------------------------------------------------------------------------- eye
def _prim_dim(call: Call, i: int, what: str):
    s = arg_sinfo(call, i)
    if not isinstance(s, PrimStructInfo) or not (is_int(s.dtype) or is_uint(s.dtype)):
        fail(call, f"expects {what} to be an integer R.Prim value, got {fmt_sinfo(s)}",
             type_error=True)
    a = call.args[i]
    v = a.value if isinstance(a, PrimValue) else s.value
    if v is not None and v.dtype != _I64:
        from ...tir import expr as T

        v = IntImm(_I64, v.value) if isinstance(v, IntImm) else T.Cast(_I64, v)
    return v


def _infer_eye(call: Call, ctx) -> StructInfo:
    check_num_args(call, 3)
    n = _prim_dim(call, 0, "n")
    m = _prim_dim(call, 1, "m")
    _prim_dim(call, 2, "k")
    dtype = call.attrs.dtype
    if n is None or m is None:
        return make_tensor(None, dtype, 2)
    return make_tensor([n, m], dtype)


def _infer_eye_like(call: Call, ctx) -> StructInfo:
    check_num_args(call, 2)
    x = tensor_arg(call, 0, "x")
    _prim_dim(call, 1, "k")
    if x.ndim not in (2, UNKNOWN_NDIM):
        fail(call, f"expects a 2-D tensor, got {fmt_sinfo(x)}")
    dtype = call.attrs.dtype
    return x if is_void(dtype) else with_dtype(x, dtype)


register_op_rule("relax.eye", _infer_eye, pattern=OpPattern.INJECTIVE, num_inputs=3,
                 arguments=("n", "m", "k"), attrs_type=EyeAttrs)
register_op_rule("relax.eye_like", _infer_eye_like, pattern=OpPattern.INJECTIVE, num_inputs=2,
                 arguments=("x", "k"), attrs_type=EyeAttrs)


def eye(n, m=None, k=0, dtype: str = "float32") -> Call:
    """An ``n x m`` matrix with ones on the ``k``-th diagonal."""
    m = n if m is None else m
    return Call(Op.get("relax.eye"), [_prim(n), _prim(m), _prim(k)], EyeAttrs(dtype=str(dtype)))


def eye_like(x: Expr, k=0, dtype: str | None = None) -> Call:
    """An identity-like matrix shaped as ``x`` (ones on the ``k``-th diagonal)."""
    return Call(Op.get("relax.eye_like"), [x, _prim(k)],
                EyeAttrs(dtype="void" if dtype is None else str(dtype)))


# --------------------------------------------------------------------------- bucketize
def _infer_bucketize(call: Call, ctx) -> StructInfo:
    x, b = tensor_args(call, ["input_tensor", "boundaries"])
    if b.ndim not in (1, UNKNOWN_NDIM):
        fail(call, f"expects 1-D boundaries, got {fmt_sinfo(b)}")
    if not is_void(x.dtype) and not is_void(b.dtype) and x.dtype != b.dtype:
        fail(call, f"expects input and boundaries of one dtype, got {x.dtype} and {b.dtype}")
    return with_dtype(x, "int32" if call.attrs.out_int32 else "int64")


register_op_rule("relax.bucketize", _infer_bucketize, pattern=OpPattern.OPAQUE, num_inputs=2,
                 arguments=("input_tensor", "boundaries"), attrs_type=BucketizeAttrs)


def bucketize(input_tensor: Expr, boundaries: Expr, out_int32: bool = False,
              right: bool = False) -> Call:
    """The bucket of each element among sorted ``boundaries`` (``torch.bucketize``)."""
    return Call(Op.get("relax.bucketize"), [input_tensor, boundaries],
                BucketizeAttrs(out_int32=bool(out_int32), right=bool(right)))


# --------------------------------------------------------------------------- ewise_fma
def _infer_ewise_fma(call: Call, ctx) -> StructInfo:
    a, b, c = tensor_args(call, ["x1", "x2", "x3"])
    dtypes = {s.dtype for s in (a, b, c)} - {"void"}
    if len(dtypes) > 1:
        fail(call, f"expects three tensors of one dtype, got {fmt_sinfo(a)}, {fmt_sinfo(b)} "
                   f"and {fmt_sinfo(c)}")
    ranks = {s.ndim for s in (a, b, c)} - {UNKNOWN_NDIM}
    if len(ranks) > 1:
        fail(call, f"expects three tensors of one shape, got {fmt_sinfo(a)}, {fmt_sinfo(b)} "
                   f"and {fmt_sinfo(c)}")
    da, db, dc = (shape_values(s) for s in (a, b, c))
    if da is not None:
        for other in (db, dc):
            if other is not None and any(not prove_equal(p, q, ctx) and
                                         prove_not_equal(p, q, ctx) for p, q in zip(da, other)):
                fail(call, f"expects three tensors of one shape, got {fmt_sinfo(a)}, "
                           f"{fmt_sinfo(b)} and {fmt_sinfo(c)}")
    return a


register_op_rule("relax.ewise_fma", _infer_ewise_fma, pattern=OpPattern.ELEMWISE, num_inputs=3,
                 arguments=("x1", "x2", "x3"))


def ewise_fma(x1: Expr, x2: Expr, x3: Expr) -> Call:
    """``x1 * x2 + x3`` elementwise (three tensors of one shape)."""
    return Call(Op.get("relax.ewise_fma"), [x1, x2, x3])


# --------------------------------------------------------------------------- index_tensor / put
def _index_tuple(call: Call, i: int, x: TensorStructInfo, ctx):
    """The index tensors of argument ``i`` and their broadcast dims (None when unknown)."""
    from ._common import broadcast_shapes

    fields = tuple_tensor_fields(call, i)
    if not fields:
        fail(call, "expects at least one index tensor, got an empty tuple")
    for k, f in enumerate(fields):
        _int_dtype(call, f, f"index tensor {k}")
    if x.ndim != UNKNOWN_NDIM and len(fields) > x.ndim:
        fail(call, f"got {len(fields)} index tensors for data of rank {x.ndim} ({fmt_sinfo(x)})")
    dims = shape_expr_values(fields[0])
    for f in fields[1:]:
        other = shape_expr_values(f)
        if dims is None or other is None:
            dims = None
            break
        dims = broadcast_shapes(call, dims, other, ctx)
        if dims is None:
            break
    return fields, dims


def _infer_index_tensor(call: Call, ctx) -> StructInfo:
    check_num_args(call, 2)
    x = tensor_arg(call, 0, "data")
    fields, bdims = _index_tuple(call, 1, x, ctx)
    xd = shape_expr_values(x)
    if bdims is None or xd is None:
        return make_tensor(None, x.dtype, UNKNOWN_NDIM, x.vdevice)
    return make_tensor(list(bdims) + list(xd[len(fields):]), x.dtype, vdevice=x.vdevice)


register_op_rule("relax.index_tensor", _infer_index_tensor, pattern=OpPattern.INJECTIVE,
                 num_inputs=2, arguments=("data", "indices"))


def _as_tuple(v) -> Expr:
    return v if isinstance(v, Expr) else Tuple(list(v))


def index_tensor(data: Expr, indices) -> Call:
    """numpy / torch advanced indexing ``data[indices[0], indices[1], ...]``: the index tensors
    broadcast together and select along the leading dims."""
    return Call(Op.get("relax.index_tensor"), [data, _as_tuple(indices)])


IndexPutAttrs = _attrs("IndexPutAttrs", [("accumulate", False)], "Attributes of index_put.")


def _infer_index_put(call: Call, ctx) -> StructInfo:
    check_num_args(call, 3)
    x = tensor_arg(call, 0, "data")
    fields, bdims = _index_tuple(call, 1, x, ctx)
    v = tensor_arg(call, 2, "values")
    if not is_void(v.dtype) and not is_void(x.dtype) and v.dtype != x.dtype:
        fail(call, f"expects values of the data's dtype, got {fmt_sinfo(v)} for {fmt_sinfo(x)}")
    xd, vd = shape_expr_values(x), shape_expr_values(v)
    if bdims is not None and xd is not None and vd is not None:
        target = list(bdims) + list(xd[len(fields):])
        if len(vd) > len(target):
            fail(call, f"values {fmt_sinfo(v)} do not broadcast to the indexed shape "
                       f"({', '.join(fmt_dim(d) for d in target)})")
        for a, b in zip(reversed(vd), reversed(target)):
            if not is_const(a, 1) and prove_not_equal(a, b, ctx):
                fail(call, f"values {fmt_sinfo(v)} do not broadcast to the indexed shape "
                           f"({', '.join(fmt_dim(d) for d in target)})")
    return x


register_op_rule("relax.index_put", _infer_index_put, pattern=OpPattern.OPAQUE, num_inputs=3,
                 arguments=("data", "indices", "values"), attrs_type=IndexPutAttrs)


def index_put(data: Expr, indices, values: Expr, accumulate: bool = False) -> Call:
    """``data`` with ``data[indices] = values`` (``+=`` when ``accumulate``), torch's
    ``index_put``."""
    return Call(Op.get("relax.index_put"), [data, _as_tuple(indices), values],
                IndexPutAttrs(accumulate=bool(accumulate)))


# --------------------------------------------------------------------------- slice_scatter
SliceScatterAttrs = _attrs("SliceScatterAttrs", [("axis", 0)], "Attributes of slice_scatter.")


def _infer_slice_scatter(call: Call, ctx) -> StructInfo:
    check_num_args(call, 5)
    x = tensor_arg(call, 0, "input_tensor")
    src = tensor_arg(call, 1, "src")
    vals = [_prim_dim(call, k, what) for k, what in ((2, "start"), (3, "end"), (4, "step"))]
    if not is_void(src.dtype) and not is_void(x.dtype) and src.dtype != x.dtype:
        fail(call, f"expects src of the input's dtype, got {fmt_sinfo(src)} for {fmt_sinfo(x)}")
    if x.ndim != UNKNOWN_NDIM and src.ndim != UNKNOWN_NDIM and x.ndim != src.ndim:
        fail(call, f"expects src of the input's rank, got {fmt_sinfo(src)} for {fmt_sinfo(x)}")
    if x.ndim == UNKNOWN_NDIM:
        return x
    axis = normalize_axis(call, x.ndim, call.attrs.axis)
    step = vals[2]
    if isinstance(step, IntImm) and step.value <= 0:
        fail(call, f"step must be positive, got {step.value}")
    xd, sd = shape_expr_values(x), shape_expr_values(src)
    if xd is not None and sd is not None:
        for d, (a, b) in enumerate(zip(xd, sd)):
            if d != axis and prove_not_equal(a, b, ctx):
                fail(call, f"expects src to match the input on dim {d}, got {fmt_dim(b)} and "
                           f"{fmt_dim(a)}")
        start, end = vals[0], vals[1]
        if all(isinstance(v, IntImm) for v in (start, end, step, xd[axis], sd[axis])):
            want = len(range(*slice(start.value, end.value, step.value).indices(
                xd[axis].value)))
            if want != sd[axis].value:
                fail(call, f"expects src of length {want} on axis {axis} (the slice "
                           f"{start.value}:{end.value}:{step.value}), got {sd[axis].value}")
    return x


register_op_rule("relax.slice_scatter", _infer_slice_scatter, pattern=OpPattern.INJECTIVE,
                 num_inputs=5, arguments=("input_tensor", "src", "start", "end", "step"),
                 attrs_type=SliceScatterAttrs)


def slice_scatter(input_tensor: Expr, src: Expr, start, end, step=1, axis: int = 0) -> Call:
    """``input_tensor`` with the slice ``start:end:step`` of ``axis`` replaced by ``src``."""
    return Call(Op.get("relax.slice_scatter"),
                [input_tensor, src, _prim(start), _prim(end), _prim(step)],
                SliceScatterAttrs(axis=int(axis)))


# --------------------------------------------------------------------------- hamming_window
HammingAttrs = _attrs("HammingWindowAttrs", [("dtype", "float32")],
                      "Attributes of hamming_window.")


def _infer_hamming(call: Call, ctx) -> StructInfo:
    check_num_args(call, 4)
    size = _prim_dim(call, 0, "window_size")
    _prim_dim(call, 1, "periodic")
    for k, what in ((2, "alpha"), (3, "beta")):
        s = arg_sinfo(call, k)
        if not isinstance(s, PrimStructInfo):
            fail(call, f"expects {what} to be an R.Prim value, got {fmt_sinfo(s)}",
                 type_error=True)
    dtype = call.attrs.dtype
    if not is_float(dtype):
        fail(call, f"dtype must be a float type, got {dtype}")
    if isinstance(size, IntImm) and size.value < 1:
        fail(call, f"window_size must be positive, got {size.value}")
    return make_tensor(None if size is None else [size], dtype, 1)


register_op_rule("relax.hamming_window", _infer_hamming, pattern=OpPattern.INJECTIVE,
                 num_inputs=4, arguments=("window_size", "periodic", "alpha", "beta"),
                 attrs_type=HammingAttrs)


def hamming_window(window_size, periodic, alpha, beta, dtype: str = "float32") -> Call:
    """A Hamming window ``alpha - beta * cos(2 pi k / N)`` (torch.hamming_window)."""
    def f(v):
        if isinstance(v, float):
            from ...tir import expr as T

            return PrimValue(T.FloatImm("float32", v))
        return _prim(int(v) if isinstance(v, bool) else v)

    return Call(Op.get("relax.hamming_window"),
                [f(window_size), f(periodic), f(alpha), f(beta)], HammingAttrs(dtype=str(dtype)))


# --------------------------------------------------------------------------- wrap_param
WrapParamAttrs = _attrs("WrapParamAttrs", [("dtype", "float32")], "Attributes of wrap_param.")


def _infer_wrap_param(call: Call, ctx) -> StructInfo:
    (x,) = tensor_args(call, ["data"])
    return with_dtype(x, call.attrs.dtype)


register_op_rule("relax.wrap_param", _infer_wrap_param, pattern=OpPattern.ELEMWISE,
                 num_inputs=1, arguments=("data",), attrs_type=WrapParamAttrs)


def wrap_param(data: Expr, dtype: str = "float32") -> Call:
    """A parameter (constant) cast to ``dtype`` where it is used (mixed-precision weights)."""
    return Call(Op.get("relax.wrap_param"), [data], WrapParamAttrs(dtype=str(dtype)))


# --------------------------------------------------------------------------- multinomial
MultinomialAttrs = _attrs("MultinomialFromUniformAttrs", [("dtype", "int64")],
                          "Attributes of multinomial_from_uniform.")


def _infer_multinomial(call: Call, ctx) -> StructInfo:
    prob, u, idx = tensor_args(call, ["prob", "uniform_sample", "sample_indices"])
    if not is_void(prob.dtype) and not is_float(prob.dtype):
        fail(call, f"requires float probabilities, got {fmt_sinfo(prob)}")
    if not is_void(u.dtype) and u.dtype != prob.dtype:
        fail(call, f"requires uniform_sample of the probabilities' dtype, got {fmt_sinfo(u)}")
    _int_dtype(call, idx, "sample_indices")
    for s, what in ((prob, "prob"), (u, "uniform_sample"), (idx, "sample_indices")):
        if s.ndim not in (2, UNKNOWN_NDIM):
            fail(call, f"expects {what} to be 2-D, got {fmt_sinfo(s)}")
    ud, idd = shape_expr_values(u), shape_expr_values(idx)
    for d in (ud, idd):
        if d is not None and not is_const(d[1], 1):
            fail(call, f"expects uniform_sample and sample_indices of shape (n, 1), got "
                       f"{fmt_sinfo(u)} and {fmt_sinfo(idx)}")
    if ud is not None and idd is not None and prove_not_equal(ud[0], idd[0], ctx):
        fail(call, f"expects uniform_sample and sample_indices with one row per sample, got "
                   f"{fmt_sinfo(u)} and {fmt_sinfo(idx)}")
    dtype = call.attrs.dtype
    if not is_int(dtype):
        fail(call, f"dtype must be an integer type, got {dtype}")
    return with_dtype(u, dtype)


register_op_rule("relax.multinomial_from_uniform", _infer_multinomial,
                 pattern=OpPattern.OPAQUE, num_inputs=3,
                 arguments=("prob", "uniform_sample", "sample_indices"),
                 attrs_type=MultinomialAttrs)


def multinomial_from_uniform(prob: Expr, uniform_sample: Expr, sample_indices: Expr,
                             dtype: str = "int64") -> Call:
    """Samples of the categorical rows of ``prob`` picked by ``sample_indices``, from uniform
    draws: the first class whose cumulative probability exceeds the draw."""
    return Call(Op.get("relax.multinomial_from_uniform"), [prob, uniform_sample, sample_indices],
                MultinomialAttrs(dtype=str(dtype)))


# --------------------------------------------------------------------------- dynamic slice
def _infer_dynamic_strided_slice(call: Call, ctx) -> StructInfo:
    x, *bounds = tensor_args(call, ["x", "begin", "end", "strides"])
    for s, what in zip(bounds, ("begin", "end", "strides")):
        _int_dtype(call, s, what)
        if s.ndim not in (1, UNKNOWN_NDIM):
            fail(call, f"expects {what} to be a 1-D tensor, got {fmt_sinfo(s)}")
        d = shape_expr_values(s)
        if d is not None and x.ndim != UNKNOWN_NDIM and isinstance(d[0], IntImm) and \
                d[0].value != x.ndim:
            fail(call, f"expects {what} to have one value per axis of the input ({x.ndim}), "
                       f"got {fmt_sinfo(s)}")
    return make_tensor(None, x.dtype, x.ndim, x.vdevice)


register_op_rule("relax.dynamic_strided_slice", _infer_dynamic_strided_slice,
                 pattern=OpPattern.INJECTIVE, num_inputs=4,
                 arguments=("x", "begin", "end", "strides"))
# its result shape is only known at run time: lowered as soon as the input's shape is known
Op.get("relax.dynamic_strided_slice").set_attr("RequiresArgumentShapes", False)


def dynamic_strided_slice(x: Expr, begin: Expr, end: Expr, strides: Expr) -> Call:
    """``x[begin:end:strides]`` on every axis with the bounds given as 1-D int tensors."""
    return Call(Op.get("relax.dynamic_strided_slice"), [x, begin, end, strides])

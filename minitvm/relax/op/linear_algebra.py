"""Linear algebra: ``matmul`` (numpy.matmul semantics, batch dims broadcast) and ``linear``."""

from __future__ import annotations

from ...ir.op import Op, OpPattern
from ..expr import Call, Expr
from ..struct_info import StructInfo
from ._common import (
    UNKNOWN_NDIM,
    binary_out_dtype,
    broadcast_shapes,
    fail,
    fmt_dim,
    fmt_sinfo,
    is_void,
    make_tensor,
    out_vdevice,
    prove_not_equal,
    shape_expr_values,
    tensor_args,
)
from .base import register_op_rule
from .op_attrs import MatmulAttrs

__all__ = ["matmul", "linear"]


def _infer_matmul(call: Call, ctx) -> StructInfo:
    a, b = tensor_args(call, ["x1", "x2"])
    out_dtype = call.attrs.out_dtype if call.attrs is not None else "void"
    dtype = binary_out_dtype(call, a, b) if is_void(out_dtype) else out_dtype
    vdevice = out_vdevice(a, b)
    if UNKNOWN_NDIM in (a.ndim, b.ndim):
        return make_tensor(None, dtype, UNKNOWN_NDIM, vdevice)
    if a.ndim == 0 or b.ndim == 0:
        fail(call, f"requires both inputs to have at least 1 dimension, got {fmt_sinfo(a)} "
                   f"and {fmt_sinfo(b)}")
    na, nb = a.ndim, b.ndim
    a_prepended = na == 1
    b_appended = nb == 1
    na, nb = max(na, 2), max(nb, 2)
    ndim = max(na, nb) - int(a_prepended) - int(b_appended)
    da, db = shape_expr_values(a), shape_expr_values(b)
    if da is None or db is None:
        return make_tensor(None, dtype, ndim, vdevice)
    batch = broadcast_shapes(call, da[:max(len(da) - 2, 0)], db[:max(len(db) - 2, 0)], ctx)
    if batch is None:
        return make_tensor(None, dtype, ndim, vdevice)
    ka = da[-1]
    kb = db[0] if b_appended else db[-2]
    if prove_not_equal(ka, kb, ctx):
        fail(call, f"requires the reduction lengths of the two inputs to be equal, but they are "
                   f"{fmt_dim(ka)} and {fmt_dim(kb)} (inputs {fmt_sinfo(a)} and {fmt_sinfo(b)})")
    out = list(batch)
    if not a_prepended:
        out.append(da[-2])
    if not b_appended:
        out.append(db[-1])
    return make_tensor(out, dtype, vdevice=vdevice)


register_op_rule("relax.matmul", _infer_matmul, pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
                 num_inputs=2, arguments=("x1", "x2"), attrs_type=MatmulAttrs)


def matmul(x1: Expr, x2: Expr, out_dtype: str | None = None) -> Call:
    """Matrix product of ``x1`` and ``x2`` (numpy.matmul; ``out_dtype`` None keeps the input's)."""
    return Call(Op.get("relax.matmul"), [x1, x2],
                MatmulAttrs(out_dtype="void" if out_dtype is None else str(out_dtype)))


def linear(data: Expr, weight: Expr, bias: Expr | None = None,
           out_dtype: str | None = None) -> Expr:
    """``data @ weight.T + bias``, composed of permute_dims, matmul and add (as TVM)."""
    from .binary import add
    from .manipulate import permute_dims

    out = matmul(data, permute_dims(weight), out_dtype=out_dtype)
    return add(out, bias) if bias is not None else out

"""Core-ATen ops whose result shape depends on the data, onto Relax: ``_unique2``
(``torch.unique``, flattened: the native unique kernel of ``relax.frontend.unique_native``,
sorted, with inverse indices in the input's shape and counts) and ``nonzero`` (``relax.nonzero``,
transposed to torch's ``[count, ndim]``)."""

from __future__ import annotations

from ....tir import Var as TirVar
from ....topi.unique import UNIQUE_DTYPES
from ... import op as _op
from ...expr import TupleGetItem
from ...struct_info import TensorStructInfo
from ..unique_native import unique_flat
from .context import AtenContext, register


@register("_unique2.default")
def _unique2(ctx: AtenContext, args):
    """_unique2(input, sorted, return_inverse, return_counts) -> (values, inverse, counts).
    torch sorts the values whatever ``sorted`` says on CPU, so they are always sorted here."""
    x = args[0]
    shape = ctx.shape(x)
    if ctx.dtype(x) in UNIQUE_DTYPES:
        values, _, inverse, counts = unique_flat(ctx, x, True)
    else:  # the runtime's packed function (numpy), as TVM's relax.unique runs
        out = ctx.emit(_op.unique(x, True, False, True, True, None))
        values, inverse, counts = (ctx.emit(TupleGetItem(out, k)) for k in range(3))
    if len(shape) != 1:
        inverse = ctx.emit(_op.reshape(inverse, ctx.shape_expr(shape)))
    return values, inverse, counts


@register("nonzero.default")
def _nonzero(ctx: AtenContext, args):
    """The int64 ``[count, ndim]`` indices of the non-zero entries, in row-major order."""
    x = args[0]
    if ctx.ndim(x) == 0:
        raise ctx.fail("nonzero of a 0-d tensor is not supported")
    found = ctx.emit(_op.nonzero(x))
    count = _result_size(ctx, 0)
    found = ctx.bb.match_cast(found, TensorStructInfo([ctx.ndim(x), count], "int64"))
    return ctx.emit(_op.permute_dims(found, [1, 0]))


def _result_size(ctx: AtenContext, axis: int):
    """The exported program's (unbacked) size of the node's result on ``axis`` as a ``tir``
    variable, so later ``sym_size`` reads of it resolve; a fresh one without metadata."""
    val = ctx.node.meta.get("val") if ctx.node is not None else None
    if val is not None and hasattr(val, "shape"):
        return ctx.sym(val.shape[axis])
    return TirVar("count", "int64")

"""Core-ATen ops whose result shape depends on the data, onto Relax: ``_unique2`` /
``unique_dim`` / ``unique_consecutive`` (``torch.unique`` flattened or along ``dim``,
``torch.unique_consecutive``: ``frontend_common.unique_plan`` on the native unique kernel of
``relax.frontend.unique_native``; values, inverse indices, counts), ``nonzero`` (``relax.nonzero``,
transposed to torch's ``[count, ndim]``) and ``bincount`` (an add-scatter into zeros of the
run-time length ``max(max(input) + 1, minlength)``)."""

from __future__ import annotations

import numpy as np

from ....frontend_common import unique_plan
from ....tir import Var as TirVar
from ... import op as _op
from ...expr import ShapeExpr, TupleGetItem, const
from ...struct_info import ShapeStructInfo, TensorStructInfo
from ..unique_native import RelaxUnique, unique_flat
from .context import AtenContext, register


def _plan(ctx: AtenContext, fn, *args):
    try:
        return fn(RelaxUnique(ctx, "torch_unique"), *args)
    except ValueError as e:
        raise ctx.fail(str(e)) from None


def _flat(ctx: AtenContext, x):
    """``x`` as 1-D (a static shape) and its length."""
    shape = ctx.shape(x)
    if not all(isinstance(d, int) for d in shape):
        raise ctx.fail(f"needs a static input shape, got {shape}")
    n = int(np.prod(shape, dtype="int64"))
    return (x if len(shape) == 1 else ctx.emit(_op.reshape(x, ShapeExpr([n])))), n


@register("_unique2.default")
def _unique2(ctx: AtenContext, args):
    """_unique2(input, sorted, return_inverse, return_counts) -> (values, inverse, counts).
    torch sorts the values whatever ``sorted`` says on CPU, so they are always sorted here;
    each NaN is its own value (after +inf), as torch's."""
    x = args[0]
    shape = ctx.shape(x)
    if unique_plan.key_dtype(ctx.dtype(x)) is not None:
        values, _, inverse, counts = unique_flat(ctx, x, True, "torch_unique", equal_nan=False)
    else:  # the runtime's packed function (numpy), as TVM's relax.unique runs
        out = ctx.emit(_op.unique(x, True, False, True, True, None))
        values, inverse, counts = (ctx.emit(TupleGetItem(out, k)) for k in range(3))
    if len(shape) != 1:
        inverse = ctx.emit(_op.reshape(inverse, ctx.shape_expr(shape)))
    return values, inverse, counts


@register("unique_dim.default")
def _unique_dim(ctx: AtenContext, args):
    """unique_dim(input, dim, sorted, return_inverse, return_counts) -> (values, inverse,
    counts): the unique slices along ``dim`` in lexicographic order (torch sorts them whatever
    ``sorted`` says), a slice holding a NaN unequal to every other."""
    x = args[0]
    values, _, inverse, counts = _plan(ctx, unique_plan.unique_slices, x, ctx.shape(x),
                                       ctx.dtype(x), args[1], True, False)
    return values, inverse, counts


@register("unique_consecutive.default")
def _unique_consecutive(ctx: AtenContext, args):
    """unique_consecutive(input, return_inverse, return_counts, dim=None) -> (values, inverse,
    counts): runs of equal elements (flattened; inverse in the input's shape) or of equal
    slices along ``dim``."""
    x = args[0]
    shape = ctx.shape(x)
    dim = args[3] if len(args) > 3 else None
    if dim is not None:
        values, _, inverse, counts = _plan(ctx, unique_plan.unique_consecutive, x, shape,
                                           dim)
        return values, inverse, counts
    flat, n = _flat(ctx, x)
    values, _, inverse, counts = _plan(ctx, unique_plan.unique_consecutive, flat, [n], 0)
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


@register("bincount.default")
def _bincount(ctx: AtenContext, args):
    """bincount(input [n] non-negative ints, weights=None, minlength=0): the count (int64) or
    the summed weights (their dtype) of each value ``0 .. max(max(input) + 1, minlength) - 1``."""
    x = args[0]
    weights = args[1] if len(args) > 1 else None
    minlength = int(args[2]) if len(args) > 2 and args[2] is not None else 0
    if ctx.ndim(x) != 1 or not ctx.dtype(x).startswith(("int", "uint")):
        raise ctx.fail(f"expects a 1-D integer input, got {ctx.sinfo(x)}")
    if ctx.shape(x)[0] == 0:
        raise ctx.fail("an empty input is not supported")
    dtype = "int64" if weights is None else ctx.dtype(weights)
    top = ctx.emit(_op.add(_op.astype(_op.max(x), "int64"), const(np.array(1, "int64"))))
    length = ctx.emit(_op.maximum(top, const(np.array(minlength, "int64"))))
    size = _result_size(ctx, 0)
    ctx.bb.match_cast(ctx.emit(_op.tensor_to_shape(_op.reshape(length, [1]))),
                      ShapeStructInfo([size]))  # binds ``size``
    zeros = ctx.emit(_op.full(ShapeExpr([size]), const(np.array(0, dtype)), dtype))
    updates = weights if weights is not None else ctx.emit(
        _op.full(ctx.shape_expr(ctx.shape(x)), const(np.array(1, dtype)), dtype))
    return ctx.emit(_op.scatter_elements(zeros, _op.astype(x, "int64"), updates, 0, "add"))

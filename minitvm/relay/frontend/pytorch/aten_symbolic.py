"""ATen ops on sizes and Python values onto Relay: ``size``, ``numel``, ``dim``, the
conversions to Python numbers (``Int``, ``Float``, ``item``, ...) and the
``_assert_tensor_metadata`` check torch.export records (it computes nothing)."""

from __future__ import annotations

import numpy as np

from ... import expr as _expr
from .aten import _is_expr, register


@register("_assert_tensor_metadata")
def _assert_metadata(ctx, args):
    """torch.export's check of a tensor's size / dtype after ``.to(dtype)`` (sparsemax's
    ``.to(z.dtype)``): the import has already fixed both, so it computes nothing."""
    return None


@register("size")
def _size(ctx, args):
    s = ctx.shape(args[0])
    return list(s) if len(args) < 2 else s[args[1]]


@register("numel")
def _numel(ctx, args):
    return int(np.prod(ctx.shape(args[0])))


@register("dim")
def _dim(ctx, args):
    return len(ctx.shape(args[0]))


@register("Int", "IntImplicit", "ScalarImplicit", "Float", "item")
def _to_python(ctx, args):
    v = args[0]
    if _is_expr(v):
        folded = ctx.fold(v)
        if isinstance(folded, _expr.Constant):
            return folded.data.numpy().item()
        raise ctx.fail("a tensor value is used as a Python number (data-dependent control)")
    return v

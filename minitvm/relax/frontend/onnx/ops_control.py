"""ONNX control flow on Relax, resolved at import (``frontend_common.onnx_control``): an
``If`` whose condition is known takes one branch, a ``Loop`` with a known trip count or
condition is unrolled. A run-time ``If`` condition is a clear error."""

from __future__ import annotations

from ....frontend_common.onnx_control import known_branch, unroll_loop
from ... import op as _op
from .context import Context, register


@register("If")
def _if(ctx: Context, ins, attrs):
    known = ctx.known(ins[0])
    if known is None:
        raise ctx.fail("the condition is only known at run time; the Relax importer needs it "
                       "known at import (a constant, or computed from shapes)")
    return known_branch(ctx, known, attrs)


def _stack(ctx: Context, values):
    return ctx.emit(_op.concat([ctx.emit(_op.expand_dims(ctx.expr(v), 0)) for v in values], 0))


@register("Loop")
def _loop(ctx: Context, ins, attrs):
    return unroll_loop(ctx, ins, attrs, value=ctx.value, maybe_value=ctx.known,
                       const=lambda a: a, stack=lambda vs: _stack(ctx, vs))

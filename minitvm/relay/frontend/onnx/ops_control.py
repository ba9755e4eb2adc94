"""ONNX control flow on Relay: If and Loop.

``If`` with a condition known at import converts only the branch taken; otherwise it becomes a
Relay ``If`` (run by the interpreter and the VM). ``Loop`` is unrolled at import (see
``frontend_common.onnx_control``)."""

from __future__ import annotations

from ....frontend_common.onnx_control import known_branch, unroll_loop
from ... import op as _op
from ...expr import If, Tuple, TupleGetItem
from .registry import Context, register


@register("If")
def _if(ctx: Context, ins, attrs):
    cond = ins[0]
    known = ctx.maybe_value(cond)
    if known is not None:
        return known_branch(ctx, known, attrs)
    then_out = ctx.subgraph(attrs["then_branch"], {})
    else_out = ctx.subgraph(attrs["else_branch"], {})
    if len(then_out) != len(else_out):
        raise ctx.fail(f"the branches produce {len(then_out)} and {len(else_out)} outputs")
    for i, (a, b) in enumerate(zip(then_out, else_out)):
        if ctx.shape(a) != ctx.shape(b) or ctx.dtype(a) != ctx.dtype(b):
            raise ctx.fail(f"output {i} differs between the branches ({ctx.shape(a)} "
                           f"{ctx.dtype(a)} vs {ctx.shape(b)} {ctx.dtype(b)}); a dynamic "
                           "condition needs branches of the same type")
    c = _op.reshape(cond, ())
    if len(then_out) == 1:
        return [If(c, then_out[0], else_out[0])]
    joined = If(c, Tuple(then_out), Tuple(else_out))
    return [TupleGetItem(joined, i) for i in range(len(then_out))]


@register("Loop")
def _loop(ctx: Context, ins, attrs):
    return unroll_loop(ctx, ins, attrs, value=ctx.value, maybe_value=ctx.maybe_value,
                       const=ctx.const, stack=lambda vs: _op.stack(vs, 0))

"""``call_tir`` of a PrimFunc written by a schedule rule: for te stages whose body only names
their inputs and shape (a one-pass scatter, a factorization's loops), which the rule alone
computes, so they are lowered through ``schedule.lower_to_buffers`` rather than into blocks."""

from __future__ import annotations

from .... import te
from ....backend.options import lowering_options
from ....schedule.lower import lower_to_buffers, select_rule
from ....tir import expr as E
from ....tir.buffer import decl_buffer
from ....tir.function import PrimFunc
from ....tir.stmt_functor import substitute
from ....transform import PassContext
from ... import te_bridge
from ...expr import Expr, Tuple
from ...op.base import call_tir
from .common import LegalizeError

__all__ = ["call_rule_stage"]

# TVM's ``topi.analysis`` pattern kind of a PrimFunc FuseOps must leave alone (kOpaque)
_OPAQUE = 8


def call_rule_stage(bb, te_func, *args, name: str, rule) -> Expr:
    """``call_tir`` of the PrimFunc computing ``te_func(*args)`` (one te stage that schedule
    rule ``rule`` takes) as that rule's loops, with its own copies of the symbolic dims."""
    te_args, _, relax_inputs, te_inputs = te_bridge.convert_te_args(args, {})
    out = te_func(*te_args)
    options = lowering_options(PassContext.current())
    # the PrimFunc's own copies of the symbolic dims (it shares no variable with its caller)
    vmap = {v: E.Var(v.name, v.dtype) for v in te_bridge.shape_vars(te_inputs)}
    own = {id(t): te.placeholder([substitute(d, vmap) for d in t.shape], t.dtype, t.name)
           for t in te_inputs}
    inputs = [own[id(t)] for t in te_inputs]
    stage = te_func(*_replaced(te_args, own))
    if select_rule(stage, options) is not rule:
        raise LegalizeError(f"{name}: the rule {rule.name!r} does not take {stage}")
    bufs = {id(t): decl_buffer(t.shape, t.dtype, t.name) for t in [*inputs, stage]}
    body = lower_to_buffers(inputs, [stage], bufs, options)
    extra = te_bridge.unbound_tir_vars(inputs, [stage], body)
    params, buffer_map = [], {}
    for t in [*inputs, stage]:
        handle = E.Var(bufs[id(t)].name, "handle")
        params.append(handle)
        buffer_map[handle] = bufs[id(t)]
    prim = PrimFunc([*params, *extra], body, None, buffer_map,
                    {"tir.noalias": True, "op_pattern": _OPAQUE})
    gvar, _ = bb._same_prim_func(prim)  # (one function for the same stage, as call_te)
    if gvar is None:
        gvar = bb.add_func(prim, name)
    caller = {id(new): old for old, new in vmap.items()}
    return call_tir(gvar, Tuple(list(relax_inputs)), te_bridge.out_struct_info([out]),
                    tir_vars=[caller[id(v)] for v in extra] or None)


def _replaced(a, own: dict):
    """``a`` (a te argument, lists and tuples of them) with its placeholders swapped by
    ``own``."""
    if isinstance(a, list | tuple):
        return type(a)(_replaced(x, own) for x in a)
    return own.get(id(a), a)

"""Legalization of the scatters (``relax.scatter_elements``, ``relax.scatter_nd``,
``relax.index_put``) onto ``topi.scatter_linear``'s stages, the ones Relay's computes take.

A small scatter is ``transform_extra``'s te form (every output element compared with every
update position), legalized into blocks as any compute. Past ``SCATTER_MAX_PAIRS`` comparisons,
or with symbolic dims (a dynamic batch), the stage is the one-pass scatter, whose te body only
names its inputs: the PrimFunc is then written by that stage's schedule rule
(``schedule/scatter_linear.py``, through ``schedule.lower_to_buffers``) with its own copies of
the symbolic dims' variables, loops over the updates rather than blocks, so it computes the
scatter wherever it is compiled. egnn_mini's ``scatter_add`` of 384 x 64 edge messages into
(48, 64) nodes: 48 ms a call in blocks, 0.02 ms in one pass."""

from __future__ import annotations

from .... import te
from ....backend.options import lowering_options
from ....schedule import scatter_linear as scatter_rule
from ....schedule.lower import lower_to_buffers, select_rule
from ....tir import expr as E
from ....tir.buffer import decl_buffer
from ....tir.function import PrimFunc
from ....tir.stmt_functor import substitute
from ....topi import scatter_linear as sl
from ....topi.broadcast import broadcast_shape
from ....transform import PassContext
from ... import te_bridge
from ...expr import Tuple, TupleGetItem
from ...op.base import call_tir
from .common import LegalizeError, call_topi, register_legalize

__all__ = ["call_scatter"]

# TVM's ``topi.analysis`` pattern kind of a PrimFunc FuseOps must leave alone (kOpaque)
_OPAQUE = 8


def call_scatter(bb, te_func, *args, name: str):
    """``call_tir`` of the PrimFunc computing ``te_func(*args)`` (one te tensor): a one-pass
    scatter stage as its rule's loops, any other compute as ``bb.call_te`` makes it."""
    te_args, _, relax_inputs, te_inputs = te_bridge.convert_te_args(args, {})
    out = te_func(*te_args)
    if not sl.is_linear(out):
        return call_topi(bb, te_func, *args, name=name)
    options = lowering_options(PassContext.current())
    # the PrimFunc's own copies of the symbolic dims (it shares no variable with its caller)
    vmap = {v: E.Var(v.name, v.dtype) for v in te_bridge.shape_vars(te_inputs)}
    own = {id(t): te.placeholder([substitute(d, vmap) for d in t.shape], t.dtype, t.name)
           for t in te_inputs}
    inputs = [own[id(t)] for t in te_inputs]
    stage = te_func(*_replaced(te_args, own))
    if select_rule(stage, options) is not scatter_rule.RULE:  # (its te body is no scatter)
        raise LegalizeError(f"{name}: the one-pass scatter rule does not take {stage}")
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
    gvar, _ = bb._same_prim_func(prim)  # (one function for the same scatter, as call_te)
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


def _fields(bb, tup):
    if isinstance(tup, Tuple):
        return list(tup.fields)
    return [bb.emit(TupleGetItem(tup, k)) for k in range(len(tup.struct_info.fields))]


@register_legalize("relax.scatter_elements")
def _scatter_elements(bb, call):
    a = call.attrs
    return call_scatter(
        bb, lambda x, i, u: sl.scatter_elements_stage(x, i, u, int(a.axis), str(a.reduction)),
        *call.args, name="scatter_elements")


@register_legalize("relax.scatter_nd")
def _scatter_nd(bb, call):
    red = str(call.attrs.reduction)
    return call_scatter(bb, lambda x, i, u: sl.scatter_nd_stage(x, i, u, red), *call.args,
                        name="scatter_nd")


@register_legalize("relax.index_put")
def _index_put(bb, call):
    acc = bool(call.attrs.accumulate)

    def te_func(x, ts, v):  # (the broadcast shape of the te tensors: the PrimFunc's own vars)
        return sl.index_put_stage(x, ts, v, broadcast_shape(*[list(t.shape) for t in ts]), acc)

    return call_scatter(bb, te_func, call.args[0], _fields(bb, call.args[1]), call.args[2],
                        name="index_put")

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

from ....schedule import scatter_linear as scatter_rule
from ....topi import scatter_linear as sl
from ....topi.broadcast import broadcast_shape
from ... import te_bridge
from ...expr import Tuple, TupleGetItem
from .common import call_topi, register_legalize
from .rule_stage import call_rule_stage

__all__ = ["call_scatter"]

def call_scatter(bb, te_func, *args, name: str):
    """``call_tir`` of the PrimFunc computing ``te_func(*args)`` (one te tensor): a one-pass
    scatter stage as its rule's loops, any other compute as ``bb.call_te`` makes it."""
    te_args, _, relax_inputs, te_inputs = te_bridge.convert_te_args(args, {})
    out = te_func(*te_args)
    if not sl.is_linear(out):
        return call_topi(bb, te_func, *args, name=name)
    return call_rule_stage(bb, te_func, *args, name=name, rule=scatter_rule.RULE)


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

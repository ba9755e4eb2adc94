"""Relay -> VizGraph for ``tvm.contrib.relay_viz`` (registered as its default parser).

One iterative post-order walk per function; shared sub-expressions become one node; a nested
function (a fused primitive after FuseOps) becomes one node listing the ops inside it.
"""

from __future__ import annotations

from ...contrib.relay_viz.interface import VizEdge, VizGraph, VizNode, VizParser
from ...ir.expr import GlobalVar
from ...ir.op import Op
from ..expr import Call, Constant, Function, If, Let, Tuple, TupleGetItem, Var

__all__ = ["RelayVizParser"]

_MAX_ATTRS = 4


def _children(e) -> list:
    if isinstance(e, Call):
        return ([] if isinstance(e.op, Op | GlobalVar | Function) else [e.op]) + list(e.args)
    if isinstance(e, Tuple):
        return list(e.fields)
    if isinstance(e, TupleGetItem):
        return [e.tuple_value]
    if isinstance(e, Let):
        return [e.value, e.body]
    if isinstance(e, If):
        return [e.cond, e.true_branch, e.false_branch]
    return []


def _type_text(e) -> str:
    t = e._checked_type if e._checked_type is not None else getattr(e, "type_annotation", None)
    return "" if t is None else str(t)


def _attrs_text(call) -> str:
    attrs = call.attrs
    if attrs is None:
        return ""
    keys = [k for k in getattr(attrs, "keys", lambda: [])()][:_MAX_ATTRS]
    parts = []
    for k in keys:
        v = getattr(attrs, k, None)
        if v in (None, "", (), []):
            continue
        parts.append(f"{k}={v}")
    return ", ".join(parts)


def _fused_ops(fn: Function) -> list[str]:
    names, stack, seen = [], [fn.body], set()
    while stack:
        e = stack.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, Call) and isinstance(e.op, Op):
            names.append(e.op.name)
        stack.extend(_children(e))
    return names[::-1]


class RelayVizParser(VizParser):
    """Turns a Relay function into a VizGraph of its dataflow."""

    def get_graph(self, name: str, func, relay_param: dict | None) -> VizGraph:
        graph = VizGraph(name)
        params = relay_param or {}
        if not isinstance(func, Function):
            graph.node(VizNode("0", type(func).__name__, "", name))
            return graph
        ids: dict[int, str] = {}
        order = []
        stack = [(func.body, False)]
        for p in func.params:
            ids[id(p)] = str(len(ids))
            order.append(p)
        while stack:
            e, ready = stack.pop()
            if id(e) in ids:
                continue
            if not ready:
                stack.append((e, True))
                stack.extend((k, False) for k in reversed(_children(e)) if id(k) not in ids)
                continue
            ids[id(e)] = str(len(ids))
            order.append(e)
        for e in order:
            graph.node(self._node(ids[id(e)], e, params))
            for k in _children(e):
                graph.edge(VizEdge(ids[id(k)], ids[id(e)]))
        return graph

    @staticmethod
    def _node(nid: str, e, params) -> VizNode:
        if isinstance(e, Var):
            kind = "param" if e.name_hint in params else "input"
            return VizNode(nid, "Var", f"{kind} {_type_text(e)}", e.name_hint)
        if isinstance(e, Constant):
            return VizNode(nid, "Constant", f"shape={tuple(e.data.shape)} {e.data.dtype}",
                           f"const{tuple(e.data.shape)}")
        if isinstance(e, Call):
            if isinstance(e.op, Op):
                detail = _attrs_text(e)
                ty = _type_text(e)
                return VizNode(nid, "Call", f"{detail} -> {ty}" if ty else detail, e.op.name)
            if isinstance(e.op, Function):
                ops = _fused_ops(e.op)
                return VizNode(nid, "Call", f"fused: {' + '.join(ops)}",
                               "fn(" + "+".join(o.split(".")[-1] for o in ops[:3]) +
                               ("+..." if len(ops) > 3 else "") + ")")
            if isinstance(e.op, GlobalVar):
                return VizNode(nid, "Call", "", f"@{e.op.name_hint}")
            return VizNode(nid, "Call", "", "call")
        if isinstance(e, TupleGetItem):
            return VizNode(nid, "TupleGetItem", "", f"[{e.index}]")
        if isinstance(e, Tuple):
            return VizNode(nid, "Tuple", "", f"tuple({len(e.fields)})")
        return VizNode(nid, type(e).__name__, "", type(e).__name__.lower())

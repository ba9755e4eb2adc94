"""PatternGrouper: find non-overlapping matches of a pattern in an expression graph.

Nodes are tried from the outputs towards the inputs (reverse post order), as TVM does. A match
becomes a group: its root, the expressions its inputs bind to (what wildcard/var patterns
matched, or operands no pattern looked at) and a function of the matched region. A match is
rejected when it overlaps an earlier group, when a node inside it (other than the root) is used
outside it, or when ``check(root)`` says no. Bodies of functions already partitioned from a
pattern (``PartitionedFromPattern``) are never matched again.
"""

from __future__ import annotations

from ...ir.attrs import DictAttrs
from ...ir.expr import GlobalVar
from ...ir.op import Op
from ..expr import Call, Constant, Function, Tuple, TupleGetItem, Var
from .matcher import DFPatternMatcher, consumer_map, expr_children, post_order_all
from .patterns import DFPattern, ExprPattern, VarPattern, WildcardPattern

__all__ = ["Group", "PatternGrouper"]


class Group:
    """One match: ``root``, its ``function`` (params bound to ``args``) and ``node_map``."""

    __slots__ = ("root", "function", "args", "node_map", "nodes")

    def __init__(self, root, function, args, node_map, nodes):
        self.root = root
        self.function = function
        self.args = args
        self.node_map = node_map
        self.nodes = nodes


def _is_input_pattern(p) -> bool:
    return isinstance(p, WildcardPattern | VarPattern)


class _NameBuilder:
    """TVM's ``PartitionedFromPattern`` name: the matched ops in evaluation order, '_'-joined."""

    @staticmethod
    def part(e) -> str:
        if isinstance(e, Call):
            if isinstance(e.op, Op):
                return e.op.name + "_"
            if isinstance(e.op, Function):
                return str(e.op.get_attr("PartitionedFromPattern", "Function_"))
            return ""
        if isinstance(e, Tuple):
            return "Tuple_"
        if isinstance(e, TupleGetItem):
            return f"TupleGetItem{e.index}_"
        return ""


class PatternGrouper:
    """Group the matches of ``pattern`` in ``expr``.

    ``build_functions=False`` leaves each group's ``function`` None and ``args`` empty: a
    rewrite only needs the roots, node maps and matched nodes, and building a function per
    match was most of its time on long chains.
    """

    def __init__(self, pattern: DFPattern, check=None, var_prefix: str = "FunctionVar",
                 build_functions: bool = True):
        if not isinstance(pattern, DFPattern):
            raise TypeError(f"expected a DFPattern, got {type(pattern).__name__}")
        self.pattern = pattern
        self.check = check
        self.var_prefix = var_prefix
        self.build_functions = build_functions

    def group(self, expr) -> list[Group]:
        order = post_order_all(expr)
        users = consumer_map(order)
        matcher = DFPatternMatcher(expr)
        matcher._users, matcher._users_nodes = users, {id(x) for x in order}
        assigned: set[int] = set()
        pre_partitioned: set[int] = set()
        groups: list[Group] = []
        for e in reversed(order):
            if id(e) in assigned or isinstance(e, Op | GlobalVar):
                continue
            if isinstance(e, Function) and e.get_attr("PartitionedFromPattern") is not None:
                pre_partitioned.add(id(e))
                pre_partitioned.update(id(x) for x in post_order_all(e.body))
            if id(e) in pre_partitioned:
                continue
            if not matcher.match(self.pattern, e):
                continue
            g = self._make_group(e, matcher.memo, users, assigned, len(groups))
            if g is None:
                continue
            groups.append(g)
            assigned.update(g.nodes)
        return groups

    def _make_group(self, root, memo, users, assigned, number):
        internal: set[int] = set()
        input_ids = set()
        for p, exprs in memo.items():
            for x in exprs:
                if isinstance(x, Op):
                    continue
                if _is_input_pattern(p) or (isinstance(p, ExprPattern) and isinstance(x, Var)):
                    if id(x) not in input_ids:
                        input_ids.add(id(x))
                else:
                    internal.add(id(x))
        input_ids -= internal
        internal.add(id(root))
        input_ids.discard(id(root))
        if internal & assigned:
            return None
        for nid in internal:
            if nid == id(root):
                continue
            for u in users.get(nid, ()):
                if id(u) not in internal:
                    return None  # an intermediate value escapes the group
        if self.check is not None and not self.check(root):
            return None
        node_map = {p: list(v) for p, v in memo.items()}
        if not self.build_functions:
            return Group(root, None, [], node_map, internal)
        params, args, name = {}, [], []
        new = {}
        stack = [(root, False)]
        while stack:
            e, ready = stack.pop()
            if id(e) in new:
                continue
            if not ready:
                if id(e) in input_ids or (id(e) not in internal and not isinstance(
                        e, Constant | Op | GlobalVar)):
                    v = Var(f"{self.var_prefix}_{number}_{len(params)}")
                    params[id(e)] = v
                    args.append(e)
                    new[id(e)] = v
                    continue
                if id(e) not in internal:
                    new[id(e)] = e  # a constant, op or global nobody matched stays inside
                    continue
                stack.append((e, True))
                stack.extend((c, False) for c in reversed(expr_children(e)) if id(c) not in new)
                continue
            new[id(e)] = _rebuild(e, new)
            name.append(_NameBuilder.part(e))
        body = new[id(root)]
        fn = Function(list(params.values()), body,
                      attrs=DictAttrs({"PartitionedFromPattern": "".join(name)}))
        return Group(root, fn, args, node_map, internal)


def _rebuild(e, new):
    """``e`` with its children replaced by their new versions."""
    get = lambda x: new.get(id(x), x)  # noqa: E731
    if isinstance(e, Call):
        op = e.op if isinstance(e.op, Op | GlobalVar) else get(e.op)
        return Call(op, [get(a) for a in e.args], e.attrs, e.type_args, e.span)
    if isinstance(e, Tuple):
        return Tuple([get(f) for f in e.fields], e.span)
    if isinstance(e, TupleGetItem):
        return TupleGetItem(get(e.tuple_value), e.index, e.span)
    kids = expr_children(e)
    if all(get(k) is k for k in kids):
        return e
    from ..expr import If, Let

    if isinstance(e, If):
        return If(get(e.cond), get(e.true_branch), get(e.false_branch), e.span)
    if isinstance(e, Let):
        return Let(get(e.var), get(e.value), get(e.body), e.span)
    if isinstance(e, Function):
        return e.with_fields(params=[get(p) for p in e.params], body=get(e.body))
    raise TypeError(f"cannot partition a match containing {type(e).__name__}")

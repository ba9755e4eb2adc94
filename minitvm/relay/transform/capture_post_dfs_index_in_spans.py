"""CapturePostDfsIndexInSpans(): a debugging pass writing each node's post-dfs index into its span.

Every variable, constant, call, tuple, projection, function, let, if, match and reference node
of a function gets ``Span(SourceName("index"), line=i, end_line=i, column=d, end_column=d)``:
``i`` is its index in TVM's IndexedGraph post-dfs order (callee before arguments, parameters
before bodies, a let's value before its variable before its body, ops and constructors counted
too) and ``d`` the index of its immediate post-dominator in that graph (-1 for the function
itself and for nodes whose value is never used). Printed, a span reads ``index:i:d`` — TVM
v0.19's debugging aid for passes that report nodes by index. Ops, constructors and (unlike
TVM) global variables keep their spans, since a GlobalVar is shared by the whole module here.
"""

from __future__ import annotations

import copy

from ...ir.expr import GlobalVar
from ...ir.node import SourceName, Span
from ...ir.op import Op
from ..adt import Constructor, Match, pattern_vars
from ..expr import (
    Call,
    Constant,
    Function,
    If,
    Let,
    RefCreate,
    RefRead,
    RefWrite,
    Tuple,
    TupleGetItem,
    Var,
)
from ..expr_functor import ExprMutator
from ._pass_helpers import make_function_pass, register

__all__ = ["CapturePostDfsIndexInSpans", "post_dfs_dominators"]

_LEAVES = (Var, Constant, GlobalVar, Op, Constructor)
_SET, _VISIT = 0, 1


def _post_dfs_order(root) -> tuple[list, set]:
    """TVM's IndexedGraph creation order, and the ids of recursive calls of let-bound vars."""
    order: list = []
    seen: set = set()
    rec_calls: set = set()
    current = [None]  # the variable the value being visited is let-bound to
    stack: list = [(_VISIT, root, False)]
    while stack:
        kind, e, expanded = stack.pop()
        if kind == _SET:
            current[0] = e
            continue
        if id(e) in seen:
            continue
        if expanded or isinstance(e, _LEAVES):
            if isinstance(e, Var) and e is current[0]:
                continue  # a let-rec variable is indexed where its let binds it
            seen.add(id(e))
            order.append(e)
            if type(e) is Call and e.op is current[0] and current[0] is not None:
                rec_calls.add(id(e))
            continue
        stack.append((_VISIT, e, True))
        for item in reversed(_children(e, current[0])):
            stack.append(item)
    return order, rec_calls


def _children(e, current_var) -> list:
    """Stack items visiting ``e``'s children in TVM's order (with let-var markers)."""
    t = type(e)
    if t is Call:
        return [(_VISIT, c, False) for c in (e.op, *e.args)]
    if t is Tuple:
        return [(_VISIT, c, False) for c in e.fields]
    if t is TupleGetItem:
        return [(_VISIT, e.tuple_value, False)]
    if t is Function:
        return [(_VISIT, c, False) for c in (*e.params, e.body)]
    if t is Let:
        return [(_SET, e.var, False), (_VISIT, e.value, False), (_SET, current_var, False),
                (_VISIT, e.var, False), (_VISIT, e.body, False)]
    if t is If:
        return [(_VISIT, c, False) for c in (e.cond, e.true_branch, e.false_branch)]
    if t is RefCreate:
        return [(_VISIT, e.value, False)]
    if t is RefRead:
        return [(_VISIT, e.ref, False)]
    if t is RefWrite:
        return [(_VISIT, e.ref, False), (_VISIT, e.value, False)]
    if t is Match:
        items = [(_VISIT, e.data, False)]
        for clause in e.clauses:
            items += [(_VISIT, v, False) for v in pattern_vars(clause.lhs)]
            items.append((_VISIT, clause.rhs, False))
        return items
    raise TypeError(f"CapturePostDfsIndexInSpans: unexpected node {t.__name__}")


def _inputs(e, index: dict, rec_calls: set) -> list:
    """(input, consumer) index pairs TVM's Annotator records for ``e``."""
    me = index[id(e)]
    t = type(e)
    if t is Call:
        srcs = list(e.args) if id(e) in rec_calls else [e.op, *e.args]
    elif t is Tuple:
        srcs = list(e.fields)
    elif t is TupleGetItem:
        srcs = [e.tuple_value]
    elif t is Function:
        srcs = [e.body]
    elif t is Let:
        return [(index[id(e.value)], index[id(e.var)]), (index[id(e.body)], me)]
    elif t is If:
        srcs = [e.cond, e.true_branch, e.false_branch]
    elif t is RefCreate:
        srcs = [e.value]
    elif t is RefRead:
        srcs = [e.ref]
    elif t is RefWrite:
        srcs = [e.ref, e.value]
    elif t is Match:
        pairs = []
        for clause in e.clauses:
            pairs += [(index[id(e.data)], index[id(v)]) for v in pattern_vars(clause.lhs)]
            pairs.append((index[id(clause.rhs)], me))
        return pairs
    else:
        return []
    return [(index[id(s)], me) for s in srcs]


def post_dfs_dominators(func) -> tuple[dict, list]:
    """``(id(node) -> post-dfs index, immediate post-dominator index per index, -1 for none)``."""
    order, rec_calls = _post_dfs_order(func)
    index = {id(e): i for i, e in enumerate(order)}
    outputs: list = [[] for _ in order]
    for e in order:
        for src, dst in _inputs(e, index, rec_calls):
            outputs[src].append(dst)
    n = len(order)
    parent = [-1] * n
    depth = [1] * n
    root = index[id(func)]
    for i in range(n - 1, -1, -1):
        if i == root or not outputs[i]:
            continue
        lca = outputs[i][0]
        for other in outputs[i][1:]:
            lca = _common_ancestor(lca, other, parent, depth)
        parent[i] = lca
        depth[i] = depth[lca] + 1 if lca >= 0 else 1
    return index, parent


def _common_ancestor(a: int, b: int, parent: list, depth: list) -> int:
    """The nearest common post-dominator of ``a`` and ``b`` (-1 when they have none)."""
    while a != b:
        if a < 0 or b < 0:
            return -1
        if depth[a] < depth[b]:
            b = parent[b]
        elif depth[a] > depth[b]:
            a = parent[a]
        else:
            a, b = parent[a], parent[b]
    return a


class _SpanWriter(ExprMutator):
    """Rebuilds every indexed node with its ``index:i:d`` span."""

    _expand_scopes = True  # the hooks below do not depend on the order children are visited

    def __init__(self, index: dict, parent: list):
        super().__init__()
        self.index = index
        self.parent = parent
        self.source = SourceName("index")

    def _respan(self, new, old):
        out = copy.copy(new) if new is old else new
        i = self.index[id(old)]
        d = self.parent[i]
        out.span = Span(self.source, i, i, d, d)
        if getattr(out, "_checked_type", None) is None and old._checked_type is not None:
            out._checked_type = old._checked_type
        return out

    def visit_var(self, v):
        return self._respan(v, v)

    def visit_constant(self, c):
        return self._respan(c, c)

    def visit_call(self, call):
        return self._respan(super().visit_call(call), call)

    def visit_tuple(self, t):
        return self._respan(super().visit_tuple(t), t)

    def visit_tuple_getitem(self, t):
        return self._respan(super().visit_tuple_getitem(t), t)

    def visit_function(self, fn):
        return self._respan(super().visit_function(fn), fn)

    def visit_let(self, let):
        return self._respan(super().visit_let(let), let)

    def visit_if(self, ite):
        return self._respan(super().visit_if(ite), ite)

    def visit_match(self, m):
        return self._respan(super().visit_match(m), m)

    def visit_ref_create(self, r):
        return self._respan(super().visit_ref_create(r), r)

    def visit_ref_read(self, r):
        return self._respan(super().visit_ref_read(r), r)

    def visit_ref_write(self, r):
        return self._respan(super().visit_ref_write(r), r)


def capture_post_dfs_index_in_spans(func: Function) -> Function:
    """``func`` rebuilt with every node's post-dfs index and post-dominator in its span."""
    index, parent = post_dfs_dominators(func)
    return _SpanWriter(index, parent).visit(func)


@register("CapturePostDfsIndexInSpans")
def CapturePostDfsIndexInSpans():  # noqa: N802 - TVM's name
    """Function pass (opt 0): write each node's post-dfs index and post-dominator into its span."""
    return make_function_pass(lambda f, m, c: capture_post_dfs_index_in_spans(f), opt_level=0,
                              name="CapturePostDfsIndexInSpans")

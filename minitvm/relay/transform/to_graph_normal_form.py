"""ToGraphNormalForm: remove let bindings by substituting each bound value at its uses.

The result is a dataflow graph in which a shared value is one shared node. A binding whose value
refers to its own variable (a recursive closure) becomes ``let %f = value; %f`` at each use.

Difference from TVM: TVM drops every let, which silently deletes or reorders side effects (an
unused ``let %u = ref_write(...)`` vanishes). Here a binding whose value has an effect — a
reference operation or a call of a stateful op, outside nested functions — stays a let.
"""

from __future__ import annotations

from ...ir.op import Op
from ...transform.stats import record_stat
from ..expr import Call, Function, Let, RefCreate, RefRead, RefWrite
from ..expr_functor import dataflow_children
from ..scoped_functor import ScopedMutator
from ._pass_helpers import register
from .function_pass import function_pass

__all__ = ["ToGraphNormalForm", "to_graph_normal_form"]

_REF = (RefCreate, RefRead, RefWrite)


class _EffectAnalysis:
    """Memoized 'may have an effect when evaluated' over dataflow nodes (not function bodies)."""

    def __init__(self):
        self.memo: dict = {}

    def __call__(self, expr) -> bool:
        memo = self.memo
        stack = [expr]
        while stack:
            e = stack[-1]
            if e in memo:
                stack.pop()
                continue
            t = type(e)
            if t is Let:
                kids = (e.value, e.body)
            elif t is Function:
                kids = ()
            else:
                kids = dataflow_children(e)
            pending = [k for k in kids if k not in memo]
            if pending:
                stack.extend(pending)
                continue
            stack.pop()
            own = t in _REF or (t is Call and isinstance(e.op, Op)
                                and bool(e.op.get_attr("TOpIsStateful")))
            memo[e] = own or any(memo[k] for k in kids)
        return memo[expr]


class _GraphNormalizer(ScopedMutator):
    """Substitutes let values at their uses; the let hook runs on the driver's stack, and
    whether a closure refers to its own variable is read from the variables its visit met (a
    let variable can only occur inside its own value or the let's body)."""

    def __init__(self):
        super().__init__()
        self.subst: dict = {}
        self.effects = _EffectAnalysis()
        self.count = 0  # bindings substituted away
        self.met: set = set()

    def visit_var(self, v):
        self.met.add(v)
        return self.subst.get(v, v)

    def gen_let(self, let):
        chain = self._let_chain(let)
        kept = []
        for node in chain:
            value = yield node.value
            if self.effects(value):
                kept.append((node.var, value, node.span))
                continue
            if isinstance(node.value, Function) and node.var in self.met:
                value = Let(node.var, value, node.var)
            self.subst[node.var] = value
            self.count += 1
            self.memo_map.pop(node.var, None)
        body = yield chain[-1].body
        for var, value, span in reversed(kept):
            body = Let(var, value, body, span)
        return body


def to_graph_normal_form(expr):
    """The graph normal form of ``expr`` (lets substituted away, effectful ones kept)."""
    return _GraphNormalizer().visit(expr)


@register("ToGraphNormalForm")
def ToGraphNormalForm():  # noqa: N802 - TVM's name
    """Function pass (opt 1): turn A-normal form back into a dataflow graph."""

    def transform(func, mod, ctx):
        m = _GraphNormalizer()
        out = m.visit(func)
        record_stat("removed let bindings", m.count)
        return out

    # no establishes=["gnf"]: effectful bindings and recursive closures stay lets
    return function_pass(transform, opt_level=1, name="ToGraphNormalForm", breaks=["anf"])

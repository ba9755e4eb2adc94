"""ManifestLifetimes(): insert ``memory.kill`` where variables die (TVM v0.19's VM memory pass).

For a function in A-normal form (after memory allocation is made explicit), first aliases are
removed: ``let %y = %x`` (also through ``on_device``, and a ``device_copy`` of a variable to its
own device) drops the binding and every use of ``%y`` names ``%x``; a ``match`` on a variable
lets a clause's top-level pattern variable stand for that variable. Then, after each binding,
``let %x = memory.kill(%v)`` is added for every variable live into the binding but not out of
it (TVM's liveness, see ``_liveness``). A variable never used after its definition is never
killed, as in TVM. Kills after one binding come in the order the variables were bound
(parameters first); TVM's order is unspecified. Nested functions are an error, as in TVM.
"""

from __future__ import annotations

from ...transform.stats import record_stat
from ..adt import Clause, Match, PatternVar
from ..expr import Call, Function, Let, Var
from ..expr_functor import ExprMutator
from ..op.memory import kill
from ._liveness import ControlFlowGraph, liveness, strip_on_device
from ._pass_helpers import make_function_pass, register

__all__ = ["ManifestLifetimes", "manifest_lifetimes"]


def _same_device(call) -> bool:
    """Is ``call`` a ``device_copy`` whose source and destination devices are the same?"""
    a = call.attrs
    src = getattr(a, "src_virtual_device", None)
    dst = getattr(a, "dst_virtual_device", None)
    if src is None or dst is None:
        return False

    def key(d):
        return (getattr(d, "device_type", None), getattr(d, "virtual_device_id", None))

    return key(src) == key(dst)


class _AliasEliminator(ExprMutator):
    """Removes bindings of one variable to another and renames their uses."""

    def __init__(self):
        super().__init__()
        self.alias: dict = {}

    def visit_var(self, v):
        return self.alias.get(v, v)

    def _aliased(self, value):
        inner = strip_on_device(value)
        if type(inner) is Var:
            return self.visit(inner)
        if type(inner) is Call and getattr(inner.op, "name", None) == "device_copy" and \
                _same_device(inner) and type(inner.args[0]) is Var:
            return self.visit(inner.args[0])
        return None

    def visit_let(self, let):
        chain = self._let_chain(let)
        kept = []
        for node in chain:
            target = self._aliased(node.value)
            if target is not None:
                self.alias[node.var] = target
                self.memo_map[node.var] = target
            else:
                kept.append((node, self.visit(node.var), self.visit(node.value)))
        body = self.visit(chain[-1].body)
        for node, var, value in reversed(kept):
            body = Let(var, value, body, node.span)
        return body

    def visit_match(self, m):
        data = strip_on_device(m.data)
        if type(data) is not Var:
            return super().visit_match(m)
        data = self.visit(data)
        clauses = []
        for c in m.clauses:
            if type(c.lhs) is PatternVar:
                self.alias[c.lhs.var] = data
                self.memo_map[c.lhs.var] = data
            clauses.append(Clause(c.lhs, self.visit(c.rhs)))
        return Match(data, clauses, m.complete, m.span)


class _KillInserter(ExprMutator):
    """Adds ``memory.kill`` bindings after the binding where each variable dies."""

    def __init__(self, cfg, live_in, live_out, order: dict):
        super().__init__()
        self.cfg = cfg
        self.live_in = live_in
        self.live_out = live_out
        self.order = order
        self.count = 0

    def visit_let(self, let):
        chain = self._let_chain(let)
        bindings = []
        for node in chain:
            bindings.append((self.visit(node.var), self.visit(node.value), node.span))
            n = self.cfg.let_map.get(node)
            if n is None:
                raise ValueError("ManifestLifetimes: a let inside an expression or a nested "
                                 "function; the body must be in A-normal form with no nested "
                                 "functions (run ToANormalForm and then LambdaLift first)")
            dead = self.live_in[n] - self.live_out[n]
            for v in sorted(dead, key=lambda x: self.order.get(x, len(self.order))):
                bindings.append((Var("x"), kill(self.visit(v)), None))
                self.count += 1
        body = self.visit(chain[-1].body)
        for var, value, span in reversed(bindings):
            body = Let(var, value, body, span)
        return body


def _binding_order(func: Function) -> dict:
    """Var -> position: parameters first, then let and pattern variables in program order."""
    params = list(func.params)
    body = func.body
    if type(body) is Function:  # a lifted closure: its inner function's parameters come next
        params += list(body.params)
        body = body.body
    order = {p: i for i, p in enumerate(params)}
    stack = [body]
    while stack:
        e = stack.pop()
        t = type(e)
        if t is Let:
            order.setdefault(e.var, len(order))
            stack.extend((e.body, e.value))
        elif t is Match:
            for c in reversed(e.clauses):
                stack.append(c.rhs)
        elif hasattr(e, "true_branch"):
            stack.extend((e.false_branch, e.true_branch))
    return order


def manifest_lifetimes(func: Function) -> Function:
    """``func`` without variable aliases and with ``memory.kill`` after each last use."""
    func = _AliasEliminator().visit(func)
    cfg = ControlFlowGraph(func, "ManifestLifetimes")
    _, live_in, live_out = liveness(cfg)
    inserter = _KillInserter(cfg, live_in, live_out, _binding_order(func))
    body = inserter.visit(func.body)
    record_stat("kills", inserter.count)
    if body is func.body:
        return func
    return Function(func.params, body, func.ret_type, func.type_params, func.attrs, func.span)


@register("ManifestLifetimes")
def ManifestLifetimes():  # noqa: N802 - TVM's name
    """Function pass (opt 0): remove aliases, then kill each variable after its last use."""
    return make_function_pass(lambda f, m, c: manifest_lifetimes(f), opt_level=0,
                              name="ManifestLifetimes")

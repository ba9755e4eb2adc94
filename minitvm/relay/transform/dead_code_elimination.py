"""DeadCodeElimination: drop unused pure let bindings; with inline_once, inline single-use ones.

A purity analysis over the whole module decides which let-bound values may be dropped or moved:
reference reads/writes, stateful ops and calls of unknown (higher-order, external) functions are
impure unless ``ignore_impurity``. A binding used inside a local function counts as used twice
(the function may run many times), so it is never inlined there. PrimFuncs pass through.

Types: as in TVM, the pass does not re-run type inference; a rebuilt function keeps the type of
the function it replaces (TVM's copy-on-write rebuild keeps it), rebuilt lets have none until
InferType runs, and unchanged sub-expressions keep theirs.

Difference from TVM: TVM assumes any call nested more than 25 calls deep is impure (to bound its
recursion), which keeps dead bindings alive in deep graphs; this analysis is iterative and has no
such cut-off. Global purity is the greatest fixed point over the call graph.
"""

from __future__ import annotations

from ...ir.expr import GlobalVar
from ...ir.op import Op
from ...ir.type import FuncType
from ...transform.decorators import module_pass
from ...transform.stats import record_stat
from ..adt import Constructor, Match, pattern_vars
from ..expr import Constant, Function, Let, Var
from ..expr_functor import dataflow_children
from ..scoped_functor import ScopedMutator
from ._pass_helpers import GeneratorFunctor, has_nonzero_attr, register

__all__ = ["DeadCodeElimination", "dead_code_elimination", "purity_map"]

_PURE = (True, True)


def _first_order(e) -> bool:
    t = e._checked_type
    if t is None and type(e) is Var:
        t = e.type_annotation
    if t is None:
        return type(e) is not Function
    return not isinstance(t, FuncType)


class _Purity(GeneratorFunctor):
    """(pure_eval, pure_call) of expressions; records the purity of every let-bound variable."""

    no_memo = (Var,)

    def __init__(self, mod, global_purity):
        super().__init__()
        self.mod = mod
        self.globals = global_purity
        self.var_purity: dict = {}

    def dispatch(self, e):
        t = type(e)
        if t is Constant or t is Constructor or isinstance(e, Constructor):
            return _PURE
        if t is Op:
            return (True, not e.get_attr("TOpIsStateful"))
        if t is GlobalVar:
            return (True, self.globals.get(e, (True, False))[1])
        if t is Var:
            return (True, self.var_purity.get(e, (True, _first_order(e)))[1])
        return getattr(self, "_" + t.__name__.lower())(e)

    def _function(self, f):
        for p in f.params:
            self.var_purity[p] = (True, _first_order(p))
        body = yield f.body
        return (True, body[0] and body[1])

    def _let(self, let):
        all_pure = True
        node = let
        while type(node) is Let:
            self.var_purity[node.var] = _PURE
            value = yield node.value
            self.var_purity[node.var] = value
            all_pure = all_pure and value[0]
            node = node.body
        body = yield node
        return (all_pure and body[0], body[1])

    def _call(self, c):
        callee = yield c.op
        args_pure = True
        for a in c.args:
            args_pure = (yield a)[0] and args_pure
        return (args_pure and callee[0] and callee[1], _first_order(c) or callee[1])

    def _if(self, i):
        c = yield i.cond
        t = yield i.true_branch
        f = yield i.false_branch
        return (c[0] and t[0] and f[0], t[1] and f[1])

    def _tuple(self, tup):
        pure = True
        for f in tup.fields:
            pure = (yield f)[0] and pure
        return (pure, True)

    def _tuplegetitem(self, t):
        tv = yield t.tuple_value
        return (tv[0], _first_order(t))

    def _refcreate(self, r):
        v = yield r.value
        return (v[0], True)

    def _refwrite(self, r):
        yield r.ref
        yield r.value
        return (False, True)

    def _refread(self, r):
        yield r.ref
        return (False, _first_order(r))

    def _match(self, m):
        data = yield m.data
        pure_eval, pure_call = data[0], True
        for c in m.clauses:
            for v in pattern_vars(c.lhs):
                self.var_purity[v] = (True, _first_order(v))
            rhs = yield c.rhs
            pure_eval = pure_eval and rhs[0]
            pure_call = pure_call and rhs[1]
        return (pure_eval, pure_call)


def purity_map(mod) -> dict:
    """Whether each let-bound variable of ``mod``'s Relay functions is bound to a pure value."""
    funcs = {gv: f for gv, f in mod.functions.items()
             if isinstance(f, Function) and not has_nonzero_attr(f, "Extern")}
    global_purity = {gv: _PURE for gv in funcs}
    for _ in range(len(funcs) + 1):
        analysis = _Purity(mod, global_purity)
        changed = False
        for gv, f in funcs.items():
            p = analysis.visit(f)
            if p != global_purity[gv]:
                global_purity[gv] = p
                changed = True
        if not changed:
            break
    return {v: p[0] for v, p in analysis.var_purity.items()}


class _Usage:
    """Counts uses of let-bound variables (0, 1 or 'many'), visiting pure values only if used."""

    def __init__(self, is_pure):
        self.is_pure = is_pure
        self.values: dict = {}
        self.uses: dict = {}
        self.level: dict = {}

    def run(self, root):
        seen: dict = {}
        stack = [(root, 0)]
        values, uses, levels = self.values, self.uses, self.level
        while stack:
            e, lvl = stack.pop()
            n = seen.get(e, 0) + 1
            seen[e] = n
            if n > 2:
                continue
            t = type(e)
            if t is Var:
                if e in values:
                    k = uses[e] = uses[e] + 1
                    if k == 1 and self.is_pure(e):
                        stack.append((values[e], lvl))
                    if levels[e] < lvl:
                        uses[e] += 1
            elif t is Function:
                stack.append((e.body, lvl + 1))
            elif t is Let:
                todo = []
                node = e
                while type(node) is Let:
                    if node.var not in values:  # a shared let is reached again: keep counts
                        values[node.var] = node.value
                        uses[node.var] = 0
                        levels[node.var] = lvl
                    if not self.is_pure(node.var):
                        todo.append((node.value, lvl))
                    node = node.body
                todo.append((node, lvl))
                stack.extend(reversed(todo))
            elif t is Match:
                kids = [(e.data, lvl)] + [(c.rhs, lvl) for c in e.clauses]
                stack.extend(reversed(kids))
            else:
                stack.extend((k, lvl) for k in reversed(dataflow_children(e)))


class _Eliminator(ScopedMutator):
    """Drops/inlines let bindings; its let hook runs on the driver's stack (any nesting depth)."""

    def __init__(self, usage, inline_once):
        super().__init__()
        self.usage = usage
        self.inline_once = inline_once
        self.inlined: dict = {}
        self.removed = 0

    def action(self, var) -> str:
        u = self.usage
        if var not in u.values or not u.is_pure(var):
            return "keep"
        n = u.uses.get(var, 0)
        if n == 0:
            return "elide"
        return "inline" if n == 1 and self.inline_once else "keep"

    def visit_var(self, v):
        return self.inlined.get(v, v)

    def gen_let(self, let):
        chain = self._let_chain(let)
        kept = []
        for node in chain:
            act = self.action(node.var)
            if act == "elide":
                self.removed += 1
                continue
            value = yield node.value
            if act == "inline":
                self.removed += 1
                self.inlined[node.var] = value
                self.memo_map.pop(node.var, None)
            else:
                kept.append((node, value))
        body = yield chain[-1].body
        for node, value in reversed(kept):
            body = node.with_fields(value=value, body=body)
        return body


def dead_code_elimination(func: Function, purity: dict | None = None, inline_once: bool = False,
                          ignore_impurity: bool = False) -> Function:
    """Eliminate (and optionally inline) let bindings of one function, given a purity map."""
    return _eliminate(func, purity, inline_once, ignore_impurity)[0]


def _eliminate(func, purity, inline_once, ignore_impurity):
    """``dead_code_elimination`` plus the number of bindings removed (elided or inlined)."""
    purity = purity or {}
    default = bool(ignore_impurity)

    def is_pure(v) -> bool:
        return purity.get(v, default)

    usage = _Usage(is_pure)
    usage.run(func)
    elim = _Eliminator(usage, inline_once)
    return elim.visit(func), elim.removed


@register("DeadCodeElimination")
def DeadCodeElimination(inline_once: bool = False,  # noqa: N802 - TVM's name
                        ignore_impurity: bool = False):
    """Module pass (opt 1, requires InferType): remove unused let bindings.

    Parameters
    ----------
    inline_once : bool
        Also inline bindings used exactly once.
    ignore_impurity : bool
        Treat every binding as pure (may drop or move side effects).
    """

    def run(mod, ctx):
        purity = {} if ignore_impurity else purity_map(mod)
        new = mod.shallow_copy()
        removed = 0
        for gv, func in list(mod.functions.items()):
            if isinstance(func, Function):
                out, n = _eliminate(func, purity, inline_once, ignore_impurity)
                removed += n
                if out is not func:
                    if out._checked_type is None:
                        # as TVM's (whose rebuilt function is a copy of the typed one): the
                        # function keeps its type, which eliminating bindings never changes
                        out._checked_type = func._checked_type
                    new.update_func(gv, out)
        record_stat("removed bindings", removed)
        return new

    return module_pass(run, opt_level=1, name="DeadCodeElimination", required=["InferType"],
                       needs=["typed"])


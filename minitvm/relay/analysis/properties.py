"""Relay's IR properties (typed, anf, gnf, fused) and its well-formedness check, registered
with the dialect-neutral pass infrastructure."""

from __future__ import annotations

from ...ir.dialect import register_hook
from ...ir.expr import GlobalVar, RelayExpr
from ...ir.node import node_operands
from ...ir.op import Op
from ...ir.type import TensorType, TupleType
from ...transform.properties import register_property
from ..adt import Constructor, Match, pattern_vars
from ..expr import Call, Constant, Function, If, Let, Var
from ..expr_functor import dataflow_children


def walk(expr, enter=None):
    """Every expression reachable from ``expr`` once, through the operands each node class
    declares (explicit stack); ``enter(fn)`` False skips a function's body."""
    seen = {id(expr)}
    stack = [expr]
    while stack:
        e = stack.pop()
        if isinstance(e, RelayExpr):
            yield e
        if enter is not None and type(e) is Function and not enter(e):
            continue
        for c in node_operands(e):
            if id(c) not in seen:
                seen.add(id(c))
                stack.append(c)


def relay_functions(mod):
    return [(gv, f) for gv, f in mod.functions.items() if isinstance(f, Function)]


# ------------------------------------------------------------------------------- properties
def _check_typed(mod, deep: bool = False) -> str | None:
    for gv, fn in relay_functions(mod):
        where = f"in @{gv.name_hint}"
        if fn._checked_type is None or fn.body._checked_type is None:
            return f"{where}: the function body has no type"
        if deep:
            for e in walk(fn):
                if not isinstance(e, Op | Constructor) and e._checked_type is None:
                    return f"{where}: a {type(e).__name__} has no type"
    return None


def _check_gnf(mod, deep: bool = False) -> str | None:
    for gv, fn in relay_functions(mod):
        for e in walk(fn):
            if type(e) is Let:
                return f"in @{gv.name_hint}: let %{e.var.name_hint} is a let binding"
    return None


def _check_anf(mod, deep: bool = False) -> str | None:
    atomic = (Var, GlobalVar, Constant, Op, Constructor)
    for gv, fn in relay_functions(mod):
        for e in walk(fn):
            kids = dataflow_children(e)
            if type(e) is Call:
                kids = e.args if isinstance(e.op, (*atomic, Function)) else kids
            elif type(e) is If:
                kids = (e.cond,)
            for k in kids:
                if not isinstance(k, atomic):
                    return f"in @{gv.name_hint}: a {type(k).__name__} operand of a " \
                           f"{type(e).__name__} is not let-bound"
    return None


def _check_fused(mod, deep: bool = False) -> str | None:
    def enter(f):
        return not (f.attrs and f.attrs.get("Primitive"))

    for gv, fn in relay_functions(mod):
        for e in walk(fn, enter):
            if type(e) is Call and isinstance(e.op, Op):
                return f"in @{gv.name_hint}: {e.op.name} is called outside a Primitive function"
    return None


register_property("typed", _check_typed, "InferType")
register_property("anf", _check_anf, "ToANormalForm")
register_property("gnf", _check_gnf, "ToGraphNormalForm")
register_property("fused", _check_fused, None, hint="run FuseOps first")


# ------------------------------------------------------------------------------- well-formed
def _bound_vars_of(e):

    t = type(e)
    if t is Let:
        return (e.var,)
    if t is Function:
        return e.params
    if t is Match:
        out = []
        for c in e.clauses:
            out.extend(pattern_vars(c.lhs))
        return out
    return ()


def _type_problem(e) -> str | None:
    """A sentence when the type cached on ``e`` disagrees with its operands' types."""

    t = e._checked_type
    if t is None:
        return None
    if type(e) is Var:
        ann = e.type_annotation
        if ann is not None and isinstance(ann, TensorType | TupleType) and ann != t:
            return f"%{e.name_hint} is annotated {ann} but typed {t}"
    elif type(e) is Function:
        body_t = e.body._checked_type
        if e.ret_type is not None and body_t is not None and \
                isinstance(body_t, TensorType | TupleType) and e.ret_type != body_t:
            return f"a function returns {body_t} but declares {e.ret_type}"
    elif type(e) is Call and isinstance(e.op, Op):
        rel = e.op.get_attr("FTypeRelation")
        arg_types = [a._checked_type for a in e.args]
        if rel is None or not all(isinstance(a, TensorType | TupleType) for a in arg_types):
            return None
        try:
            expected = rel(arg_types, e.attrs)
        except Exception as err:
            return f"{e.op.name} does not type-check on its operands ({err})"
        if isinstance(expected, TensorType | TupleType) and expected != t:
            return f"{e.op.name} is typed {t} but its operands give {expected}"
    return None


@register_hook("well_formed", Function)
def well_formed_problems(gv, fn, limit: int = 5) -> list[str]:
    """Up to ``limit`` problems of the Relay function ``fn`` bound to ``gv``: unbound or
    twice-bound variables, types that disagree with their operands."""
    problems: list[str] = []
    bound: set[int] = set()
    uses = []
    for e in walk(fn):
        for v in _bound_vars_of(e):
            if id(v) in bound:
                problems.append(f"in @{gv.name_hint}: %{v.name_hint} is bound more than once")
            bound.add(id(v))
        if type(e) is Var:
            uses.append((gv, e))
        why = _type_problem(e)
        if why:
            problems.append(f"in @{gv.name_hint}: {why}")
        if len(problems) >= limit:
            return problems
    for gv, v in uses:
        if id(v) not in bound:
            problems.append(f"in @{gv.name_hint}: %{v.name_hint} is used but never bound")
            if len(problems) >= limit:
                return problems
    return problems

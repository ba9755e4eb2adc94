"""Well-formedness after a pass: no unbound variables, no duplicate bindings, consistent types."""

from __future__ import annotations


class WellFormedError(ValueError):
    """A pass left the IR ill-formed (raised by ``transform.verify_each``)."""


def _bound_vars_of(e):
    from ...relay.adt import Match, pattern_vars
    from ...relay.expr import Function, Let

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
    from ...ir.op import Op
    from ...ir.type import TensorType, TupleType
    from ...relay.expr import Call, Function, Var

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


def well_formed_problems(mod, limit: int = 5) -> list[str]:
    """Up to ``limit`` problems of ``mod``: unbound or twice-bound variables, type mismatches."""
    from ...relay.expr import Var
    from ..properties import relay_functions, walk

    problems: list[str] = []
    for gv, fn in relay_functions(mod):
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

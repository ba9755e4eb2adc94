"""detect_feature: which language features (let, if, references, ADTs, sharing...) a program uses.

Passes use it to state what they accept (first-order gradient rejects closures) and tests to
check what a transformation produced. ``fGraph`` means some non-atomic expression is used more
than once (a DAG, not a tree); ``fLetRec`` means a let binds a function that refers to itself.
"""

from __future__ import annotations

from enum import IntEnum

from ...ir.expr import GlobalVar
from ...ir.module import IRModule
from ...ir.op import Op
from ..adt import Constructor, Match
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
from .free_vars import free_vars

__all__ = ["Feature", "detect_feature"]


class Feature(IntEnum):
    """The features used by a Relay program (TVM's numbering)."""

    fVar = 0
    fGlobalVar = 1
    fConstant = 2
    fTuple = 3
    fTupleGetItem = 4
    fFunction = 5
    fOp = 6
    fCall = 7
    fLet = 8
    fIf = 9
    fRefCreate = 10
    fRefRead = 11
    fRefWrite = 12
    fConstructor = 13
    fMatch = 14
    fGraph = 15
    fLetRec = 16


_KIND = {
    Var: Feature.fVar, GlobalVar: Feature.fGlobalVar, Constant: Feature.fConstant,
    Tuple: Feature.fTuple, TupleGetItem: Feature.fTupleGetItem, Function: Feature.fFunction,
    Op: Feature.fOp, Call: Feature.fCall, Let: Feature.fLet, If: Feature.fIf,
    RefCreate: Feature.fRefCreate, RefRead: Feature.fRefRead, RefWrite: Feature.fRefWrite,
    Constructor: Feature.fConstructor, Match: Feature.fMatch,
}
_ATOMIC = (Var, GlobalVar, Op, Constructor, Constant)


def _children(e) -> list:
    if isinstance(e, Call):
        return [e.op, *e.args]
    if isinstance(e, Tuple):
        return list(e.fields)
    if isinstance(e, TupleGetItem):
        return [e.tuple_value]
    if isinstance(e, Function):
        return [*e.params, e.body]
    if isinstance(e, Let):
        return [e.var, e.value, e.body]
    if isinstance(e, If):
        return [e.cond, e.true_branch, e.false_branch]
    if isinstance(e, RefCreate):
        return [e.value]
    if isinstance(e, RefRead):
        return [e.ref]
    if isinstance(e, RefWrite):
        return [e.ref, e.value]
    if isinstance(e, Match):
        return [e.data, *(c.rhs for c in e.clauses)]
    return []


def _expr_features(expr, out: set) -> None:
    seen: set = set()
    stack = [expr]
    while stack:
        e = stack.pop()
        if id(e) in seen:
            if not isinstance(e, _ATOMIC):
                out.add(Feature.fGraph)
            continue
        seen.add(id(e))
        kind = _KIND.get(type(e))
        if kind is None:
            for cls, k in _KIND.items():
                if isinstance(e, cls):
                    kind = k
                    break
        if kind is not None:
            out.add(kind)
        if isinstance(e, Let) and isinstance(e.value, Function) and e.var in free_vars(e.value):
            out.add(Feature.fLetRec)
        stack.extend(reversed(_children(e)))


def detect_feature(a, b=None) -> set[Feature]:
    """Detect the features used in an expression and/or a module.

    Parameters
    ----------
    a : Union[tvm.relay.Expr, tvm.IRModule]
        The input expression or module.
    b : Optional[Union[tvm.relay.Expr, tvm.IRModule]]
        The input expression or module. The two arguments cannot both be expressions or modules.

    Returns
    -------
    features : Set[Feature]
        Features used in the program.
    """
    if isinstance(a, IRModule) and b is not None and not isinstance(b, IRModule):
        a, b = b, a
    if b is not None and isinstance(a, IRModule) == isinstance(b, IRModule):
        raise TypeError("detect_feature takes an expression and/or a module, not two of a kind")
    out: set = set()
    for x in (a, b):
        if isinstance(x, IRModule):
            for f in x.functions.values():
                if isinstance(f, Function):
                    _expr_features(f, out)
        elif x is not None:
            _expr_features(x, out)
    return out

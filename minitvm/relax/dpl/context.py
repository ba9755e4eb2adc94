"""Graph-level Relax patterns (TVM's ``relax.dpl`` ``PatternContext``, ``PatternSeq``,
``match_dfb``): several patterns matched together against the bindings of one dataflow block.

Inside ``with PatternContext() as ctx:`` every call pattern built records that its arguments
are used by it, and ``a ^ b`` / ``a >> b`` (``used_by`` / ``only_used_by``) record that the
variable ``a`` matches is used by (only by) what ``b`` matches. ``match_dfb`` then finds one
binding per non-leaf pattern — distinct bindings, each pattern node matching one expression
throughout — such that every recorded use holds, by backtracking over the block's bindings.
"""

from __future__ import annotations

import threading

from ...ir.op import Op
from ..expr import Call, DataflowBlock, Tuple, TupleGetItem, Var, VarBinding
from .matcher import _Matcher
from .pattern import (
    CallPattern,
    ConstantPattern,
    DataflowVarPattern,
    DFPattern,
    ExprPattern,
    GlobalVarPattern,
    VarPattern,
    WildcardPattern,
)

__all__ = ["PatternContext", "PatternSeq", "match_dfb", "used_by", "only_used_by"]

_LEAVES = (WildcardPattern, VarPattern, DataflowVarPattern, GlobalVarPattern, ConstantPattern,
           ExprPattern)
_STATE = threading.local()


class _Use:
    """``producer`` is used by ``consumer`` (at argument ``index``; -1: any), maybe only by it."""

    __slots__ = ("producer", "consumer", "index", "only")

    def __init__(self, producer: DFPattern, consumer: DFPattern, index: int, only: bool):
        self.producer, self.consumer, self.index, self.only = producer, consumer, index, only


class PatternContext:
    """The patterns and use constraints built while it is entered (``with PatternContext()``)."""

    def __init__(self, incremental: bool = False):
        outer = PatternContext.current() if incremental else None
        self.patterns: list[DFPattern] = list(outer.patterns) if outer else []
        self.uses: list[_Use] = list(outer.uses) if outer else []
        self._seen: set[int] = {id(p) for p in self.patterns}

    @staticmethod
    def current() -> PatternContext | None:
        """The innermost entered context, or None."""
        stack = getattr(_STATE, "stack", None)
        return stack[-1] if stack else None

    def __enter__(self) -> PatternContext:
        if not hasattr(_STATE, "stack"):
            _STATE.stack = []
        _STATE.stack.append(self)
        return self

    def __exit__(self, *exc) -> None:
        _STATE.stack.pop()

    def add_pattern(self, p: DFPattern) -> None:
        if id(p) not in self._seen:
            self._seen.add(id(p))
            self.patterns.append(p)

    def add_use(self, producer: DFPattern, consumer: DFPattern, index: int, only: bool) -> None:
        self.add_pattern(producer)
        self.add_pattern(consumer)
        self.uses.append(_Use(producer, consumer, index, only))

    def match_dfb(self, dfb: DataflowBlock) -> dict | None:
        """This context's patterns matched in ``dfb`` (see :func:`match_dfb`)."""
        return match_dfb(self, dfb)


class PatternSeq:
    """A chain of patterns joined by use constraints (``a ^ b >> c``)."""

    def __init__(self, patterns: list[DFPattern]):
        self.patterns = list(patterns)

    def used_by(self, other, index: int = -1) -> PatternSeq:
        return used_by(self, other, index)

    def only_used_by(self, other, index: int = -1) -> PatternSeq:
        return only_used_by(self, other, index)

    __xor__ = used_by
    __rshift__ = only_used_by

    def __getitem__(self, i: int) -> DFPattern:
        return self.patterns[i]

    def __len__(self) -> int:
        return len(self.patterns)


def _seq(p) -> PatternSeq:
    return p if isinstance(p, PatternSeq) else PatternSeq([p])


def _link(lhs, rhs, index: int, only: bool) -> PatternSeq:
    lhs, rhs = _seq(lhs), _seq(rhs)
    ctx = PatternContext.current()
    if ctx is not None:
        ctx.add_use(lhs.patterns[-1], rhs.patterns[0], index, only)
    return PatternSeq(lhs.patterns + rhs.patterns)


def used_by(lhs, rhs, index: int = -1) -> PatternSeq:
    """``lhs``'s value is used by ``rhs`` (at argument ``index``), perhaps elsewhere too."""
    return _link(lhs, rhs, index, False)


def only_used_by(lhs, rhs, index: int = -1) -> PatternSeq:
    """``lhs``'s value is used by ``rhs`` and by nothing else."""
    return _link(lhs, rhs, index, True)


def match_dfb(ctx: PatternContext, dfb: DataflowBlock) -> dict | None:
    """Pattern -> bound variable (or matched leaf expression) for one match of ``ctx``'s
    patterns in ``dfb``, or None. Each non-leaf pattern matches the value of its own binding."""
    bindings = [b for b in dfb.bindings if isinstance(b, VarBinding)]
    var2val = {b.var: b.value for b in bindings}
    var_of = {id(b.value): b.var for b in bindings}
    users: dict = {}  # (computed at the first only_used_by check)
    anchors = _anchor_order([p for p in ctx.patterns if not isinstance(p, _LEAVES)])

    def var_for(e):
        return var_of.get(id(e), e if isinstance(e, Var) else None)

    def uses_hold(memo) -> bool:
        for u in ctx.uses:
            if u.producer not in memo or u.consumer not in memo:
                return False
            pv = var_for(memo[u.producer])
            consumer = memo[u.consumer]
            if pv is None or not isinstance(consumer, Call | Tuple):
                continue  # (a constant or other leaf has no uses to constrain)
            args = list(consumer.args if isinstance(consumer, Call) else consumer.fields)
            if u.index >= 0:
                if u.index >= len(args) or not _mentions(args[u.index], pv):
                    return False
            elif not any(_mentions(a, pv) for a in args):
                return False
            if u.only and not users:
                users.update(_users(dfb))
            if u.only and any(c is not var_for(consumer) for c in users.get(pv, ())):
                return False
        return True

    # iterative backtracking: one frame per anchor, each trying the bindings in order
    frames = [(0, 0, {}, frozenset())]
    while frames:
        i, start, memo, taken = frames.pop()
        if i == len(anchors):
            if uses_hold(memo):
                return {p: (var_for(e) or e) for p, e in memo.items()}
            continue
        p = anchors[i]
        if p in memo:  # matched already as part of an earlier anchor: its own binding
            v = var_of.get(id(memo[p]))
            if v is not None and v not in taken:
                frames.append((i + 1, 0, memo, taken | {v}))
            continue
        op = _callee_op(p)
        for k in range(start, len(bindings)):
            v = bindings[k].var
            if v in taken:
                continue
            if op is not None:  # (a call of another operator cannot match: not tried)
                value = bindings[k].value
                if not isinstance(value, Call) or value.op is not op:
                    continue
            m = _Matcher(var2val)
            m.memo = dict(memo)
            if m.match(p, v) and var_of.get(id(m.memo[p])) is v:
                frames.append((i, k + 1, memo, taken))  # the other choices, tried later
                frames.append((i + 1, 0, m.memo, taken | {v}))
                break
    return None


def _callee_op(p):
    """The operator a call pattern's callee names (``is_op(...)(...)``), else None."""
    if isinstance(p, CallPattern) and isinstance(p.op, ExprPattern) and isinstance(p.op.expr, Op):
        return p.op.expr
    return None


def _anchor_order(anchors: list) -> list:
    """Outermost patterns first: one nested in another is bound when the outer one matches,
    so the search tries the block's bindings for the outer pattern only (linear, not
    quadratic, in the block's length)."""
    inner: set[int] = set()
    for a in anchors:
        stack = list(_sub_patterns(a))
        while stack:
            p = stack.pop()
            if id(p) not in inner:
                inner.add(id(p))
                stack.extend(_sub_patterns(p))
    return [a for a in anchors if id(a) not in inner] + [a for a in anchors if id(a) in inner]


def _sub_patterns(p) -> list:
    out = []
    for name in ("op", "tuple", "left", "right", "reject", "pattern"):
        q = getattr(p, name, None)
        if isinstance(q, DFPattern):
            out.append(q)
    for name in ("args", "fields"):
        out.extend(q for q in getattr(p, name, None) or () if isinstance(q, DFPattern))
    return out


def _mentions(arg, var: Var) -> bool:
    """Whether ``arg`` is ``var`` or a tuple holding it."""
    if arg is var:
        return True
    return isinstance(arg, Tuple) and any(_mentions(f, var) for f in arg.fields)


def _users(dfb: DataflowBlock) -> dict:
    """Variable -> the variables whose bindings use it."""
    out: dict = {}
    for b in dfb.bindings:
        value = b.value
        stack = list(value.args) if isinstance(value, Call) else [value]
        while stack:
            e = stack.pop()
            if isinstance(e, Var):
                users = out.get(e)
                if users is None:
                    out[e] = [b.var]
                else:
                    users.append(b.var)
            elif isinstance(e, Call):
                stack.extend(e.args)
            elif isinstance(e, Tuple):
                stack.extend(e.fields)
            elif isinstance(e, TupleGetItem):
                stack.append(e.tuple_value)
    return out

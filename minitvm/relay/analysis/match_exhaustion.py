"""unmatched_cases: the patterns a ``match`` does not cover, found as TVM finds them.

Start from one candidate, ``_``. Take a candidate off a stack and try the clauses in order: a
clause whose pattern cannot match it is skipped; one that matches it settles it; one that needs
the candidate spelled out further (it tests a constructor where the candidate still has ``_``)
replaces it by its expansions along that clause's pattern (each constructor of the ADT, with
``_`` fields; a tuple of ``_``) and those go on the stack. A candidate no clause takes is
unmatched. Expansion follows the finite clause patterns, so the search ends; every pattern walk
uses an explicit stack.
"""

from __future__ import annotations

import itertools

from ..adt import Match, Pattern, PatternConstructor, PatternTuple, PatternWildcard

__all__ = ["unmatched_cases"]

_MATCH, _CLASH, _UNSPECIFIED = 0, 1, 2


def _check(clause_pat: Pattern, cand: Pattern) -> int:
    """Whether ``clause_pat`` matches every value ``cand`` describes, none of them, or whether
    that depends on parts ``cand`` leaves open."""
    unspecified = False
    stack = [(clause_pat, cand)]
    pop, push, push_one = stack.pop, stack.extend, stack.append
    while stack:
        p, c = pop()
        tp = type(p)
        if tp is PatternConstructor:
            if type(c) is not PatternConstructor:
                unspecified = True
                continue
            if p.constructor is not c.constructor:
                return _CLASH
        elif tp is PatternTuple:
            if type(c) is not PatternTuple:
                unspecified = True
                continue
        else:  # a variable or a wildcard matches anything
            continue
        ps, cs = p.patterns, c.patterns
        if len(ps) != len(cs):
            _same_arity(p, c)
        if len(ps) == 1:
            push_one((ps[0], cs[0]))
        else:
            push(zip(ps, cs))
    return _UNSPECIFIED if unspecified else _MATCH


def _same_arity(p, c) -> None:
    if len(p.patterns) != len(c.patterns):
        raise ValueError(f"unmatched_cases: a pattern has {len(p.patterns)} fields where the "
                         f"same constructor or tuple has {len(c.patterns)}")


def _adt_constructors(ctor, mod) -> tuple:
    tds = getattr(mod, "type_definitions", None) or {}
    td = tds.get(ctor.belong_to)
    if td is None:
        raise ValueError(f"unmatched_cases: the ADT of constructor {ctor.name_hint!r} is not in "
                         "the module; pass the module that defines it as `mod`")
    return td.constructors


def _product(fields: list[list]) -> list[tuple]:
    """All choices of one entry per field, the first field varying fastest (TVM's order)."""
    if len(fields) == 1:
        return [(x,) for x in fields[0]]
    if all(len(f) == 1 for f in fields):
        return [tuple(f[0] for f in fields)]
    return [tuple(reversed(t)) for t in itertools.product(*reversed(fields))]


def _expand(clause_pat: Pattern, cand: Pattern, mod) -> list:
    """The candidates ``cand`` splits into along ``clause_pat`` (one step at each ``_`` the
    clause pattern tests), computed bottom-up on explicit stacks."""
    done: list[list] = []  # the expansions of finished sub-patterns, left to right
    work = [(clause_pat, cand, False)]
    while work:
        p, c, ready = work.pop()
        if ready:
            n = len(p.patterns)
            if n == 1 and type(c) is PatternConstructor:  # (a one-field constructor: in place)
                ctor = c.constructor
                done[-1] = [PatternConstructor(ctor, (x,)) for x in done[-1]]
                continue
            fields = _product(done[len(done) - n:])
            del done[len(done) - n:]
            if type(c) is PatternConstructor:
                done.append([PatternConstructor(c.constructor, f) for f in fields])
            else:
                done.append([PatternTuple(f) for f in fields])
            continue
        tp = type(p)
        if tp is PatternConstructor:
            if type(c) is PatternWildcard:
                done.append([PatternConstructor(k, [PatternWildcard() for _ in k.inputs])
                             for k in _adt_constructors(p.constructor, mod)])
                continue
        elif tp is PatternTuple:
            if type(c) is PatternWildcard:
                done.append([PatternTuple([PatternWildcard() for _ in p.patterns])])
                continue
        else:
            done.append([c])
            continue
        work.append((p, c, True))
        ps, cs = p.patterns, c.patterns
        if len(ps) == 1 and len(cs) == 1:
            work.append((ps[0], cs[0], False))
            continue
        if len(ps) != len(cs):
            _same_arity(p, c)
        work.extend((sp, sc, False) for sp, sc in reversed(list(zip(ps, cs))))
    return done[0]


def unmatched_cases(match: Match, mod=None) -> list:
    """The patterns of values ``match`` has no clause for (empty when it is exhaustive).

    Parameters
    ----------
    match : tvm.relay.Match
        The match expression.
    mod : Optional[tvm.IRModule]
        The module defining the ADTs its patterns use.
    """
    if not isinstance(match, Match):
        raise TypeError(f"unmatched_cases expects a relay.Match, got {type(match).__name__}")
    candidates: list = [PatternWildcard()]
    failures: list = []
    while candidates:
        cand = candidates.pop()
        for clause in match.clauses:
            result = _check(clause.lhs, cand)
            if result == _CLASH:
                continue
            if result == _UNSPECIFIED:
                candidates.extend(_expand(clause.lhs, cand, mod))
            break
        else:
            failures.append(cand)
    return failures

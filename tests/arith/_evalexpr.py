"""Numeric evaluation of TIR integer/boolean expressions, for checking the simplifier."""

from __future__ import annotations

from minitvm.tir import expr as E
from minitvm.tir.stmt_functor import expr_children, post_order


class Undefined(Exception):
    """Division by zero somewhere in the expression."""


def _trunc_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def evaluate(expr, env: dict) -> int:
    """The value of ``expr`` with variables from ``env`` (Python integers, no overflow)."""
    memo: dict[int, int] = {}
    for node in post_order(expr):
        k = [memo[id(c)] for c in expr_children(node)]
        t = type(node)
        if t is E.IntImm:
            v = node.value
        elif isinstance(node, E.Var):
            v = env[node]
        elif t is E.Add:
            v = k[0] + k[1]
        elif t is E.Sub:
            v = k[0] - k[1]
        elif t is E.Mul:
            v = k[0] * k[1]
        elif t in (E.FloorDiv, E.FloorMod, E.Div, E.Mod):
            if k[1] == 0:
                raise Undefined
            if t is E.FloorDiv:
                v = k[0] // k[1]
            elif t is E.FloorMod:
                v = k[0] % k[1]
            elif t is E.Div:
                v = _trunc_div(k[0], k[1])
            else:
                v = k[0] - k[1] * _trunc_div(k[0], k[1])
        elif t is E.Min:
            v = min(k)
        elif t is E.Max:
            v = max(k)
        elif t is E.LT:
            v = int(k[0] < k[1])
        elif t is E.LE:
            v = int(k[0] <= k[1])
        elif t is E.GT:
            v = int(k[0] > k[1])
        elif t is E.GE:
            v = int(k[0] >= k[1])
        elif t is E.EQ:
            v = int(k[0] == k[1])
        elif t is E.NE:
            v = int(k[0] != k[1])
        elif t is E.And:
            v = int(bool(k[0]) and bool(k[1]))
        elif t is E.Or:
            v = int(bool(k[0]) or bool(k[1]))
        elif t is E.Not:
            v = int(not k[0])
        elif t is E.Select:
            v = k[1] if k[0] else k[2]
        elif t is E.Cast:
            v = k[0]
        else:
            raise NotImplementedError(t.__name__)
        memo[id(node)] = v
    return memo[id(expr)]

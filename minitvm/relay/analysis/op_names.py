"""The operators a Relay expression calls, by name, remembered for the last few expressions.

The build pipeline runs a dozen pattern passes (SimplifyInference, the legalizations, FuseAttention,
SplitConvPool, ...) that each rebuild a whole function to find the few operators they rewrite;
most models, and every big elementwise chain, hold none of them. One iterative walk answers
"which operators are called here" for all of those passes: each asks it first and returns the
function as it is when none of its operators occurs (a function no pass changed is the same
object, so the walk is made once for the run of passes).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterable

from ...ir.node import Node, node_operands
from ...ir.op import Op

__all__ = ["op_names", "calls_any", "calls_op_with_attr"]

# expressions remembered per thread, by weak reference (a build does not keep a big program
# alive after it; a dead entry's id may be reused, which the reference tells apart)
_KEEP = 4
_LOCAL = threading.local()


def _ops(expr) -> dict[str, Op]:
    """{name: operator} of every operator under ``expr`` (memoized)."""
    memo = getattr(_LOCAL, "memo", None)
    if memo is None:
        memo = _LOCAL.memo = {}
    hit = memo.get(id(expr))
    if hit is not None and hit[0]() is expr:
        return hit[1]
    ops: dict[str, Op] = {}
    seen: set[int] = set()
    stack = [expr]
    while stack:
        e = stack.pop()
        if isinstance(e, Op):
            ops[e.name] = e
            continue
        if id(e) in seen or not isinstance(e, Node):
            continue
        seen.add(id(e))
        stack.extend(node_operands(e))
    try:
        ref = weakref.ref(expr)
    except TypeError:  # (an object without weak references: not remembered)
        return ops
    if len(memo) >= _KEEP:
        memo.pop(next(iter(memo)))
    memo[id(expr)] = (ref, ops)
    return ops


def op_names(expr) -> frozenset[str]:
    """The names of every operator ``expr`` calls or refers to, nested functions (fused
    primitives, closures) and branches included."""
    return frozenset(_ops(expr))


def calls_any(expr, names: Iterable[str]) -> bool:
    """Whether ``expr`` calls an operator named in ``names``."""
    ops = _ops(expr)
    return any(n in ops for n in names)


def calls_op_with_attr(expr, attr: str) -> bool:
    """Whether ``expr`` calls an operator that has attribute ``attr`` (a legalize or
    alter-layout hook, for instance)."""
    return any(op.get_attr(attr) is not None for op in _ops(expr).values())

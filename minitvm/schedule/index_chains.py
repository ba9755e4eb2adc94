"""Index chains of reshapes simplified before an injective stage is scheduled.

A reshape reads its input at the flat position of the element it stores, unravelled over the
input's shape; a transpose or another reshape inlined over it nests those divisions: FuseFormer's
fold read its columns [2, 1568, 121] as ``((((a * 7 + b) * 7 + c) * 11 + d) * 11 + t) // 121 //
1568`` and so on, per element. The loop patterns (a transposed axis, contiguous lanes, a
divided last axis) do not see through such chains, and the division chains stay in the loop. With
every axis bounded by its extent, the arithmetic simplifier folds them (``... * 11 + t) // 121``
with ``t < 11`` is ``... // 11``): the 2x32x7x11x7x11 transpose of those columns took 1.09 ms.
"""

from __future__ import annotations

from ..arith import Analyzer
from ..tir import expr as E
from ..tir.stmt_functor import post_order, transform_expr

# indices with more nodes than this are left alone (the simplifier's time grows with them)
MAX_INDEX_NODES = 600


def _is_chain(index) -> bool:
    """A division or modulo of a sum or of another division (a flat position unravelled), in
    plain integer arithmetic on variables (no loads, no calls)?"""
    chain = False
    nodes = 0
    for e in post_order(index):
        nodes += 1
        if nodes > MAX_INDEX_NODES or isinstance(e, (E.BufferLoad, E.Call, E.Select)):
            return False
        if isinstance(e, (E.FloorDiv, E.FloorMod)) and not chain:
            chain = any(isinstance(x, (E.Add, E.FloorDiv, E.FloorMod)) for x in post_order(e.a))
    return chain


def _divmods(index) -> int:
    return sum(isinstance(e, (E.FloorDiv, E.FloorMod)) for e in post_order(index))


def simplify_index_chains(t, body):
    """``body`` of stage ``t`` with each load index that divides a sum or a division simplified
    under the stage's axis bounds, where that leaves fewer divisions; ``body`` itself when none
    does."""
    ana = None

    def fpost(e):
        nonlocal ana
        if not isinstance(e, E.BufferLoad) or not any(_is_chain(i) for i in e.indices):
            return None
        if ana is None:
            ana = Analyzer()
            for iv in t.op.axis:
                ana.bind(iv.var, E.Range.from_min_extent(iv.dom.min, iv.dom.extent))
        new, changed = [], False
        for i in e.indices:
            s = ana.simplify(i) if _is_chain(i) else i
            if s is not i and s.dtype == i.dtype and _divmods(s) < _divmods(i):
                new.append(s)
                changed = True
            else:
                new.append(i)
        return E.BufferLoad(e.buffer, new) if changed else None

    return transform_expr(body, fpost)

"""Index chains of reshapes simplified before an injective stage is scheduled.

A reshape reads its input at the flat position of the element it stores, unravelled over the
input's shape; a transpose or another reshape inlined over it nests those divisions: FuseFormer's
fold read its columns [2, 1568, 121] as ``((((a * 7 + b) * 7 + c) * 11 + d) * 11 + t) // 121 //
1568`` and so on, per element. The loop patterns (a transposed axis, contiguous lanes, a
divided last axis) do not see through such chains, and the division chains stay in the loop. With
every axis bounded by its extent, the arithmetic simplifier folds them (``... * 11 + t) // 121``
with ``t < 11`` is ``... // 11``): the 2x32x7x11x7x11 transpose of those columns took 1.09 ms.

The tests that pick a concatenate's or a stack's piece (``topi.utils.pick_piece``) read the same
chains: a stack of 100 concatenates reshaped ``[2, 100, 2, 128]`` (DeepSpeech2's summed BiGRU
directions) tested ``(((b * 100 + t) * 2 + h) * 128 + k) // 256 % 100 < 50``. Through the
innermost (vector) variable ``k`` that test differs per lane, so every lane evaluated the whole
tree, 200 loads per vector: 3.2 ms where ``t < 50`` branches once per row (12 us). A comparison's
chained operand is simplified the same way.
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
    """``body`` of stage ``t`` with each load index, and each operand of an integer comparison
    (a piece tree's test), that divides a sum or a division simplified under the stage's axis
    bounds, where that leaves fewer divisions; ``body`` itself when none does."""
    ana = None

    def simplified(i):
        nonlocal ana
        if not _is_chain(i):
            return i
        if ana is None:
            ana = Analyzer()
            for iv in t.op.axis:
                ana.bind(iv.var, E.Range.from_min_extent(iv.dom.min, iv.dom.extent))
        s = ana.simplify(i)
        return s if s is not i and s.dtype == i.dtype and _divmods(s) < _divmods(i) else i

    def fpost(e):
        if isinstance(e, E.BufferLoad):
            new = [simplified(i) for i in e.indices]
            changed = any(a is not b for a, b in zip(new, e.indices, strict=True))
            return E.BufferLoad(e.buffer, new) if changed else None
        if isinstance(e, E.CmpOp) and e.a.dtype.startswith("int"):
            a, b = simplified(e.a), simplified(e.b)
            return type(e)(a, b) if a is not e.a or b is not e.b else None
        return None

    return transform_expr(body, fpost)

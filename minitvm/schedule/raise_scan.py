"""Prefix scans and top-k selections in raised TE stages: Relax's legalized ``cumsum`` /
``cumprod`` / ``topk`` / ``sort`` / ``argsort`` as the stages Relay's computes build, so that the
rule table's one-pass-per-row schedules (``schedule.scan``, ``schedule.selection``) compute them.

LegalizeOps writes a scan as one reduction per output element under a mask::

    T_cumsum[o, i] = sum_k Select(k <= i, X[o, k], 0)      (k < i when exclusive; prod from 1)

``scan_tag`` recognizes it and gives the attrs ``schedule.scan`` reads. A selection
(``topi.selection.ranked_indices``) is two reductions, the rank of every element and the
position of each rank::

    T_topk_rank[o, p] = sum_q Select(before(X[o, q], X[o, p], q, p), 1, 0)
    T_topk_indices[o, j] = sum_p Select(T_topk_rank[o, p] == j, p, 0)

``selection_stage`` recognizes the second reading the first (each compared with what
``topi.selection`` builds for the operand, axis and direction found) and gives the one stage
``topi.selection.topk_indices`` that ``schedule.selection`` lowers; the rank stage is then read
by nothing and not computed.
"""

from __future__ import annotations

from ..ir.structural import structural_equal
from ..te.tensor import ComputeOp, Tensor
from ..tir import expr as E
from ..tir.stmt_functor import post_order
from ..topi import selection
from ..topi.scan import SCAN_TAG
from .common import const_int, same_dims

NONE: tuple[str, dict] = ("", {})


def _reduction(t: Tensor):
    """``(kind, source, reduce var)`` of a one-axis sum / product from its identity, or None."""
    if not isinstance(t.op, ComputeOp):
        return None
    body = t.op.body
    if not isinstance(body, E.Reduce) or len(body.source) != 1 or len(body.axis) != 1 or \
            not (body.condition is None or const_int(body.condition) == 1):
        return None
    comb = body.combiner
    res, ident = comb.result[0], comb.identity_element[0]
    if not isinstance(res, (E.Add, E.Mul)) or {id(res.a), id(res.b)} != \
            {id(comb.lhs[0]), id(comb.rhs[0])}:
        return None
    kind = "sum" if isinstance(res, E.Add) else "prod"
    if not isinstance(ident, (E.IntImm, E.FloatImm)) or \
            ident.value != (0 if kind == "sum" else 1) or \
            (body.init and not structural_equal(body.init[0], ident)):
        return None
    return kind, body.source[0], body.axis[0].var


def _axis_of(v, axes) -> int | None:
    for d, iv in enumerate(axes):
        if iv.var is v:
            return d
    return None


def scan_tag(t: Tensor) -> tuple[str, dict]:
    """``(SCAN_TAG, attrs)`` when raised stage ``t`` is a masked-reduction prefix scan along one
    axis of a tensor of its shape, else ``("", {})``."""
    red = _reduction(t)
    if red is None:
        return NONE
    kind, src, k = red
    if not isinstance(src, E.Select) or not isinstance(src.false_value, (E.IntImm, E.FloatImm)) \
            or src.false_value.value != (0 if kind == "sum" else 1):
        return NONE
    cond, val = src.condition, src.true_value
    if isinstance(cond, (E.LE, E.LT)) and cond.a is k:
        i, exclusive = cond.b, isinstance(cond, E.LT)
    elif isinstance(cond, (E.GE, E.GT)) and cond.b is k:
        i, exclusive = cond.a, isinstance(cond, E.GT)
    else:
        return NONE
    axes = t.op.axis
    axis = _axis_of(i, axes)
    val = val.value if isinstance(val, E.Cast) else val  # (the schedule casts its loads too)
    if axis is None or not isinstance(val, E.ProducerLoad):
        return NONE
    x = val.producer
    want = [k if d == axis else iv.var for d, iv in enumerate(axes)]
    if len(val.indices) != len(want) or any(a is not b for a, b in zip(val.indices, want)) or \
            not same_dims(x.shape, t.shape):
        return NONE
    return SCAN_TAG, {"operands": (x,), "scan": kind, "axis": axis, "exclusive": exclusive}


def selection_stage(t: Tensor) -> Tensor | None:
    """``topi.selection.topk_indices`` of the operand when raised stage ``t`` picks the position
    of each rank of a ``T_topk_rank`` stage (static shapes from the axis on), else None."""
    red = _reduction(t)
    if red is None or red[0] != "sum":
        return None
    _, src, p = red
    if not isinstance(src, E.Select) or not isinstance(src.condition, E.EQ) or \
            not isinstance(src.condition.a, E.ProducerLoad):
        return None
    axis = _axis_of(src.condition.b, t.op.axis)
    rank = src.condition.a.producer
    if axis is None or not isinstance(rank.op, ComputeOp):
        return None
    out_vars = [iv.var for iv in t.op.axis]
    if not structural_equal(src, selection.pick_body(rank, out_vars, p, axis, t.dtype)):
        return None
    rred = _reduction(rank)
    if rred is None or rred[0] != "sum":
        return None
    _, rsrc, q = rred
    operands = {id(e.producer): e.producer for e in post_order(rsrc)
                if isinstance(e, E.ProducerLoad)}
    if len(operands) != 1:
        return None
    (x,) = operands.values()
    if not same_dims(x.shape, rank.shape) or x.dtype not in selection.DTYPES:
        return None
    # (the dimensions before the axis may be symbolic: a dynamic batch of rows)
    dims = [const_int(d) for d in (*x.shape[axis:], *t.shape[axis:])]
    if any(d is None for d in dims):
        return None
    rvars = [iv.var for iv in rank.op.axis]
    for largest in (True, False):
        if structural_equal(rsrc, selection.rank_body(x, rvars, q, axis, largest)):
            k = const_int(t.shape[axis])
            if not 1 <= k <= const_int(x.shape[axis]):
                return None
            return selection.topk_indices(x, k, axis, largest, t.dtype)
    return None


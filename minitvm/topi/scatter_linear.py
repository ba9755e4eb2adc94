"""Scatters in one pass over the updates (tag ``scatter_linear``): the output is a copy of the
data, then each update position in row-major order writes (or adds, multiplies, takes the
min / max of) its value at its target. ``transform_extra``'s te scatters compare every output
position with every update position, which is quadratic; where that count passes
``SCATTER_MAX_PAIRS`` (or is unknown: symbolic dims) a scatter takes this stage instead, which
``schedule/scatter_linear.py`` emits as loops.

``scatter_elements_stage`` / ``scatter_nd_stage`` / ``index_put_stage`` make that choice for
both dialects: Relay's scatter computes (``index_ops``) and Relax's legalizations
(``relax/transform/legalize_ops/scatter.py``). The stage's te body only gives the shape and the
inputs, so it must reach that rule: Relay's lowering applies the tag rules to every stage, and
Relax legalizes such a stage into the rule's loops rather than into blocks."""

from __future__ import annotations

from .. import te
from ..tir import expr as E
from . import transform_extra as tx
from .utils import i64 as _i64

__all__ = ["SCATTER_LINEAR_TAG", "SCATTER_MAX_PAIRS", "index_put_stage", "is_linear",
           "scatter_elements_stage", "scatter_linear", "scatter_nd_stage", "takes_linear"]

SCATTER_LINEAR_TAG = "scatter_linear"

# Above this many (output position, update position) comparisons a scatter runs in one pass
# over the updates. The one pass won at every static size measured (Relax, one thread, a call
# included): scatter_elements "add" of 384 x 3 updates into (48, 3), 166k comparisons, 111 us in
# the te form, 4.2 us in one pass; of 16 x 4 into (8, 4), 2,048 comparisons, 4.3 us against
# 3.1 us. Below this the te form costs no more and stays fusable with its neighbours.
SCATTER_MAX_PAIRS = 1 << 10


def takes_linear(positions, updates) -> bool:
    """Should a scatter comparing the output positions of te tensor ``positions``' shape (or
    a list of dims) with ``updates`` update positions run in one pass? When that count passes
    ``SCATTER_MAX_PAIRS``, or when a dim is symbolic (the te form is quadratic at run time,
    whatever the size: an ONNX graph network with a dynamic batch took 132 ms a call)."""
    def count(dims):
        total = 1
        for d in dims:
            d = d.value if isinstance(d, E.IntImm) else d
            if not isinstance(d, int):
                return None
            total *= d
        return total

    n, m = count(positions), count(updates)
    return n is None or m is None or n * m > SCATTER_MAX_PAIRS


def scatter_linear(x, indices, updates, kind: str, reduction: str, axis: int = 0):
    """The stage of ``scatter_nd`` (``kind`` "nd": the index tuple on the LAST dim of
    ``indices``, a static dim) or ``scatter_elements`` (``kind`` "elements" along ``axis``);
    other dims may be symbolic. Negative indices count from the end; out-of-range targets are
    skipped, as the te scatters skip them."""
    if kind not in ("nd", "elements"):
        raise ValueError(f"scatter_linear: kind must be 'nd' or 'elements', got {kind!r}")
    if reduction not in tx._REDUCTIONS:
        raise ValueError(f"scatter_linear: reduction must be one of {tx._REDUCTIONS}, got "
                         f"{reduction!r}")
    if kind == "nd" and not isinstance(indices.shape[-1], E.IntImm):
        raise ValueError("scatter_linear: the index tuple's length (the last dim of the "
                         "indices) must be static")
    attrs = {"operands": (x, indices, updates), "kind": kind, "reduction": reduction,
             "axis": int(axis) % max(len(x.shape), 1)}

    def body(*i):  # (the data; the loads of the indices and updates make them its inputs)
        first = [E.IntImm("int64", 0)] * len(indices.shape)
        first_u = [E.IntImm("int64", 0)] * len(updates.shape)
        return E.Select(E.EQ(indices[tuple(first)], indices[tuple(first)]), x[i],
                        updates[tuple(first_u)])

    return te.compute(x.shape, body, name="T_scatter_linear", tag=SCATTER_LINEAR_TAG,
                      attrs=attrs)


def is_linear(t) -> bool:
    """Is te tensor ``t`` a one-pass scatter stage (which only its rule computes)?"""
    return getattr(t.op, "tag", "") == SCATTER_LINEAR_TAG


def scatter_elements_stage(x, indices, updates, axis: int, reduction: str = "update"):
    """ONNX ScatterElements along ``axis``: the one-pass stage where ``takes_linear`` (every
    output element against every index), else ``transform_extra``'s te form."""
    if takes_linear(x.shape, indices.shape):
        return scatter_linear(x, indices, updates, "elements", reduction, axis)
    return tx.scatter_elements(x, indices, updates, axis, reduction)


def _nd_takes_linear(x, m: int, extents, reduction: str) -> bool:
    """The te scatter_nd / index_put form compares each update position with every prefix of
    ``m`` dims for ``update`` (one search per prefix), with every element otherwise."""
    return takes_linear(x.shape[:m] if reduction == "update" else x.shape, extents)


def scatter_nd_stage(x, indices, updates, reduction: str = "update"):
    """ONNX ScatterND (the index tuple on the LAST dim of ``indices``): the one-pass stage where
    ``takes_linear``, else ``transform_extra``'s te form."""
    m = int(indices.shape[-1].value) if isinstance(indices.shape[-1], E.IntImm) else None
    if m is not None and _nd_takes_linear(x, m, indices.shape[:-1], reduction):
        return scatter_linear(x, indices, updates, "nd", reduction)
    return tx.scatter_nd(x, indices, updates, reduction)


def index_put_stage(x, indices, values, bshape, accumulate: bool):
    """torch's ``x[i0, i1, ...] = values`` (``+=`` when ``accumulate``), the index tensors
    broadcast to ``bshape`` and ``values`` to ``bshape + x.shape[k:]``: past the threshold the
    indices are stacked on a last dim and ``values`` broadcast, as the one-pass scatter_nd reads
    them; else ``transform_extra``'s te form."""
    k = len(indices)
    red = "add" if accumulate else "update"
    if not _nd_takes_linear(x, k, bshape, red):
        return tx.index_put(x, indices, values, bshape, accumulate)
    nb = len(bshape)
    stacked = te.compute([*bshape, k], lambda *i: _pick(
        [tx._bcast_read(t, list(i[:-1]), nb) for t in indices], i[-1]),
        name="index_put_indices")
    vshape = [*bshape, *x.shape[k:]]
    vals = values
    if len(values.shape) != len(vshape) or any(
            not (isinstance(a, E.IntImm) and isinstance(b, E.IntImm) and a.value == b.value)
            for a, b in zip(values.shape, vshape)):
        vals = te.compute(vshape, lambda *i: tx._bcast_read(values, list(i), len(vshape)),
                          name="index_put_values")
    return scatter_linear(x, stacked, vals, "nd", red)


def _pick(exprs: list, k) -> E.PrimExpr:
    """``exprs[k]`` (as int64) for a loop var ``k``: a chain of selects."""
    out = _i64(exprs[-1])
    for j in range(len(exprs) - 2, -1, -1):
        out = E.Select(E.EQ(k, E.IntImm(k.dtype, j)), _i64(exprs[j]), out)
    return out

"""Scatters in one pass over the updates (tag ``scatter_linear``): the output is a copy of the
data, then each update position in row-major order writes (or adds, multiplies, takes the
min / max of) its value at its target. ``transform_extra``'s te scatters compare every output
position with every update position, which is quadratic; where the shapes are static and that
count passes ``SCATTER_MAX_PAIRS`` Relay's scatter computes (``index_ops``) take this stage
instead, which ``schedule/scatter_linear.py`` emits as loops. Its te body only gives the shape
and the inputs, so it is made only where that rule lowers it: Relax, whose legalized prim
functions do not go through the tag rules, keeps the te form."""

from __future__ import annotations

from .. import te
from ..tir import expr as E

__all__ = ["SCATTER_LINEAR_TAG", "SCATTER_MAX_PAIRS", "scatter_linear", "takes_linear"]

SCATTER_LINEAR_TAG = "scatter_linear"

# Above this many (output position, update position) comparisons a scatter runs in one pass
# over the updates: scatter_nd "add" of 128 rows into (256, 64), 2.1M comparisons, ran 1551 us
# in the te form against 312 us in numpy (benchmarks/bench_native_vs_fallback.py)
SCATTER_MAX_PAIRS = 1 << 18


def _static(t) -> list[int] | None:
    dims = [d.value if isinstance(d, E.IntImm) else d for d in t.shape]
    return dims if all(isinstance(d, int) for d in dims) else None


def takes_linear(positions, updates) -> bool:
    """Should a scatter comparing the output positions of te tensor ``positions``' shape (or
    a list of dims) with ``updates`` update positions run in one pass? Static and large."""
    def count(dims):
        total = 1
        for d in dims:
            d = d.value if isinstance(d, E.IntImm) else d
            if not isinstance(d, int):
                return None
            total *= d
        return total

    n, m = count(positions), count(updates)
    return n is not None and m is not None and n * m > SCATTER_MAX_PAIRS


def scatter_linear(x, indices, updates, kind: str, reduction: str, axis: int = 0):
    """The stage of ``scatter_nd`` (``kind`` "nd": the index tuple on the LAST dim of
    ``indices``) or ``scatter_elements`` (``kind`` "elements" along ``axis``); every shape
    static. Negative indices count from the end; out-of-range targets are skipped, as the te
    scatters skip them."""
    if kind not in ("nd", "elements"):
        raise ValueError(f"scatter_linear: kind must be 'nd' or 'elements', got {kind!r}")
    if any(_static(t) is None for t in (x, indices, updates)):
        raise ValueError("scatter_linear: every shape must be static")
    attrs = {"operands": (x, indices, updates), "kind": kind, "reduction": reduction,
             "axis": int(axis) % max(len(x.shape), 1)}

    def body(*i):  # (the data; the loads of the indices and updates make them its inputs)
        first = [E.IntImm("int64", 0)] * len(indices.shape)
        first_u = [E.IntImm("int64", 0)] * len(updates.shape)
        return E.Select(E.EQ(indices[tuple(first)], indices[tuple(first)]), x[i],
                        updates[tuple(first_u)])

    return te.compute(x.shape, body, name="T_scatter_linear", tag=SCATTER_LINEAR_TAG,
                      attrs=attrs)

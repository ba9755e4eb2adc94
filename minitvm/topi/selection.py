"""Selection stages: the positions of the ``k`` best elements of each row (Relay's and Relax's
``topk``; ``argsort`` / ``sort`` as the selection of the whole axis), then their values
gathered from the input.

One order serves every op: the best first (largest, or smallest when ascending), equal values
in their input order, NaN after every number in both directions (the numpy references'
order). ``sort`` descending is the reverse of the ascending order (NaN first, as numpy's
``flip(sort(x))``).

Two forms state the same positions:

- ``topk_indices``: one stage tagged ``TOPK_TAG`` (attrs ``operands``, ``k``, ``axis``,
  ``largest``) whose body is a nested reduction (the position whose rank is ``j``, the rank
  counting the elements ordered before it). No generic schedule lowers it:
  ``minitvm.schedule.selection`` computes it in one pass per row. Relay's computes build it;
  they refuse a symbolic extent from the axis on (the dimensions before it may be symbolic: a
  dynamic batch, one Relay VM kernel for every size), except for a selection of the whole axis
  (argsort, sort, topk of every element: ``schedule.selection_symbolic`` sorts rows of a
  run-time length), and dtypes the schedule does not take (the numpy reference runs those).
- ``ranked_indices``: the same result as two plain reduction stages (``T_topk_rank``, the rank
  of every element; ``T_topk_indices``, the position whose rank is ``j``), which
  ``te.create_prim_func`` writes as blocks and any loop nest computes (quadratic work, symbolic
  shapes allowed). Relax's legalization builds it; ``schedule.raise_scan`` recognizes the pair
  in a legalized PrimFunc and replaces it by ``topk_indices``.
"""

from __future__ import annotations

from .. import te
from ..tir import expr as E
from .utils import compute

__all__ = ["TOPK_TAG", "MAX_K", "DTYPES", "topk_indices", "ranked_indices", "gather",
           "before", "better", "kept_extent"]

TOPK_TAG = "topk"
MAX_K = 64  # up to this k the schedule keeps the best k in registers; above it, a heap
DTYPES = ("float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8",
          "uint16", "uint32", "uint64")


def better(a, b, largest: bool):
    """Is value ``a`` ordered strictly before value ``b`` (NaN after every number)?"""
    first = E.GT(a, b) if largest else E.LT(a, b)
    if not a.dtype.startswith(("float", "bfloat")):
        return first
    return E.Or(first, E.And(E.NE(b, b), E.EQ(a, a)))


def same(a, b):
    """Do values ``a`` and ``b`` tie (NaN ties with NaN)?"""
    if not a.dtype.startswith(("float", "bfloat")):
        return E.EQ(a, b)
    return E.Or(E.EQ(a, b), E.And(E.NE(a, a), E.NE(b, b)))


def before(xq, xp, q, p, largest: bool):
    """Is the element ``xq`` at position ``q`` ordered before ``xp`` at ``p`` (a strict total
    order: ties broken by position)?"""
    return E.Or(better(xq, xp, largest), E.And(same(xq, xp), E.LT(q, p)))


def _static(dims, what: str) -> list[int]:
    out = []
    for d in dims:
        if not isinstance(d, E.IntImm):
            raise ValueError(f"{what}: the selection kernel needs static shapes, got {d}")
        out.append(d.value)
    return out


def _at(x, i, axis: int, j):
    """``x`` at index ``i`` with the ``axis`` entry replaced by ``j``."""
    return x[tuple(j if d == axis else i[d] for d in range(len(x.shape)))]


def _out_shape(x, axis: int, k):
    return [E.IntImm(x.shape[d].dtype, k) if d == axis and isinstance(k, int) else
            (k if d == axis else x.shape[d]) for d in range(len(x.shape))]


def _whole_axis(x, axis: int, k) -> bool:
    """Is the selection the whole of a symbolic axis (``k`` is that extent, from
    ``axis`` on some dimension symbolic)?"""
    return k is x.shape[axis] and not all(isinstance(d, E.IntImm) for d in x.shape[axis:])


def kept_extent(k: int, n):
    """The count a top ``k`` keeps of a symbolic axis of ``n`` elements: ``min(k, n)`` (the
    Relay type of ``topk`` over a size variable)."""
    return E.Min(E.IntImm(n.dtype, k), n)


def topk_indices(x, k, axis: int, largest: bool = True, dtype: str = "int32",
                 k_max: int | None = None):
    """Positions along ``axis`` of the ``k`` best elements of ``x``, best first (a stage for
    ``schedule.selection``): ``x`` static from ``axis`` on, the dimensions before it possibly
    symbolic (a dynamic batch), and ``1 <= k <= x.shape[axis]``; or ``k`` the axis' own
    extent, any dimension symbolic (a sort of the whole axis, of any length: Relay VM kernels
    sorting along the dynamic axis); or ``k_max`` a fixed count of a symbolic axis and ``k``
    ``kept_extent(k_max, n)`` (the best ``min(k_max, n)``: one kernel for every length)."""
    axis %= len(x.shape)
    ity = x.shape[axis].dtype
    if k_max is not None:
        n = x.shape[axis]
        if isinstance(n, E.IntImm) or not isinstance(k_max, int) or k_max < 1:
            raise ValueError(f"topk: a fixed k={k_max} of a symbolic axis, got {n}")
    elif _whole_axis(x, axis, k):
        n = x.shape[axis]
    else:
        n = _static(x.shape[axis:], "topk")[0]
        if not isinstance(k, int) or not 1 <= k <= n:
            raise ValueError(f"topk: k={k} must be in [1, {n}]")
    extent = n if isinstance(n, E.PrimExpr) else E.IntImm(ity, n)

    def body(*i):
        p = te.reduce_axis((E.IntImm(ity, 0), extent), name="p")
        q = te.reduce_axis((E.IntImm(ity, 0), extent), name="q")
        cond = before(_at(x, i, axis, q.var), _at(x, i, axis, p.var), q.var, p.var, largest)
        rank = te.sum(E.Select(cond, E.IntImm(ity, 1), E.IntImm(ity, 0)), axis=q)
        pos = p.var if dtype == ity else E.Cast(dtype, p.var)
        return te.sum(E.Select(E.EQ(rank, i[axis]), pos, E.IntImm(dtype, 0)), axis=p)

    attrs = {"operands": (x,), "k": k, "axis": axis, "largest": bool(largest)}
    if k_max is not None:
        attrs["k_max"] = k_max
    return te.compute(_out_shape(x, axis, k), body, name="T_topk_indices", tag=TOPK_TAG,
                      attrs=attrs)


def rank_body(x, i, q, axis: int, largest: bool):
    """``T_topk_rank``'s reduction source at output index ``i`` and reduce variable ``q``: one
    for each element ordered before ``x[i]`` along ``axis``."""
    ity = q.dtype
    cond = before(_at(x, i, axis, q), x[tuple(i)], q, i[axis], largest)
    return E.Select(cond, E.IntImm(ity, 1), E.IntImm(ity, 0))


def pick_body(rank, i, p, axis: int, dtype: str):
    """``T_topk_indices``'s reduction source: position ``p`` where its rank is ``i[axis]``."""
    pos = p if dtype == p.dtype else E.Cast(dtype, p)
    return E.Select(E.EQ(_at(rank, i, axis, p), i[axis]), pos, E.IntImm(dtype, 0))


def ranked_indices(x, k, axis: int, largest: bool = True, dtype: str = "int32"):
    """``topk_indices`` as two plain reduction stages (any shape, symbolic too; ``k`` at most
    the axis' length): the rank of each element, then the position of each rank below ``k``."""
    axis %= len(x.shape)
    n = x.shape[axis]
    ity = n.dtype

    def rank(*i):
        q = te.reduce_axis((E.IntImm(ity, 0), n), name="q")
        return te.sum(rank_body(x, i, q.var, axis, largest), axis=q)

    r = te.compute(x.shape, rank, name="T_topk_rank")

    def pick(*i):
        p = te.reduce_axis((E.IntImm(ity, 0), n), name="p")
        return te.sum(pick_body(r, i, p.var, axis, dtype), axis=p)

    return te.compute(_out_shape(x, axis, k), pick, name="T_topk_indices")


def gather(x, idx, axis: int, name: str = "T_topk_values", reverse: bool = False):
    """``x`` at the positions ``idx`` along ``axis`` (``idx`` read back to front when
    ``reverse``: ``sort`` descending)."""
    axis %= len(x.shape)

    def body(*i):
        if reverse:
            last = idx.shape[axis] - E.IntImm(idx.shape[axis].dtype, 1)
            i = tuple(last - i[d] if d == axis else i[d] for d in range(len(i)))
        j = idx[tuple(i)]
        j = j if j.dtype == i[axis].dtype else E.Cast(i[axis].dtype, j)
        return _at(x, i, axis, j)

    return te.compute(idx.shape, body, name=name)


# ---------------------------------------------------------------------------- Relay computes
def _checked(x, attrs, what: str, whole: bool = False) -> tuple:
    """(axis, axis length) of a selection over ``x``; ValueError where the kernel does not
    apply (the numpy reference runs such calls). The dimensions before the axis may be
    symbolic (a dynamic batch: ``schedule.selection`` loops over the rows at run time); the
    axis and those after it must be static, unless the selection takes the ``whole`` axis
    (argsort, sort, topk of every element: the length then the axis' own extent). A static
    axis of length 0 gives 0: the callers make empty results (a per-shape kernel of a dynamic
    batch at batch 0)."""
    if x.dtype not in DTYPES:
        raise ValueError(f"{what}: the selection kernel does not take {x.dtype}")
    if not x.shape:
        raise ValueError(f"{what}: the selection kernel needs a non-empty axis")
    axis = int(attrs.axis) % len(x.shape)
    if whole and not all(isinstance(d, E.IntImm) for d in x.shape[axis:]):
        return axis, x.shape[axis]
    dims = _static(x.shape[axis:], what)
    return axis, dims[0]


def _empty(x, axis: int, k: int, dtype: str, name: str):
    """The empty result of a selection of ``k`` along an axis of ``x`` that is empty (or
    selects nothing): a stage with no element, of ``x``'s shape with ``k`` at ``axis``."""
    shape = list(x.shape)
    shape[axis] = E.IntImm(shape[axis].dtype, k)
    return te.compute(shape, lambda *i: E.IntImm(dtype, 0) if dtype.startswith("int")
                      else E.FloatImm(dtype, 0.0), name=name)


@compute("topk")
def _topk(attrs, inputs, out_type):
    x = inputs[0]
    axis = int(attrs.axis) % max(len(x.shape), 1)
    fixed = int(attrs.k) >= 1 and len(x.shape) and not isinstance(x.shape[axis], E.IntImm)
    if fixed:  # a fixed k of a symbolic axis: the best min(k, n) (one kernel for every n)
        _checked(x, attrs, "topk", whole=True)
        n = x.shape[axis]
        idx = topk_indices(x, kept_extent(int(attrs.k), n), axis, not attrs.is_ascend,
                           attrs.dtype, k_max=int(attrs.k))
        vals = gather(x, idx, axis)
        return {"both": [vals, idx], "values": [vals], "indices": [idx]}[attrs.ret_type]
    axis, n = _checked(x, attrs, "topk", whole=int(attrs.k) < 1)
    k = n if int(attrs.k) < 1 else min(int(attrs.k), n)
    if isinstance(k, int) and k == 0:
        vals, idx = _empty(x, axis, 0, x.dtype, "T_topk_v"), \
            _empty(x, axis, 0, attrs.dtype, "T_topk_i")
        return {"both": [vals, idx], "values": [vals], "indices": [idx]}[attrs.ret_type]
    idx = topk_indices(x, k, axis, not attrs.is_ascend, attrs.dtype)
    vals = gather(x, idx, axis)
    return {"both": [vals, idx], "values": [vals], "indices": [idx]}[attrs.ret_type]


@compute("argsort")
def _argsort(attrs, inputs, out_type):
    x = inputs[0]
    axis, n = _checked(x, attrs, "argsort", whole=True)
    if isinstance(n, int) and n == 0:
        return [_empty(x, axis, 0, attrs.dtype, "T_argsort")]
    return [topk_indices(x, n, axis, not attrs.is_ascend, attrs.dtype)]


@compute("sort")
def _sort(attrs, inputs, out_type):
    x = inputs[0]
    axis, n = _checked(x, attrs, "sort", whole=True)
    if isinstance(n, int) and n == 0:
        return [_empty(x, axis, 0, x.dtype, "T_sort")]
    idx = topk_indices(x, n, axis, False, "int32")  # ascending; descending reads it back
    return [gather(x, idx, axis, "T_sort", reverse=not attrs.is_ascend)]

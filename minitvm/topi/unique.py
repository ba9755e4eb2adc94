"""Relay's ``unique`` (TVM's semantics: outputs padded to the input's length with zeros) as
one native stage: the index table [3 * N + 1] int32 that ``schedule.unique_sort`` writes
(first-occurrence indices, inverse indices, counts, then the number of unique values; its te
body only gives it a shape), the values a gather of the input at the first occurrences."""

from __future__ import annotations

from .. import te
from ..tir import expr as E

__all__ = ["UNIQUE_TABLE_TAG", "UNIQUE_DTYPES", "unique_table", "unique_padded"]

UNIQUE_TABLE_TAG = "unique_sort"
UNIQUE_DTYPES = ("float32", "int32", "int64")  # the key transforms the kernel has


def unique_table(data, is_sorted: bool, equal_nan: bool = True, consecutive: bool = False):
    """The table stage of a 1-D ``data``: [first | inverse | counts | count] int32; with
    ``equal_nan`` False each NaN is its own value (torch's ``unique``); ``consecutive``: the
    runs of equal elements instead (``schedule.unique_runs``: any type, each NaN its own run)."""
    if not consecutive and data.dtype not in UNIQUE_DTYPES:
        raise ValueError(f"unique of {data.dtype} has no native kernel (takes "
                         f"{', '.join(UNIQUE_DTYPES)})")
    (n,) = data.shape
    return te.compute((n * 3 + 1,), lambda *_: E.const(0, "int32"), name="T_unique_table",
                      tag=UNIQUE_TABLE_TAG, attrs={"operands": (data,),
                                                   "sorted": bool(is_sorted),
                                                   "equal_nan": bool(equal_nan),
                                                   "consecutive": bool(consecutive)})


def unique_padded(data, is_sorted: bool = True, return_counts: bool = False,
                  equal_nan: bool = True, consecutive: bool = False) -> list:
    """[values, first indices, inverse indices, [count], counts?] as Relay's ``unique``
    (``consecutive``: of the runs of equal elements)."""
    (n,) = data.shape
    table = unique_table(data, is_sorted, equal_nan, consecutive)
    count = te.compute((1,), lambda i: table[n * 3], name="T_unique_count")

    def value(k):
        kept = E.LT(k, table[n * 3])
        return E.Select(kept, data[table[k]], E.const(0, data.dtype))

    outs = [te.compute((n,), value, name="T_unique_values"),
            te.compute((n,), lambda k: E.Select(E.LT(k, table[n * 3]), table[k],
                                                E.const(0, "int32")), name="T_unique_first"),
            te.compute((n,), lambda k: table[n + k], name="T_unique_inverse"), count]
    if return_counts:
        outs.append(te.compute((n,), lambda k: table[n * 2 + k], name="T_unique_counts"))
    return outs

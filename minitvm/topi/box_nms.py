"""``vision.get_valid_counts`` and ``vision.non_max_suppression`` (TVM's box-row NMS: rows of
``(id, score, x1, y1, x2, y2, ...)``) as one native stage each: a row table [B, N + 1] int32
that ``schedule.box_nms`` writes (per batch, the rows in the order of the op's output, -1 past
them, the count in the last column; its te body only gives it a shape), and the op's outputs
as gathers of it. Every dim may be symbolic (one kernel for every batch and box count)."""

from __future__ import annotations

from .. import te
from ..tir import expr as E

__all__ = ["VALID_COUNTS_TAG", "BOX_NMS_TAG", "BOX_NMS_DTYPES", "valid_counts",
           "box_nms"]

VALID_COUNTS_TAG = "get_valid_counts"
BOX_NMS_TAG = "box_nms"
# the box dtypes the kernels compute in exactly as the numpy reference does, op by op
BOX_NMS_DTYPES = ("float32", "float64")


def _check(data, op_name: str) -> None:
    if data.dtype not in BOX_NMS_DTYPES:
        raise NotImplementedError(f"{op_name} of {data.dtype} boxes has no native kernel "
                                  f"(takes {', '.join(BOX_NMS_DTYPES)})")


def _row_table(shape_b, n, operands: tuple, tag: str, attrs: dict, name: str):
    return te.compute((shape_b, n + 1), lambda *_: E.const(0, "int32"), name=name, tag=tag,
                      attrs={"operands": operands, **attrs})


def _gather_rows(data, table, fill: float, name: str):
    """[B, N, K]: ``data[b, table[b, p]]``, ``fill`` where the table holds -1."""

    def row(b, p, k):
        src = table[b, p]
        return E.Select(E.GE(src, E.const(0, "int32")),
                        data[b, E.Max(src, E.const(0, "int32")), k], E.const(fill, data.dtype))

    return te.compute(data.shape, row, name=name)


def valid_counts(data, score_threshold, id_index: int = 0, score_index: int = 1) -> list:
    """[counts (B,) int32, data with the valid rows packed first and -1 rows after, their
    original indices (B, N) int32, -1 after] (``get_valid_counts_np``)."""
    _check(data, "vision.get_valid_counts")
    b, n, _ = data.shape
    table = _row_table(b, n, (data, score_threshold), VALID_COUNTS_TAG,
                       {"id_index": int(id_index), "score_index": int(score_index)},
                       "T_valid_table")
    count = te.compute((b,), lambda i: table[i, n], name="T_valid_count")
    out = _gather_rows(data, table, -1.0, "T_valid_data")
    idx = te.compute((b, n), lambda i, p: table[i, p], name="T_valid_indices")
    return [count, out, idx]


def box_nms(data, valid_count, indices, max_output_size, iou_threshold, force_suppress=False,
            top_k: int = -1, coord_start: int = 2, score_index: int = 1, id_index: int = 0,
            return_indices: bool = True, invalid_to_bottom: bool = False) -> list:
    """TVM's ``non_max_suppression`` (``non_max_suppression_np``): [box indices (B, N) int32,
    kept counts (B, 1) int32] when ``return_indices``, else [the boxes (B, N, K)]: the kept
    rows first (``invalid_to_bottom``) or each candidate at its rank, -1 rows elsewhere."""
    _check(data, "vision.non_max_suppression")
    b, n, _ = data.shape
    packed = bool(return_indices or invalid_to_bottom)
    table = _row_table(b, n, (data, valid_count, indices, max_output_size, iou_threshold),
                       BOX_NMS_TAG,
                       {"force_suppress": bool(force_suppress), "top_k": int(top_k),
                        "coord_start": int(coord_start), "score_index": int(score_index),
                        "id_index": int(id_index), "packed": packed}, "T_nms_rows")
    if not return_indices:
        return [_gather_rows(data, table, -1.0, "T_nms_boxes")]

    def index(i, p):
        src = table[i, p]
        return E.Select(E.GE(src, E.const(0, "int32")),
                        E.Cast("int32", indices[i, E.Max(src, E.const(0, "int32"))]),
                        E.const(-1, "int32"))

    out = te.compute((b, n), index, name="T_nms_indices")
    count = te.compute((b, 1), lambda i, _: table[i, n], name="T_nms_count")
    return [out, count]

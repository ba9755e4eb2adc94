"""An integer shift whose amount may leave ``[0, bits)``, for the importers of both dialects.

ONNX's ``BitShift`` and PyTorch's ``>>`` / ``<<`` (``__rshift__``, ``bitwise_right_shift``)
agree on shifts by the element width or more, and by negative amounts: every bit is shifted
out, leaving 0, or for a right shift of a signed type the sign fill (``x >> (bits - 1)``). A
native shift by such an amount is undefined, so an amount not known to be in range is first
replaced by 0 where it is out of range and the result chosen by ``where``. The 4-bit weight
unpacking of AWQ / GPTQ checkpoints (``(q >> 4) & 0xF``) shifts by constants, which take the
plain shift.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["amount_in_range", "shift"]


def amount_in_range(known, dtype: str) -> bool:
    """Whether the shift amounts ``known`` (an array, or None when not known at import) are
    all in ``[0, bits of dtype)``."""
    if known is None:
        return False
    known = np.asarray(known)
    if known.dtype == object:
        return False
    width = np.iinfo(np.dtype(dtype)).bits
    return bool(((known >= 0) & (known < width)).all())


def shift(ops: Any, x, y, left: bool, dtype: str, known, scalar: Callable,
          emit: Callable = lambda e: e):
    """``x << y`` (``left``) or ``x >> y`` in the dialect whose operators ``ops`` has
    (``left_shift``, ``right_shift``, ``where``, ``logical_or``, ``less``,
    ``greater_equal``), with out-of-range amounts as above. ``known``: the amounts when known
    at import, else None; ``scalar(v)``: a constant of ``dtype``; ``emit``: binds a value used
    twice (Relax's ``ctx.emit``; the identity for Relay)."""
    fn = ops.left_shift if left else ops.right_shift
    if amount_in_range(known, dtype):
        return fn(x, y)
    width = np.iinfo(np.dtype(dtype)).bits
    out_of_range = emit(ops.logical_or(ops.less(y, scalar(0)),
                                       ops.greater_equal(y, scalar(width))))
    shifted = fn(x, ops.where(out_of_range, scalar(0), y))
    fill = scalar(0)
    if not left and np.dtype(dtype).kind == "i":
        fill = ops.right_shift(x, scalar(width - 1))
    return ops.where(out_of_range, fill, shifted)

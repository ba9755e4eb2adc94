"""``unique``'s native compute (``topi.unique``: a radix sort and one scan,
``schedule.unique_sort``), for the input types the kernel keys; others keep running in numpy
(the op's numpy reference), which a strict build refuses."""

from __future__ import annotations

from ...topi.unique import UNIQUE_DTYPES, unique_padded
from .op import register_compute


def _unique_compute(attrs, inputs, out_type):
    (data,) = inputs
    consecutive = bool(attrs.get("consecutive", False))
    if not consecutive and data.dtype not in UNIQUE_DTYPES:
        raise NotImplementedError(f"unique of {data.dtype}: the native kernel takes "
                                  f"{', '.join(UNIQUE_DTYPES)}")
    return unique_padded(data, bool(attrs.sorted), bool(attrs.return_counts),
                         bool(attrs.get("equal_nan", True)), consecutive)


register_compute("unique", _unique_compute)

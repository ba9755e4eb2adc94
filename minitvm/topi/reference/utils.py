"""Pure-numpy helpers of the references: dtypes, accumulation, relayout to the primal order."""

from __future__ import annotations

import numpy as np

from ...ir.type import TensorType
from ..layout import transform_array

__all__ = ["tensor_type", "np_to_primal", "np_from_primal", "np_dtype", "acc_dtype"]


def tensor_type(arr: np.ndarray) -> TensorType:
    """The static TensorType of an array, to run a shape rule on the actual inputs."""
    return TensorType(arr.shape, str(arr.dtype))


def np_to_primal(arr: np.ndarray, layout: str, primal: str) -> np.ndarray:
    """Relayout an array in ``layout`` into the plain ``primal`` order (no copy when equal)."""
    return arr if layout == primal else transform_array(arr, layout, primal)


def np_from_primal(arr: np.ndarray, primal: str, layout: str) -> np.ndarray:
    """Relayout an array in the plain ``primal`` order into ``layout`` (no copy when equal)."""
    return arr if layout == primal else transform_array(arr, primal, layout)


def np_dtype(dtype: str):
    return np.dtype("float16" if dtype == "bfloat16" else dtype)


def acc_dtype(dtype: str):
    """The numpy dtype to accumulate in: the output dtype, widened for small ints."""
    dt = np_dtype(dtype)
    if dt.kind in "iu" and dt.itemsize < 4:
        return np.dtype("int32")
    return dt

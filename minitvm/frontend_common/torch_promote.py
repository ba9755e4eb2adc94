"""torch's type promotion for a binary op, as both PyTorch importers (Relay's TorchScript and
torch.export converters, Relax's torch.export converters) need it: which dtype the result of
``tensor (op) tensor`` and ``tensor (op) Python number`` has. Plain strings in and out, so the
two dialects share it.

torch ranks dtypes in three categories, bool < integer < floating. A Python number joins a
tensor's op as a "weak" operand: it never widens the tensor within the tensor's category, but a
Python ``float`` lifts an integer or bool tensor to the default float dtype (``arange(4) + 0.5``
is float32 ``[0.5, 1.5, ...]``, not the int64 ``[0, 1, ...]`` that casting 0.5 to the tensor's
dtype gives), and a Python ``int`` lifts a bool tensor to int64. A 0-dim tensor is weak the same
way against a tensor with dimensions, within a category."""

from __future__ import annotations

import numpy as np

DEFAULT_FLOAT = "float32"  # torch.get_default_dtype() unless a program changes it


def category(dtype: str) -> int:
    """0 for bool, 1 for the integers, 2 for the floating types."""
    return 0 if dtype == "bool" else 2 if dtype.startswith(("float", "bfloat")) else 1


def tensors_dtype(da: str, db: str, a_0d: bool = False, b_0d: bool = False) -> str:
    """The result dtype of two tensors: the higher category wins; within one category the
    wider, except that a 0-dim tensor does not widen a tensor with dimensions (``int32 * int64``
    is int64, ``float32 * tensor(2.0, float64)`` stays float32)."""
    ca, cb = category(da), category(db)
    if ca != cb:
        return da if ca > cb else db
    if a_0d != b_0d:
        return db if a_0d else da
    return str(np.promote_types(da, db))


def tensors_result_dtype(dtypes) -> str:
    """The dtype ``torch.cat`` / ``torch.stack`` give tensors of ``dtypes`` (all with
    dimensions): the highest category, then the widest (``cat([floats, bools])`` is float)."""
    dtypes = list(dtypes)
    out = dtypes[0]
    for d in dtypes[1:]:
        out = tensors_dtype(out, d)
    return out


def with_number_dtype(dtype: str, value) -> str:
    """The result dtype of a ``dtype`` tensor and the Python number ``value``."""
    if isinstance(value, bool | np.bool_):
        return dtype
    if isinstance(value, float | np.floating):
        return dtype if category(dtype) == 2 else DEFAULT_FLOAT
    if isinstance(value, int | np.integer):
        return dtype if category(dtype) >= 1 else "int64"
    return dtype


def true_divide_dtype(dtype: str) -> str:
    """``a / b`` of tensors promoted to ``dtype``: integers and bools divide as floats."""
    return dtype if category(dtype) == 2 else DEFAULT_FLOAT

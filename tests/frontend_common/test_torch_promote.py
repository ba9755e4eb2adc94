"""frontend_common.torch_promote: the result dtypes of torch binary ops, checked against torch
itself where it is installed and against fixed cases everywhere."""

from __future__ import annotations

import numpy as np
import pytest

from minitvm.frontend_common.torch_promote import (
    category,
    tensors_dtype,
    true_divide_dtype,
    with_number_dtype,
)


def test_categories():
    assert [category(d) for d in ("bool", "int8", "int64", "float16", "float32")] == \
        [0, 1, 1, 2, 2]


@pytest.mark.parametrize("dtype,value,want", [
    ("int64", 0.5, "float32"),   # arange(4) + 0.5: a float number lifts an integer tensor
    ("int32", 2.0, "float32"),
    ("bool", 1.5, "float32"),
    ("bool", 3, "int64"),        # an int number lifts a bool tensor
    ("int32", 7, "int32"),       # ... but never widens an integer one
    ("float16", 0.5, "float16"),  # nor a float one
    ("int64", True, "int64"),    # a bool number changes nothing
    ("float32", np.float64(2.0), "float32"),
])
def test_with_number(dtype, value, want):
    assert with_number_dtype(dtype, value) == want


@pytest.mark.parametrize("da,db,a0,b0,want", [
    ("int64", "float32", False, False, "float32"),
    ("int32", "int64", False, False, "int64"),
    ("float32", "float64", False, True, "float32"),  # a 0-dim tensor does not widen
    ("int8", "int64", True, False, "int64"),
    ("bool", "int8", False, False, "int8"),
])
def test_tensors(da, db, a0, b0, want):
    assert tensors_dtype(da, db, a0, b0) == want


def test_true_divide():
    assert [true_divide_dtype(d) for d in ("int64", "bool", "float64")] == \
        ["float32", "float32", "float64"]


def test_agrees_with_torch():
    torch = pytest.importorskip("torch", reason="checks the table against torch itself")
    for dt in ("bool", "int32", "int64", "float16", "float32"):
        t = torch.zeros(2, dtype=getattr(torch, dt))
        for v in (True, 3, 0.5):
            got = str((t + v).dtype).replace("torch.", "")
            assert with_number_dtype(dt, v) == got, (dt, v)
        if dt != "bool":
            assert true_divide_dtype(dt) == str((t / t).dtype).replace("torch.", "")

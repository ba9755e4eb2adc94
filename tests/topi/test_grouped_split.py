"""``topi.grouped_split.split_plan``: which grouped convs run as one ungrouped conv per group."""

import pytest

from minitvm.tir import expr as E
from minitvm.topi import grouped_split


def _plan(data, weight, out, groups, dilation=(1, 1), dtype="float32", out_dtype=None):
    return grouped_split.split_plan(data, weight, out, groups, dilation, dtype, out_dtype)


def test_siamfc_correlation_is_split_in_its_groups():
    assert _plan((1, 128, 24, 24), (2, 64, 8, 8), (1, 2, 17, 17), 2) == 2


@pytest.mark.parametrize("args,why", [
    (((1, 128, 24, 24), (2, 64, 8, 8), (1, 2, 17, 17), 1), "not grouped"),
    (((1, 320, 24, 24), (5, 64, 8, 8), (1, 5, 17, 17), 5), "more than MAX_GROUPS"),
    (((1, 128, 24, 24), (16, 64, 8, 8), (1, 16, 17, 17), 2), "8 outputs a group"),
    (((1, 4, 24, 24), (4, 1, 8, 8), (1, 4, 17, 17), 4), "depthwise"),
    (((1, 32, 10, 10), (4, 16, 3, 3), (1, 4, 8, 8), 2), "under MIN_GROUP_MACS"),
    (((1, 128, 24, 24), (2, 64, 8, 8), (1, 2, 10, 10), 2, (2, 2)), "dilated"),
    (((1, 128, 24, 24), (2, 64, 8, 8), (1, 2, 17, 17), 2, (1, 1), "float16"), "not float32"),
    (((1, 128, 24, 24), (2, 64, 8, 8), (1, 2, 17, 17), 2, (1, 1), "float32", "float64"),
     "another output dtype"),
    ((None, (2, 64, 8, 8), (1, 2, 17, 17), 2), "no static data shape"),
    (((1, 128, 24, 24), (2, 64, 8, 8), None, 2), "no static output shape"),
    (((1, 128, E.Var("h", "int64"), 24), (2, 64, 8, 8), (1, 2, E.Var("oh", "int64"), 17), 2),
     "a symbolic plane"),
])
def test_kept_grouped(args, why):
    assert _plan(*args) is None, why


def test_switched_off(monkeypatch):
    monkeypatch.setattr(grouped_split, "ENABLED", False)
    assert _plan((1, 128, 24, 24), (2, 64, 8, 8), (1, 2, 17, 17), 2) is None

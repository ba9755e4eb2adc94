"""Integer PrimExpr constants combine into constants under Python's operators, as TVM's
``tvm.tir`` operators fold them: ``IntImm(5) * 2`` is ``IntImm(10)`` (what a pattern rewriter's
``width * 2`` slice bound needs), within the dtype's range only."""

from __future__ import annotations

from minitvm import tir


def test_integer_constants_fold():
    five = tir.IntImm("int64", 5)
    for got, want in ((five * 2, 10), (2 * five, 10), (five + 1, 6), (1 - five, -4),
                      (five // 2, 2), (-7 // tir.IntImm("int64", 2), -4), (five % 3, 2)):
        assert isinstance(got, tir.IntImm) and got.dtype == "int64" and got.value == want
    assert (tir.IntImm("int32", 3) * tir.IntImm("int32", 4)).value == 12


def test_no_fold_where_tvm_would_not_or_the_value_overflows():
    five = tir.IntImm("int64", 5)
    assert isinstance(five % 0, tir.FloorMod) and isinstance(five // 0, tir.FloorDiv)
    assert isinstance(tir.IntImm("int8", 100) * tir.IntImm("int8", 100), tir.Mul)
    assert isinstance(tir.IntImm("uint8", 3) - tir.IntImm("uint8", 4), tir.Sub)
    assert isinstance(tir.IntImm("bool", 1) + tir.IntImm("bool", 1), tir.Add)
    n = tir.Var("n", "int64")
    assert isinstance(n * 2, tir.Mul) and isinstance(five * n, tir.Mul)  # only constants fold


def test_negation_folds_like_multiplication():
    neg = -tir.IntImm("int64", 1)
    assert isinstance(neg, tir.IntImm) and neg.value == -1 and neg.dtype == "int64"
    assert isinstance(-tir.Var("n", "int64"), tir.Mul)

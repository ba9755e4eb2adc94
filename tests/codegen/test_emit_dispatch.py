"""ExprEmitter.emit's type dispatch and operand fast paths (constants and bound variables
taken as operands are queued): deep expressions, the unbound-variable error, and numerics."""

import numpy as np
import pytest

from minitvm import codegen, tir
from minitvm.codegen.llvm.codegen import CodeGenLLVM
from minitvm.tir import expr as E


def test_100k_deep_expression_emits_iteratively():
    n = 100_000
    B = tir.decl_buffer((1,), "int64", "B")
    x = tir.Var("x", "int64")
    e = E.Add(x, x)
    for _ in range(n):  # (same-type casts: no instruction each, so the test stays cheap)
        e = E.Cast("int64", e)
    func = tir.PrimFunc([B, x], tir.BufferStore(B, E.Add(e, E.IntImm("int64", 5)), [0]))
    text = CodeGenLLVM(func, "deep").generate()
    assert text.count(" = add nsw i64 ") == 2


def test_unbound_variable_operand_is_named():
    B = tir.decl_buffer((4,), "int32", "B")
    y = tir.Var("y_unbound", "int32")
    func = tir.PrimFunc([B], tir.BufferStore(B, E.Add(y, E.IntImm("int32", 1)), [0]))
    with pytest.raises(ValueError, match="y_unbound"):
        CodeGenLLVM(func, "unbound").generate()


def test_constant_and_variable_operands_compute_correctly():
    A = tir.decl_buffer((8,), "int32", "A")
    B = tir.decl_buffer((8,), "int32", "B")
    i = tir.Var("i", "int32")
    c = E.IntImm("int32", 3)
    load = E.BufferLoad(A, [i])
    value = E.Add(E.Mul(load, c), E.Sub(i, c))  # data, constant and loop-variable operands
    body = tir.For(i, E.IntImm("int32", 0), E.IntImm("int32", 8), tir.ForKind.SERIAL,
                   tir.BufferStore(B, value, [i]))
    k = codegen.build(tir.PrimFunc([A, B], body, attrs={"global_symbol": "mix"}))["mix"]
    a = np.arange(8, dtype="int32") - 4
    b = np.empty(8, "int32")
    k(a, b)
    np.testing.assert_array_equal(b, a * 3 + np.arange(8, dtype="int32") - 3)

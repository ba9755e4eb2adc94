"""Less LLVM IR for the same kernels (compile time): unrolled loop variables are constants, so
their index arithmetic folds in Python, and a broadcast spells its poison vector and all-zero
shuffle mask as one word each instead of element by element."""

import re

import numpy as np
from llvmlite import ir

from minitvm import codegen, tir
from minitvm.codegen.llvm.expr import splat_operands

F32 = ir.FloatType()


def _var(name, dtype="int32"):
    return tir.Var(name, dtype)


def test_unrolled_loop_indices_fold_to_constants(rng):
    A = tir.decl_buffer((12,), "float32", "A")
    B = tir.decl_buffer((12,), "float32", "B")
    i = _var("i")
    body = tir.For(i, 0, 4, tir.ForKind.UNROLLED,
                   tir.BufferStore(B, A[i * 3 + 1] * 2.0, [i * 3 + 1]))
    mod = codegen.build(tir.PrimFunc([A, B], body))
    src = mod.get_source()
    body_ir = src[src.index("_impl"):src.index("\n}\n", src.index("_impl"))]
    # expected program: each copy addresses A and B at a constant offset, with no arithmetic
    offsets = [(m.group(1), int(m.group(2))) for m in re.finditer(
        r'getelementptr inbounds float, ptr %"(\w+)", i64 (-?\d+)', body_ir)]
    assert offsets == [(buf, k) for k in (1, 4, 7, 10) for buf in ("A", "B")]
    assert not re.search(r"= (add|mul|sext)", body_ir)
    a = rng.standard_normal(12).astype("float32")
    b = np.zeros(12, "float32")
    mod["main"](a, b)
    expect = np.zeros(12, "float32")
    expect[1::3] = a[1::3] * 2
    np.testing.assert_array_equal(b, expect)


def test_unrolled_loop_with_a_variable_start_still_adds(rng):
    n = _var("n")
    A = tir.decl_buffer((16,), "float32", "A")
    i = _var("i")
    body = tir.For(i, n, 3, tir.ForKind.UNROLLED, tir.BufferStore(A, A[i] + 1.0, [i]))
    mod = codegen.build(tir.PrimFunc([A, n], body))
    src = mod.get_source()
    assert src.count('add i32 %"n",') == 2  # n + 1 and n + 2; n + 0 is n itself
    a = rng.standard_normal(16).astype("float32")
    expect = a.copy()
    expect[5:8] += 1
    mod["main"](a, 5)
    np.testing.assert_array_equal(a, expect)


def test_broadcast_spells_poison_and_zero_mask(rng):
    A = tir.decl_buffer((4, 8), "float32", "A")
    B = tir.decl_buffer((4, 8), "float32", "B")
    i, j = _var("i"), _var("j")
    body = tir.For(i, 0, 4, 0, tir.For(j, 0, 8, tir.ForKind.VECTORIZED, tir.BufferStore(
        B, A[i, j] * A[i, 0], [i, j])))
    mod = codegen.build(tir.PrimFunc([A, B], body, attrs={"tir.noalias": True}))
    src = mod.get_source()
    assert re.search(r"insertelement <8 x float> poison, float %\S+, i32 0", src)
    assert re.search(r"shufflevector <8 x float> %\S+, <8 x float> poison, "
                     r"<8 x i32> zeroinitializer", src)
    assert "undef" not in src and "<8 x i32> <i32 0" not in src
    assert 'icmp slt i32 %"i", 4' in src  # the loop bound 0 + 4, folded
    a = rng.standard_normal((4, 8)).astype("float32")
    b = np.empty((4, 8), "float32")
    mod["main"](a, b)
    np.testing.assert_array_equal(b, a * a[:, :1])


def test_splat_operands_are_shared_and_spelled_as_one_word():
    poison, zeros = splat_operands(F32, 16)
    assert splat_operands(F32, 16) == (poison, zeros)
    assert poison.get_reference() == "poison" and str(poison.type) == "<16 x float>"
    assert zeros.get_reference() == "zeroinitializer" and str(zeros.type) == "<16 x i32>"
    assert splat_operands(F32, 8)[0] is not poison

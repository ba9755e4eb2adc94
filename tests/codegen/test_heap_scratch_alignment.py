"""A temporary over the stack limit comes from ``malloc`` and starts at the first 64-byte
boundary of its block (``codegen.llvm.stmt.ALIGN_HEAP_TEMPS``): malloc's 16-byte alignment
split every other 64-byte vector access of a Winograd conv's scratch across two cache lines
(UNet's 3x3 convs in Relax, which take their scratch that way, ran 7.6% slower)."""

import importlib

import numpy as np
import pytest

from minitvm import tir
from minitvm.codegen.llvm import stmt as stmt_mod

cbuild = importlib.import_module("minitvm.codegen.build")  # (the package re-exports build())


def _reverse_through_scratch(n_static):
    """A[i] <- A[n - 1 - i] + 1 through a scratch of n floats (symbolic, or static over the
    stack limit), written and read in 16-lane vectors."""
    n = tir.Var("n", "int32") if n_static is None else n_static
    A = tir.decl_buffer((n,), "float32", "A")
    tmp = tir.decl_buffer((n,), "float32", "tmp")
    i, j = tir.Var("i", "int32"), tir.Var("j", "int32")
    fill = tir.For(i, 0, n // 16, 0, tir.For(j, 0, 16, tir.ForKind.VECTORIZED, tir.BufferStore(
        tmp, A[i * 16 + j] + 1.0, [i * 16 + j])))
    back = tir.For(i, 0, n, 0, tir.BufferStore(A, tmp[n - 1 - i], [i]))
    body = tir.Allocate(tmp.data, "float32", [n], True,
                        tir.DeclBuffer(tmp, tir.SeqStmt([fill, back])))
    return tir.PrimFunc([A], body).with_attr("tir.noalias", True)


@pytest.mark.parametrize("n_static", [None, 64 * 1024])
def test_heap_scratch_is_aligned_and_right(n_static, rng):
    func = _reverse_through_scratch(n_static)
    fn, ir_text = cbuild.compile_prim_func(func, "reverse_scratch")
    assert '@"malloc"' in ir_text and "ptrtoint" in ir_text and ", -64" in ir_text
    size = n_static or 4096
    a = rng.standard_normal(size).astype("float32")
    want = (a + 1.0)[::-1].copy()
    fn(a)
    np.testing.assert_array_equal(a, want)


def test_the_switch_gives_malloc_pointer_back(monkeypatch):
    monkeypatch.setattr(stmt_mod, "ALIGN_HEAP_TEMPS", False)
    cbuild.clear_cache()
    try:
        _, ir_text = cbuild.compile_prim_func(_reverse_through_scratch(None), "reverse_scratch")
    finally:
        cbuild.clear_cache()
    assert '@"malloc"' in ir_text and "ptrtoint" not in ir_text

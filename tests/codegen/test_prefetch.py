"""``tir.prefetch(buf[i])``: an ``llvm.prefetch`` of the element's address (TVM's
``builtin::prefetch``), which loads nothing and may point past the buffer's end."""

import re

import numpy as np
import pytest

from minitvm import codegen, tir
from minitvm.tir import expr as E


def _kernel(ahead: int, arg=None):
    """``B[i] = A[i] * 2`` with a prefetch of ``A[i + ahead]`` every iteration."""
    A = tir.decl_buffer((64,), "float32", "A")
    B = tir.decl_buffer((64,), "float32", "B")
    i = tir.Var("i", "int32")
    pf = tir.Evaluate(E.Call("int32", "tir.prefetch", [A[i + ahead] if arg is None else arg]))
    body = tir.For(i, 0, 64, tir.ForKind.SERIAL, tir.SeqStmt([
        pf, tir.BufferStore(B, A[i] * 2.0, [i])]))
    return codegen.build(tir.PrimFunc([A, B], body))


@pytest.mark.parametrize("ahead", [16, 4096])  # in the buffer, far past its end
def test_prefetch_is_an_llvm_prefetch_and_changes_nothing(ahead, rng):
    mod = _kernel(ahead)
    src = mod.get_source()
    assert re.search(r"call void @\"?llvm\.prefetch\.p0\"?\(", src)
    a = rng.standard_normal(64).astype("float32")
    b = np.empty_like(a)
    mod["main"](a, b)
    np.testing.assert_array_equal(b, a * 2)


def test_prefetch_needs_a_buffer_element():
    with pytest.raises(ValueError, match="tir.prefetch takes one scalar element of a buffer"):
        _kernel(0, arg=E.IntImm("int32", 3))

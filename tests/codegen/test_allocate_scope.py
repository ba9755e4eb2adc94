"""An ``Allocate``'s pointer is in scope in its body only: a parallel loop after it (which
captures the pointers in scope into its closure) does not capture one that a loop allocated
per iteration with a run-time size (``malloc`` inside the loop), which LLVM rejects as not
dominating the capture; the row sorts of a dynamic axis allocate so."""

import numpy as np

from minitvm import codegen, tir
from minitvm.schedule.common import allocated


def _rows_then_parallel():
    """``T[:] = A[r, :] + 1`` into a run-time-sized row buffer ``T`` per row ``r`` (serial),
    ``B[r, j] = T[j] * 2``; then a parallel loop ``C[i] = A[0, i]``."""
    n = tir.Var("n", "int32")
    A = tir.decl_buffer((3, n), "float32", "A")
    B = tir.decl_buffer((3, n), "float32", "B")
    C = tir.decl_buffer((n,), "float32", "C")
    T = tir.decl_buffer((n,), "float32", "row_tmp")
    r, j, k, i = (tir.Var(c, "int32") for c in "rjki")
    row = tir.SeqStmt([
        tir.For(j, 0, n, tir.ForKind.SERIAL,
                tir.BufferStore(T, A[r, j] + tir.const(1.0, "float32"), [j])),
        tir.For(k, 0, n, tir.ForKind.SERIAL,
                tir.BufferStore(B, T[k] * tir.const(2.0, "float32"), [r, k]))])
    body = tir.SeqStmt([tir.For(r, 0, 3, tir.ForKind.SERIAL, allocated(T, row)),
                        tir.For(i, 0, n, tir.ForKind.PARALLEL,
                                tir.BufferStore(C, A[0, i], [i]))])
    return tir.PrimFunc([A, B, C], body)


def test_a_parallel_loop_after_a_per_row_allocation_compiles_and_runs(rng):
    kernel = codegen.build(_rows_then_parallel())["main"]
    a = rng.standard_normal((3, 50)).astype("float32")
    b, c = np.zeros((3, 50), "float32"), np.zeros(50, "float32")
    kernel(a, b, c)
    np.testing.assert_array_equal(b, (a + 1) * 2)
    np.testing.assert_array_equal(c, a[0])

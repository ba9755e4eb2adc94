"""``MASKED_STORES``: a vectorized loop so annotated may hold ``if cond: B[idx] = value`` (no
else, contiguous), emitted as one ``llvm.masked.store`` whose lanes are those where ``cond``
holds; lanes masked off leave memory as it was. Without the annotation such a loop stays
scalar."""

import numpy as np

from minitvm import codegen, tir
from minitvm.codegen.llvm.stmt import MASKED_STORES

LANES = 16


def _row_tails(annotate: bool):
    """``B[r, c] = 2 * A[r, c] + 1`` for ``c < m`` of each 16-wide row of B: one vector loop a
    row, its stores guarded by ``c < m``."""
    n, m = tir.Var("n", "int32"), tir.Var("m", "int32")
    A = tir.decl_buffer((n, LANES), "float32", "A")
    B = tir.decl_buffer((n, LANES), "float32", "B")
    r, c = tir.Var("r", "int32"), tir.Var("c", "int32")
    store = tir.BufferStore(B, A[r, c] * tir.const(2.0, "float32") + tir.const(1.0, "float32"),
                            [r, c])
    inner = tir.For(c, 0, LANES, tir.ForKind.VECTORIZED, tir.IfThenElse(c < m, store),
                    annotations={MASKED_STORES: True} if annotate else None)
    return tir.PrimFunc([A, B, n, m], tir.For(r, 0, n, 0, inner))


def test_masked_store_writes_only_the_lanes_whose_condition_holds(rng):
    mod = codegen.build(_row_tails(True))
    kernel = mod["main"]
    for m in (0, 1, 7, 15, 16):
        a = rng.standard_normal((5, LANES)).astype("float32")
        b = np.full((5, LANES), -7.0, "float32")
        kernel(a, b, 5, m)
        want = np.full((5, LANES), -7.0, "float32")
        want[:, :m] = 2 * a[:, :m] + 1
        np.testing.assert_array_equal(b, want, err_msg=f"m={m}")


def test_annotated_loop_is_one_masked_store_unannotated_is_scalar():
    assert "llvm.masked.store.v16f32" in codegen.build(_row_tails(True)).get_source("ll")
    assert "llvm.masked.store" not in codegen.build(_row_tails(False)).get_source("ll")

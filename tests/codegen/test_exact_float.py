"""``EXACT_FLOAT``: float arithmetic in a loop so annotated carries no fast-math flag, not even
``contract``, so ``a * b - c`` rounds the product before the subtraction (no fused
multiply-add) and gives numpy's op-by-op float32 bits; outside it the code generator's default
``contract`` stays."""

import numpy as np

from minitvm import codegen, tir
from minitvm.codegen.llvm.stmt import EXACT_FLOAT


def _product_minus(annotate: bool):
    """``D[i] = A[i] * B[i] - C[i]`` in a loop annotated ``EXACT_FLOAT`` or not."""
    n = tir.Var("n", "int32")
    A, B, C, D = (tir.decl_buffer((n,), "float32", name) for name in "ABCD")
    i = tir.Var("i", "int32")
    store = tir.BufferStore(D, A[i] * B[i] - C[i], [i])
    loop = tir.For(i, 0, n, tir.ForKind.SERIAL, store,
                   annotations={EXACT_FLOAT: True} if annotate else None)
    return tir.PrimFunc([A, B, C, D, n], loop)


def test_annotated_loop_has_no_fast_math_flags():
    exact = codegen.build(_product_minus(True)).get_source("ll")
    plain = codegen.build(_product_minus(False)).get_source("ll")
    assert "fmul float" in exact and "contract" not in exact
    assert "fmul contract float" in plain


def test_annotated_loop_rounds_the_product_as_numpy_does(rng):
    """Products whose low bits a fused multiply-add would keep: the bits of numpy's float32
    ``a * b - c`` (c the rounded product: exactly 0 here, the rounding error under FMA)."""
    kernel = codegen.build(_product_minus(True))["main"]
    a = (1 + rng.random(64) * 2**-10).astype("float32")
    b = (1 + rng.random(64) * 2**-10).astype("float32")
    c = a * b
    d = np.full(64, np.nan, "float32")
    kernel(a, b, c, d, 64)
    assert d.tobytes() == (a * b - c).tobytes()
    assert (d == 0).all()

"""Integer division over buffer sizes (llvm/codegen.py, llvm/expr.py): a buffer's symbolic size
is never negative, so index arithmetic built from it and from loop variables divides as
unsigned (a constant divisor: one ``udiv``; a size: ``udiv`` behind the zero guard only), with
the signed results, and a zero divisor still gives 0."""

import sys

import numpy as np

from minitvm import codegen, tir

cg = sys.modules[codegen.__name__ + ".build"]  # the module (``codegen.build`` is the function)


def _divisions():
    """``out[i, :] = (i + n) // 4, (i + n) % 4, i // m, i % m, (i + n) // m, (i - n) // 4`` for
    ``i < n``: ``n`` the rows of ``out``, ``m`` the length of ``d`` (which may be 0)."""
    n, m = tir.Var("n", "int64"), tir.Var("m", "int64")
    out = tir.decl_buffer((n, 6), "int64", "out")
    d = tir.decl_buffer((m,), "float32", "d")
    i = tir.Var("i", "int64")
    four = tir.const(4, "int64")
    values = [tir.floordiv(i + n, four), tir.floormod(i + n, four), tir.floordiv(i, m),
              tir.floormod(i, m), tir.truncdiv(i + n, m), tir.floordiv(i - n, four)]
    body = tir.SeqStmt([tir.BufferStore(out, v, [i, tir.const(k, "int64")])
                        for k, v in enumerate(values)])
    return tir.PrimFunc([out, d], tir.For(i, 0, n, tir.ForKind.SERIAL, body))


def _expected(n: int, m: int) -> np.ndarray:
    i = np.arange(n)
    safe = max(m, 1)
    zero = np.zeros(n, int)
    return np.stack([(i + n) // 4, (i + n) % 4, i // safe if m else zero,
                     i % safe if m else zero, (i + n) // safe if m else zero,
                     (i - n) // 4], axis=1)


def test_size_arithmetic_divides_unsigned_with_the_signed_results():
    cg.clear_cache()
    kernel, ir_text = cg.compile_prim_func(_divisions(), "k", auto_parallel=False)
    body = ir_text[ir_text.index("define internal"):]  # (the kernel body, ``*_impl``)
    body = body[:body.index("\n}")]
    # (i + n) // 4 and % 4: unsigned; i - n may be negative: its floor division stays signed
    assert body.count(" udiv ") >= 3 and body.count(" urem ") >= 2
    assert " sdiv " in body
    for n, m in ((7, 3), (5, 0), (1, 1), (9, 4)):
        out = np.full((n, 6), -99, "int64")
        kernel(out, np.zeros(m, "float32"))
        np.testing.assert_array_equal(out, _expected(n, m))

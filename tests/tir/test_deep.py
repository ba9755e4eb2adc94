"""Large programs go through the printer, verifier and traversals without RecursionError."""

import sys

from minitvm import tir
from minitvm.tir.stmt_functor import post_order_visit, substitute

N = 100_000


def _long_seq():
    A = tir.decl_buffer((N,), "float32", "A")
    B = tir.decl_buffer((N,), "float32", "B")
    seq = tir.SeqStmt([tir.BufferStore(B, A[i] + 1.0, [i]) for i in range(N)])
    return tir.PrimFunc([A, B], seq, attrs={"global_symbol": "deep"})


def test_100k_seqstmt_print_verify_visit():
    assert sys.getrecursionlimit() <= 10_000
    f = _long_seq()
    text = f.script()
    assert text.count("\n") == N + 3
    assert tir.analysis.verify_well_formed(f)
    count = [0]
    post_order_visit(f.body, lambda n: count.__setitem__(0, count[0] + 1)
                     if isinstance(n, tir.BufferStore) else None)
    assert count[0] == N


def test_nested_seqstmt_flattens_iteratively():
    A = tir.decl_buffer((1,), "float32", "A")
    s = tir.BufferStore(A, 0.0, [0])
    for _ in range(3_000):
        s = tir.SeqStmt([s, tir.BufferStore(A, 1.0, [0])])
    assert len(s.seq) == 3_001


def test_deep_expression():
    x = tir.Var("x", "float32")
    e = x
    for k in range(5_000):
        e = e + float(k % 3)
    y = tir.Var("y", "float32")
    e2 = substitute(e, {x: y})
    from minitvm.tir.printer import expr_to_str

    text = expr_to_str(e2)
    assert text.startswith("y + T.float32(0.0)")
    A = tir.decl_buffer((1,), "float32", "A")
    f = tir.PrimFunc([A, y], tir.BufferStore(A, e2, [0]))
    assert tir.analysis.verify_well_formed(f)

"""``tir.analysis.loop_invariant``: which accesses stay put in their innermost loop, and which of
those are worth LLVM's loop passes (``codegen.build`` picks its IR pipeline by it)."""

import sys

from minitvm import tir
from minitvm.tir.analysis.loop_invariant import hoistable_accesses, invariant_accesses

F32 = "float32"
SERIAL, VEC, UNROLL, PAR = (tir.ForKind.SERIAL, tir.ForKind.VECTORIZED, tir.ForKind.UNROLLED,
                            tir.ForKind.PARALLEL)


def _v(name):
    return tir.Var(name, "int32")


def _func(body, *bufs):
    return tir.PrimFunc(list(bufs), body, attrs={"tir.noalias": True})


def test_reduction_into_memory_is_invariant_and_worth_hoisting():
    A, S = tir.decl_buffer((4, 16), F32, "A"), tir.decl_buffer((4,), F32, "S")
    i, k = _v("i"), _v("k")
    f = _func(tir.For(i, 0, 4, SERIAL, tir.For(k, 0, 16, SERIAL, tir.BufferStore(
        S, S[i] + A[i, k], [i]))), A, S)
    assert invariant_accesses(f) == [("k", "S", False), ("k", "S", True)]
    assert hoistable_accesses(f) == invariant_accesses(f)


def test_one_invariant_load_is_not_worth_hoisting_two_are():
    A, B, C = (tir.decl_buffer((8, 16), F32, n) for n in "ABC")
    bias, scale = tir.decl_buffer((8,), F32, "bias"), tir.decl_buffer((8,), F32, "scale")
    c, x = _v("c"), _v("x")
    one = _func(tir.For(c, 0, 8, PAR, tir.For(x, 0, 16, SERIAL, tir.BufferStore(
        B, A[c, x] + bias[c], [c, x]))), A, B, bias)
    assert invariant_accesses(one) == [("x", "bias", False)]
    assert hoistable_accesses(one) == []
    two = _func(tir.For(c, 0, 8, PAR, tir.For(x, 0, 16, SERIAL, tir.BufferStore(
        C, (A[c, x] - bias[c]) * scale[c], [c, x]))), A, C, bias, scale)
    assert sorted(hoistable_accesses(two)) == [("x", "bias", False), ("x", "scale", False)]


def test_vector_and_unrolled_loops_are_not_loops():
    # acc[v] read and written in loop k at lanes v: a vector register, nothing in memory
    A, O = tir.decl_buffer((64,), F32, "A"), tir.decl_buffer((8,), F32, "O")
    acc = tir.decl_buffer((8,), F32, "acc")
    k, v, u = _v("k"), _v("v"), _v("u")
    body = tir.SeqStmt([
        tir.For(v, 0, 8, VEC, tir.BufferStore(acc, tir.const(0.0, F32), [v])),
        tir.For(k, 0, 8, SERIAL, tir.For(v, 0, 8, VEC, tir.BufferStore(
            acc, acc[v] + A[k * 8 + v], [v]))),
        tir.For(u, 0, 8, UNROLL, tir.BufferStore(O, acc[u], [u]))])
    f = _func(tir.Allocate(acc.data, F32, [8], True, tir.DeclBuffer(acc, body)), A, O)
    assert invariant_accesses(f) == []


def test_allocation_private_to_an_iteration_is_left_out():
    A, O = tir.decl_buffer((4, 8), F32, "A"), tir.decl_buffer((4, 8), F32, "O")
    t = tir.decl_buffer((9,), F32, "t")
    i, j = _v("i"), _v("j")
    inner = tir.SeqStmt([tir.BufferStore(t, tir.const(0.0, F32), [8]),  # same place each i
                         tir.For(j, 0, 8, SERIAL, tir.BufferStore(t, A[i, j], [j])),
                         tir.For(j, 0, 8, SERIAL, tir.BufferStore(O, t[j] + t[8], [i, j]))])
    f = _func(tir.For(i, 0, 4, SERIAL, tir.Allocate(t.data, F32, [9], True,
                                                    tir.DeclBuffer(t, inner))), A, O)
    assert invariant_accesses(f) == []


def test_let_bound_values_carry_their_loop_dependence():
    A, B = tir.decl_buffer((64,), F32, "A"), tir.decl_buffer((64,), F32, "B")
    w = tir.decl_buffer((1,), F32, "w")
    i, row, tap = _v("i"), _v("row"), tir.Var("tap", F32)
    let_row = tir.LetStmt(row, i * 8, tir.BufferStore(B, A[row] * w[0], [row]))
    f = _func(tir.For(i, 0, 8, SERIAL, let_row), A, B, w)
    assert invariant_accesses(f) == [("i", "w", False)]  # row depends on i, w[0] does not
    hoisted = _func(tir.LetStmt(tap, w[0], tir.For(i, 0, 8, SERIAL, tir.LetStmt(
        row, i * 8, tir.BufferStore(B, A[row] * tap, [row])))), A, B, w)
    assert invariant_accesses(hoisted) == []


def test_a_100k_deep_program_at_the_default_recursion_limit():
    assert sys.getrecursionlimit() <= 10_000
    n = 100_000
    A, S = tir.decl_buffer((n,), F32, "A"), tir.decl_buffer((1,), F32, "S")
    k = _v("k")
    body = tir.For(k, 0, 4, SERIAL, tir.BufferStore(S, S[0] + A[k], [0]))
    vs = [_v(f"x{m}") for m in range(n)]
    for m in reversed(range(n)):  # let x0 = 0 in let x1 = x0 + 1 in ... : a 100k chain
        body = tir.LetStmt(vs[m], vs[m - 1] + 1 if m else tir.const(0, "int32"), body)
    f = _func(body, A, S)
    assert hoistable_accesses(f) == [("k", "S", False), ("k", "S", True)]
    loops = tir.BufferStore(S, A[0], [0])  # and 100k nested loops, each around the next
    for m in range(n):
        loops = tir.For(_v(f"l{m}"), 0, 2, SERIAL, loops)
    assert len(invariant_accesses(_func(loops, A, S))) == 2


def test_let_expressions_inside_an_index():
    A, B = tir.decl_buffer((64,), F32, "A"), tir.decl_buffer((64,), F32, "B")
    i, r, q = _v("i"), _v("r"), _v("q")
    idx = tir.Let(r, i * 8, tir.Let(q, r + 1, q))  # q depends on i through r
    f = _func(tir.For(i, 0, 8, SERIAL, tir.BufferStore(B, A[idx], [i])), A, B)
    assert invariant_accesses(f) == []
    const = tir.Let(r, tir.const(3, "int32"), r + 1)
    g = _func(tir.For(i, 0, 8, SERIAL, tir.BufferStore(B, A[const], [i])), A, B)
    assert invariant_accesses(g) == [("i", "A", False)]


def test_accesses_under_a_condition_in_their_loop_are_not_worth_hoisting():
    # a conv epilogue's shape: the last block of input channels reads the per-channel scale and
    # shift once per pixel tile; LLVM's loop passes leave such guarded loads in the loop
    A, O = tir.decl_buffer((8, 16), F32, "A"), tir.decl_buffer((8, 16), F32, "O")
    scale, shift = tir.decl_buffer((8,), F32, "scale"), tir.decl_buffer((8,), F32, "shift")
    c, kb, x = _v("c"), _v("kb"), _v("x")
    guarded = _func(tir.For(c, 0, 8, PAR, tir.For(kb, 0, 4, SERIAL, tir.For(
        x, 0, 16, SERIAL, tir.IfThenElse(tir.EQ(kb, 3), tir.BufferStore(
            O, A[c, x] * scale[c] + shift[c], [c, x]))))), A, O, scale, shift)
    assert sorted(invariant_accesses(guarded)) == [("x", "scale", False), ("x", "shift", False)]
    assert hoistable_accesses(guarded) == []
    # the condition's own loads run every iteration; a loop inside the condition starts afresh
    S = tir.decl_buffer((8,), F32, "S")
    y = _v("y")
    inner = _func(tir.For(c, 0, 8, PAR, tir.IfThenElse(tir.EQ(c, 3), tir.For(
        y, 0, 16, SERIAL, tir.BufferStore(S, S[c] + A[c, y], [c])))), A, S)
    assert hoistable_accesses(inner) == [("y", "S", False), ("y", "S", True)]
    cond = _func(tir.For(c, 0, 8, PAR, tir.For(x, 0, 16, SERIAL, tir.IfThenElse(
        tir.GT(scale[0] + shift[0], A[c, x]), tir.BufferStore(O, A[c, x], [c, x])))),
        A, O, scale, shift)
    assert sorted(hoistable_accesses(cond)) == [("x", "scale", False), ("x", "shift", False)]

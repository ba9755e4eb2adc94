"""Closures nested thousands deep at the default recursion limit: the traversal engine now walks
functions, lets and matches with its worklist (relay/expr_functor.py), and InferType's
annotation step (annotate_missing_types) opts in, so nesting depth costs no Python stack."""

import sys

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.ir.structural import structural_equal
from minitvm.relay.expr_functor import ExprMutator, ExprVisitor, post_order_visit

DEPTH = 10_000
TEXT_DEPTH = 1_000  # the text indents each level: its size grows with the depth squared


def nested_closures(n: int) -> tvm.IRModule:
    """``fn (%x) { let %f0 = fn (%p0) { let %f1 = fn (%p1) { ... %p<n-1> + %x }; %f1(%p0) };
    %f0(%x) }``: every closure nested in the previous one's body."""
    x = relay.var("x", shape=(2,), dtype="float32")
    ps = [relay.var(f"p{i}", shape=(2,), dtype="float32") for i in range(n)]
    fs = [relay.var(f"f{i}") for i in range(n)]
    body = relay.add(ps[-1], x)
    for i in range(n - 1, 0, -1):
        body = relay.Let(fs[i], relay.Function([ps[i]], body), relay.Call(fs[i], [ps[i - 1]]))
    main = relay.Function([x], relay.Let(fs[0], relay.Function([ps[0]], body),
                                         relay.Call(fs[0], [x])))
    return tvm.IRModule.from_expr(main)


@pytest.fixture(scope="module")
def deep():
    assert sys.getrecursionlimit() <= 1000 or pytest.skip("a raised recursion limit hides it")
    return nested_closures(DEPTH)


def test_infer_type_of_deeply_nested_closures(deep):
    typed = relay.transform.InferType()(deep)  # RecursionError at ~250 before
    fn = typed["main"]
    assert str(fn.checked_type.ret_type) == "Tensor[(2), float32]"
    inner = fn.body
    for _ in range(DEPTH - 1):
        inner = inner.value.body
    assert inner.value.ret_type is not None  # annotate_missing_types reached the bottom


def test_print_parse_of_nested_closures():
    typed = relay.transform.InferType()(nested_closures(TEXT_DEPTH))
    back = relay.parse(typed.astext())
    assert structural_equal(back, typed)


def test_traversals_at_100000_nested_closures():
    fn = nested_closures(100_000)["main"]
    count = [0]
    post_order_visit(fn, lambda e: count.__setitem__(0, count[0] + 1))
    assert count[0] == 5 * 100_000 + 4
    assert ExprMutator().visit(fn) is fn  # nothing changed: the same function back


def test_base_visitors_and_mutators_walk_deep_nesting(deep):
    seen = []
    post_order_visit(deep["main"], lambda e: seen.append(type(e).__name__))
    assert seen.count("Function") == DEPTH + 1 and seen[-1] == "Function"

    class CountVars(ExprVisitor):
        def __init__(self):
            super().__init__()
            self.n = 0

        def visit_var(self, v):
            self.n += 1

    c = CountVars()
    c.visit(deep["main"])
    assert c.n == 2 * DEPTH + 1  # each %p, each %f and %x, once

    class Rename(ExprMutator):
        def visit_var(self, v):
            return relay.var(v.name_hint + "_r", v.type_annotation) if v.name_hint == "x" else v

    out = Rename().visit(deep["main"])
    assert out.params[0].name_hint == "x_r" and out is not deep["main"]


@pytest.mark.parametrize("name", ["FoldConstant", "SimplifyExpr", "EliminateCommonSubexpr",
                                  "ToANormalForm", "DeadCodeElimination"])
def test_passes_survive_moderate_nesting(name):
    """Passes whose own hooks recurse per scope still handle a few hundred levels (the
    depth the fuzzer reaches); the base-hook passes above take any depth."""
    from minitvm.testing.fuzz.differential import make_pass, run_interpreter

    mod = relay.transform.InferType()(nested_closures(150))
    with tvm.transform.PassContext(opt_level=3):
        out = make_pass(name)(mod)
    x = np.array([1.0, -2.0], "float32")
    np.testing.assert_allclose(run_interpreter(out, [x])[0], 2 * x)


def test_visiting_order_is_the_recursive_order():
    """Scopes join the worklist without changing the order hooks run in: the same order as
    the recursive walk (``_expand_scopes = False``) on a program with every kind of scope."""
    from minitvm.relay.expr_functor import _PostOrderHooks
    from minitvm.testing.fuzz import generate_program

    class Recursive(_PostOrderHooks):
        _expand_scopes = False

    for seed in (1, 7, 19, 62):
        fn = generate_program(seed).mod["main"]
        fast, slow = [], []
        _PostOrderHooks(fast.append).visit(fn)
        Recursive(slow.append).visit(fn)
        assert len(fast) == len(slow) and all(a is b for a, b in zip(fast, slow, strict=True))

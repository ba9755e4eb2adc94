"""post_order and expr_children: every distinct sub-expression once, children before parents,
left to right, without recursion."""

import random

from minitvm.tir import expr as E
from minitvm.tir.stmt_functor import expr_children, post_order


def _reference(root) -> list:
    """Depth-first post-order, recursive, marking a node when the walk first reaches it."""
    seen, out = set(), []

    def walk(e):
        if id(e) in seen:
            return
        seen.add(id(e))
        for c in expr_children(e):
            walk(c)
        out.append(e)

    walk(root)
    return out


def _random_dag(rng, k: int):
    x, y = E.Var("x", "int32"), E.Var("y", "int32")
    pool = [x, y, E.IntImm("int32", k % 5)]
    for _ in range(rng.randint(0, 14)):
        a, b = rng.choice(pool), rng.choice(pool)
        kind = rng.randrange(7)
        if kind == 0:
            new = E.Cast("int64", E.Add(a, b))
            new = E.Cast("int32", new)
        elif kind == 1:
            new = E.Select(E.LT(a, b), a, E.Mul(b, b))
        elif kind == 2:
            new = E.Call("int32", "tir.max_value_test", [a, b, a])
        elif kind == 3:
            v = E.Var(f"v{k}", "int32")
            new = E.Let(v, a, E.Sub(v, b))
        elif kind == 4:
            new = E.Min(a, E.Max(b, a))
        elif kind == 5:
            new = E.Not(E.EQ(a, b))
        else:
            new = E.FloorDiv(a, E.IntImm("int32", 3))
        pool.append(new)
    return pool[-1]


def test_post_order_matches_recursive_walk_on_shared_subexpressions():
    rng = random.Random(7)
    for k in range(300):
        e = _random_dag(rng, k)
        got = list(post_order(e))
        assert [id(n) for n in got] == [id(n) for n in _reference(e)]
        assert len({id(n) for n in got}) == len(got)  # each distinct node once
        assert got[-1] is e


def test_post_order_of_a_leaf_and_of_a_repeated_operand():
    x = E.Var("x", "int32")
    assert list(post_order(x)) == [x]
    sq = E.Mul(x, x)
    assert list(post_order(sq)) == [x, sq]
    c = E.IntImm("int32", 2)
    assert list(post_order(E.Add(sq, c)))[:3] == [x, sq, c]


def test_expr_children_per_kind():
    x, y = E.Var("x", "int32"), E.Var("y", "int32")
    assert expr_children(E.Add(x, y)) == (x, y)
    assert expr_children(x) == ()
    assert expr_children(E.Cast("int64", x)) == (x,)
    sel = E.Select(E.LT(x, y), x, y)
    assert expr_children(sel) == (sel.condition, x, y)
    call = E.Call("int32", "tir.test_op", [x, y])
    assert tuple(expr_children(call)) == (x, y)


def test_post_order_of_a_deep_chain_does_not_recurse():
    x = E.Var("x", "int32")
    e = x
    for k in range(100_000):
        e = E.Add(e, E.IntImm("int32", k % 3))
    nodes = list(post_order(e))
    assert nodes[0] is x and nodes[-1] is e
    assert len(nodes) == 200_001  # x, the 100,000 adds and their 100,000 (distinct) constants

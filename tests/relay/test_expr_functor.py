"""The traversal engine: hooks, memoization, unchanged-returns-self, deep programs."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.relay.analysis import all_vars, bound_vars, free_vars, post_order_visit
from minitvm.relay.expr import Call, Function, Let, Tuple, TupleGetItem
from minitvm.relay.expr_functor import ExprMutator, ExprVisitor, dataflow_worklist

OP = relay.GlobalVar("f")  # any callee works for traversal tests


def _chain(n):
    x = relay.var("x", shape=(1,))
    e = x
    for _ in range(n):
        e = Call(OP, [e, e])
    return x, e


def test_visitor_counts_each_shared_node_once():
    x, e = _chain(50)
    seen = []

    class Count(ExprVisitor):
        def visit_call(self, call):
            seen.append(call)
            super().visit_call(call)

    Count().visit(e)
    assert len(seen) == 50 and len(set(map(id, seen))) == 50


def test_mutator_unchanged_returns_same_node():
    x, e = _chain(10)
    assert ExprMutator().visit(e) is e
    f = Function([x], Let(relay.var("v"), e, Tuple([TupleGetItem(Tuple([x]), 0)])))
    assert ExprMutator().visit(f) is f


def test_visit_constant_override_like_the_seed():
    c = relay.const(np.ones((2,), "float32"))
    x = relay.var("x", shape=(2,))
    f = Function([x], Call(OP, [x, c]))

    class Replace(ExprMutator):
        def visit_constant(self, const):
            return Call(OP, [const])

    out = Replace().visit(f)
    assert out is not f and isinstance(out.body.args[1], Call)
    assert out.body.args[1].args[0] is c


def test_deep_dataflow_chain_visit_and_mutate():
    x, e = _chain(100_000)

    class Rename(ExprMutator):
        def visit_var(self, v):
            return relay.var("y", shape=(1,)) if v is x else v

    out = Rename().visit(e)
    assert out is not e
    count = []
    post_order_visit(e, lambda n: count.append(n))
    assert len(count) == 100_000 + 2  # calls, the var, the callee


def test_deep_let_chain_visit_and_mutate():
    vs = [relay.var(f"v{i}") for i in range(100_000)]
    body = vs[-1]
    for i in reversed(range(100_000)):
        body = Let(vs[i], relay.const(1.0) if i == 0 else vs[i - 1], body)
    assert ExprMutator().visit(body) is body
    ExprVisitor().visit(body)
    assert len(bound_vars(body)) == 100_000
    assert free_vars(body) == []


def test_free_bound_all_vars_order():
    x, y, z = relay.var("x"), relay.var("y"), relay.var("z")
    f = Function([y], Tuple([x, y, z]))
    assert free_vars(f) == [x, z]
    assert bound_vars(f) == [y]
    assert set(all_vars(f)) == {x, y, z}


def test_from_expr_wraps_free_vars():
    x = relay.var("x", shape=(1,))
    mod = tvm.IRModule.from_expr(Tuple([x]))
    assert list(mod["main"].params) == [x]
    assert "main" in mod and mod.get_global_var("main").name_hint == "main"


def test_post_order_visit_sees_every_let_of_a_chain():
    vs = [relay.var(f"v{i}") for i in range(5)]
    body = vs[-1]
    for i in reversed(range(5)):
        body = Let(vs[i], relay.const(1.0) if i == 0 else vs[i - 1], body)
    lets = []
    post_order_visit(body, lambda n: lets.append(n) if isinstance(n, Let) else None)
    assert len(lets) == 5 and lets[-1] is body


def test_dataflow_worklist_finishes_children_first_on_a_deep_chain():
    """The worklist PatternPartitioner, the pattern rewriter and PartitionGraph share: every
    dataflow node once, its dataflow children before it, iteratively (100,000 calls)."""
    x, e = _chain(100_000)
    memo: dict = {}
    order = []

    def finish(node):
        assert all(a in memo for a in node.args if isinstance(a, Call))
        order.append(node)
        return len(order)

    dataflow_worklist(memo, e, finish)
    assert len(order) == 100_000 and order[-1] is e and memo[e] == 100_000
    assert x not in memo  # a var is no dataflow node: left to the caller


def test_dataflow_worklist_names_a_cycle_of_its_children():
    a, b = Call(OP, []), Call(OP, [])
    children = {a: (b,), b: (a,)}
    with pytest.raises(ValueError, match="the regions loop"):
        dataflow_worklist({}, a, lambda n: n, children.__getitem__, cycle_error="the regions loop")


import numpy as np
import pytest
from pass_test_util import check_numerics, check_numerics_on, run_pass

import minitvm as tvm
from minitvm import relay
from minitvm.relay.transform.to_basic_block_normal_form import (
    check_basic_block_normal_form,
    to_basic_block_normal_form,
)


def _bbnf(func):
    mod = tvm.IRModule.from_expr(func)
    return run_pass(relay.transform.ToBasicBlockNormalForm(), mod)["main"]


def _check(before, after, expected, inputs):
    """``after`` is ``expected``, is in basic block normal form, and computes what ``before`` did."""
    tvm.ir.assert_structural_equal(after, expected)
    assert check_basic_block_normal_form(after)
    check_numerics_on(before, after, [[np.asarray(a) for a in args] for args in inputs])


def test_pass_info():
    p = relay.transform.ToBasicBlockNormalForm()
    assert (p.info.name, p.info.opt_level) == ("ToBasicBlockNormalForm", 1)


def test_no_sharing_across_blocks_is_unchanged():
    x = relay.var("x", shape=())
    y = relay.add(x, x)
    before = relay.Function([x], relay.add(y, y))
    after = _bbnf(before)
    _check(before, after, before, [[np.array(1.5, "float32")]])


def test_value_shared_by_branches_is_bound_before_the_if():
    # TVM's test_if: add(x, 1) is used in both branches.
    def build(bound):
        x = relay.var("x", shape=(), dtype="float32")
        one = relay.const(1, dtype="float32")
        two = relay.const(2, dtype="float32")
        v1 = relay.Var("v1") if bound else relay.add(x, one)
        body = relay.If(relay.equal(x, two), relay.multiply(v1, two), relay.multiply(v1, one))
        if bound:
            body = relay.Let(v1, relay.add(x, one), body)
        return relay.Function([x], body)

    after = _bbnf(build(False))
    tvm.ir.assert_structural_equal(after, build(True))
    assert check_basic_block_normal_form(after)
    for v in (2.0, 3.0):
        check_numerics(build(False), after, [np.array(v, "float32")])


def test_nested_if_binds_in_innermost_common_scope():
    # TVM's test_nested_if: y2 is shared by the inner branches only.
    def build(bound):
        x = relay.var("x", shape=(), dtype="bool")
        y = relay.var("y", shape=(), dtype="float32")
        three = relay.const(3, dtype="float32")
        y2 = relay.Var("y2") if bound else relay.add(y, y)
        inner = relay.If(relay.const(True), y2, relay.add(three, y2))
        if bound:
            inner = relay.Let(y2, relay.add(y, y), inner)
        body = relay.If(x, inner, relay.If(relay.const(False), relay.const(2.0),
                                           relay.const(1.0)))
        return relay.Function([x, y], body)

    before = build(False)
    inputs = [[np.array(c), np.array(2.5, "float32")] for c in (True, False)]
    _check(before, _bbnf(before), build(True), inputs)


def test_value_shared_with_a_closure_is_bound_outside_it():
    x = relay.var("x", shape=())
    y = relay.var("y", shape=())
    s = relay.add(x, x)
    g = relay.Function([y], relay.multiply(y, s))
    before = relay.Function([x], relay.add(relay.Call(g, [s]), s))
    expected = tvm.relay.parse_expr("""
        fn (%x: float32) {
          let %s = add(%x, %x);
          %0 = fn (%y: float32) { multiply(%y, %s) };
          add(%0(%s), %s)
        }""")
    _check(before, _bbnf(before), expected, [[np.array(1.5, "float32")]])
    # (1.5+1.5)*(1.5+1.5) + 3
    after_mod = tvm.IRModule.from_expr(_bbnf(before))
    out = relay.create_executor("debug", mod=after_mod).evaluate()(np.array(1.5, "float32"))
    assert float(out.numpy()) == 12.0


def test_existing_lets_kept():
    x = relay.Var("x")
    y = relay.Var("y")
    z = relay.Var("z")
    body = relay.Let(z, relay.add(x, y), relay.add(x, z))
    body = relay.Let(x, relay.const(4.0), body)
    body = relay.Let(y, relay.const(3.0), body)
    after = to_basic_block_normal_form(body)
    _check(relay.Function([], body), relay.Function([], after), relay.Function([], body), [[]])
    mod = tvm.IRModule.from_expr(relay.Function([], after))
    assert float(relay.create_executor("debug", mod=mod).evaluate()().numpy()) == 11.0


def test_check_reports_violation():
    c = relay.var("c", shape=(), dtype="bool")
    x = relay.var("x", shape=())
    e = relay.exp(x)
    bad = relay.Function([c, x], relay.If(c, relay.negative(e), e))
    with pytest.raises(ValueError, match="basic block normal form"):
        check_basic_block_normal_form(bad)
    v = relay.Var("v")
    expected = relay.Function([c, x], relay.Let(v, relay.exp(x),
                                                 relay.If(c, relay.negative(v), v)))
    inputs = [[np.array(b), np.array(0.5, "float32")] for b in (True, False)]
    _check(bad, to_basic_block_normal_form(bad), expected, inputs)


def test_deep_chain_without_blocks_is_unchanged():
    x = relay.var("x", shape=())
    e = x
    for _ in range(100_000):
        e = relay.negative(e)
    f = relay.Function([x], e)
    # an even number of negations: the identity, evaluated at the default recursion limit
    _check(f, _bbnf(f), f, [[np.array(1.5, "float32")]])


def test_deep_chain_shared_by_branches_is_bound_once():
    c = relay.var("c", shape=(), dtype="bool")
    x = relay.var("x", shape=())
    e = x
    for _ in range(100_000):
        e = relay.negative(e)
    before = relay.Function([c, x], relay.If(c, relay.negative(e), e))
    v = relay.Var("v")
    expected = relay.Function([c, x], relay.Let(v, e, relay.If(c, relay.negative(v), v)))
    inputs = [[np.array(b), np.array(1.5, "float32")] for b in (True, False)]
    _check(before, to_basic_block_normal_form(before), expected, inputs)

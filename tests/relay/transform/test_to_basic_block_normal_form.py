import numpy as np
import pytest
from pass_test_util import check_numerics, run_pass

import minitvm as tvm
from minitvm import relay
from minitvm.relay.transform.to_basic_block_normal_form import (
    check_basic_block_normal_form,
    to_basic_block_normal_form,
)


def _bbnf(func):
    mod = tvm.IRModule.from_expr(func)
    return run_pass(relay.transform.ToBasicBlockNormalForm(), mod)["main"]


def test_pass_info():
    p = relay.transform.ToBasicBlockNormalForm()
    assert (p.info.name, p.info.opt_level) == ("ToBasicBlockNormalForm", 1)


def test_no_sharing_across_blocks_is_unchanged():
    x = relay.var("x", shape=())
    y = relay.add(x, x)
    before = relay.Function([x], relay.add(y, y))
    after = _bbnf(before)
    tvm.ir.assert_structural_equal(after, before)


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

    tvm.ir.assert_structural_equal(_bbnf(build(False)), build(True))


def test_existing_lets_kept():
    x = relay.Var("x")
    y = relay.Var("y")
    z = relay.Var("z")
    body = relay.Let(z, relay.add(x, y), relay.add(x, z))
    body = relay.Let(x, relay.const(4.0), body)
    body = relay.Let(y, relay.const(3.0), body)
    tvm.ir.assert_structural_equal(to_basic_block_normal_form(body), body)


def test_check_reports_violation():
    c = relay.var("c", shape=(), dtype="bool")
    x = relay.var("x", shape=())
    e = relay.exp(x)
    bad = relay.Function([c, x], relay.If(c, relay.negative(e), e))
    with pytest.raises(ValueError, match="basic block normal form"):
        check_basic_block_normal_form(bad)
    assert check_basic_block_normal_form(to_basic_block_normal_form(bad))


def test_deep_chain():
    x = relay.var("x", shape=())
    e = x
    for _ in range(100_000):
        e = relay.negative(e)
    f = relay.Function([x], e)
    assert to_basic_block_normal_form(f) is not None
    assert check_basic_block_normal_form(f)

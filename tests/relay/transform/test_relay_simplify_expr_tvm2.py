"""SimplifyExpr folds transpose / layout_transform chains into TVM's programs: TVM v0.19's
test_simplify_transpose cases restated (rank-changing layout_transform pairs fold into one
layout_transform, same-rank pairs into one transpose or nothing), each checked against the
expected program and run before/after on random inputs."""

import pytest
from pass_test_util import check_numerics

import minitvm as tvm
from minitvm import relay
from minitvm.relay import transform


def _simplify(f):
    mod = tvm.IRModule.from_expr(f)
    with tvm.transform.PassContext(opt_level=3):
        return transform.SimplifyExpr()(mod)["main"]


def _infer(f):
    return transform.InferType()(tvm.IRModule.from_expr(f))["main"]


def _nhwc():
    return relay.var("x", shape=(1, 4, 4, 8))


def _nchw():
    return relay.var("x", shape=(1, 8, 4, 4))


def _blocked():
    return relay.var("x", shape=(1, 2, 4, 4, 4))


def case_transpose_then_blocked():
    """NHWC -> NCHW -> NCHW4c -> relu -> NCHW4c -> NCHW -> NHWC."""
    x = _nhwc()
    y = relay.layout_transform(relay.transpose(x, axes=[0, 3, 1, 2]), "NCHW", "NCHW4c")
    y = relay.transpose(relay.layout_transform(relay.nn.relu(y), "NCHW4c", "NCHW"), [0, 2, 3, 1])
    x2 = _nhwc()
    z = relay.nn.relu(relay.layout_transform(x2, "NHWC", "NCHW4c"))
    return relay.Function([x], y), relay.Function([x2], relay.layout_transform(z, "NCHW4c",
                                                                                "NHWC"))


def case_layout_pairs_around_blocked():
    """The same chain written with layout_transforms only."""
    x = _nhwc()
    y = relay.layout_transform(relay.layout_transform(x, "NHWC", "NCHW"), "NCHW", "NCHW4c")
    y = relay.layout_transform(relay.nn.relu(y), "NCHW4c", "NCHW")
    y = relay.layout_transform(y, "NCHW", "NHWC")
    x2 = _nhwc()
    z = relay.nn.relu(relay.layout_transform(x2, "NHWC", "NCHW4c"))
    return relay.Function([x], y), relay.Function([x2], relay.layout_transform(z, "NCHW4c",
                                                                                "NHWC"))


def case_there_and_back():
    x = _nchw()
    y = relay.layout_transform(relay.layout_transform(x, "NCHW", "NHWC"), "NHWC", "NCHW")
    x2 = _nchw()
    return relay.Function([x], relay.nn.relu(y)), relay.Function([x2], relay.nn.relu(x2))


def case_blocked_there_and_back():
    x = _blocked()
    y = relay.layout_transform(relay.layout_transform(x, "NCHW4c", "NCHW8c"), "NCHW8c", "NCHW4c")
    x2 = _blocked()
    return relay.Function([x], relay.nn.relu(y)), relay.Function([x2], relay.nn.relu(x2))


def case_contract_then_expand():
    x = relay.var("x", shape=(1, 2, 4, 4, 4))
    y = relay.layout_transform(relay.layout_transform(x, "NCHW4c", "NCHW"), "NCHW", "NCHW2c")
    x2 = relay.var("x", shape=(1, 2, 4, 4, 4))
    return (relay.Function([x], relay.nn.relu(y)),
            relay.Function([x2], relay.nn.relu(relay.layout_transform(x2, "NCHW4c", "NCHW2c"))))


def case_expand_then_contract():
    x = _nchw()
    y = relay.layout_transform(relay.layout_transform(x, "NCHW", "NCHW4c"), "NCHW4c", "NCHW")
    x2 = _nchw()
    return relay.Function([x], relay.nn.relu(y)), relay.Function([x2], relay.nn.relu(x2))


def case_same_rank_pair_is_a_transpose():
    x = _nchw()
    y = relay.layout_transform(relay.layout_transform(x, "NCHW", "NHWC"), "NHWC", "CHWN")
    x2 = _nchw()
    return (relay.Function([x], relay.nn.relu(y)),
            relay.Function([x2], relay.nn.relu(relay.transpose(x2, axes=[1, 2, 3, 0]))))


def case_noop_transposes():
    x = _nchw()
    y = relay.nn.relu(relay.transpose(x, axes=[0, 1, 2, 3]))
    x2 = _nchw()
    return (relay.Function([x], relay.layout_transform(y, "NCHW", "NCHW")),
            relay.Function([x2], relay.nn.relu(x2)))


CASES = [case_transpose_then_blocked, case_layout_pairs_around_blocked, case_there_and_back,
         case_blocked_there_and_back, case_contract_then_expand, case_expand_then_contract,
         case_same_rank_pair_is_a_transpose, case_noop_transposes]


@pytest.mark.parametrize("case", CASES, ids=[c.__name__ for c in CASES])
def test_transpose_and_layout_transform_chains(case):
    before, expected = case()
    got = _simplify(before)
    tvm.ir.assert_structural_equal(got, _infer(expected))
    check_numerics(before, got)


def test_transpose_after_contraction_folds():
    """NCHW4c -> NCHW -> transpose to NHWC is one layout_transform NCHW4c -> NHWC."""
    x = _blocked()
    before = relay.Function([x], relay.transpose(relay.layout_transform(x, "NCHW4c", "NCHW"),
                                                 axes=[0, 2, 3, 1]))
    x2 = _blocked()
    expected = relay.Function([x2], relay.layout_transform(x2, "NCHW4c", "NHWC"))
    got = _simplify(before)
    tvm.ir.assert_structural_equal(got, _infer(expected))
    check_numerics(before, got)


def test_mismatched_blocked_pair_is_left_alone():
    """NCHW4c -> NCHW8c -> NCHW16c is not a permutation: kept (TVM would make it a no-op
    transpose, which is wrong)."""
    x = relay.var("x", shape=(1, 4, 4, 4, 4))
    y = relay.layout_transform(relay.layout_transform(x, "NCHW4c", "NCHW8c"), "NCHW8c",
                               "NCHW16c")
    before = relay.Function([x], y)
    got = _simplify(before)
    tvm.ir.assert_structural_equal(got, _infer(before))
    check_numerics(before, got)

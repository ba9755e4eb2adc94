"""``pieces.cuts`` / ``resolve`` on bound tests: a pad's border tests (``j - 1 >= 0 and
j - 1 < n``) cut its axes into pieces, and in each piece the tests, their ``and`` and the
``if_then_else`` they choose are decided, so the interior is a plain copy of vectors."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.contrib import graph_executor
from minitvm.relay.backend import te_compiler
from minitvm.schedule import LoweringOptions, lower_te, pieces
from minitvm.tir import expr as E


def _lowered(f):
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(f))
    ins, _, outs = te_compiler.build_te(mod["main"])
    func, _ = lower_te(ins, outs, "k", options=LoweringOptions())
    return func


def _run(f, *arrays):
    lib = relay.build(tvm.IRModule.from_expr(f), target="llvm")
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    for i, a in enumerate(arrays):
        m.set_input(f.params[i].name_hint, a)
    m.run()
    return m.get_output(0).numpy()


def test_a_constant_pad_stores_its_interior_without_tests():
    x = relay.var("x", shape=(1, 3, 40, 40))
    func = _lowered(relay.Function([x], relay.nn.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))))
    text = func.script()
    assert "Select" not in text and "if_then_else" not in text, text
    assert "T.max(T.min" not in text  # no clamped (gathered) loads left


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect"])
@pytest.mark.parametrize("pads", [((1, 1), (1, 1)), ((0, 1), (2, 3)), ((3, 0), (0, 5))])
def test_pads_match_numpy(mode, pads):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((2, 3, 21, 37)).astype("float32")
    x = relay.var("x", shape=a.shape)
    width = ((0, 0), (0, 0), *pads)
    f = relay.Function([x], relay.nn.pad(x, width, pad_value=relay.const(0.5), pad_mode=mode)
                       if mode == "constant" else relay.nn.pad(x, width, pad_mode=mode))
    kw = {"constant_values": 0.5} if mode == "constant" else {}
    want = np.pad(a, width, mode=mode, **kw)
    np.testing.assert_array_equal(_run(f, a), want)


def test_a_transposed_pad_matches_numpy():
    a = np.random.default_rng(1).standard_normal((1, 30, 30, 3)).astype("float32")
    x = relay.var("x", shape=a.shape)
    f = relay.Function([x], relay.nn.pad(relay.transpose(x, (0, 3, 1, 2)),
                                         ((0, 0), (0, 0), (1, 1), (1, 1))))
    want = np.pad(a.transpose(0, 3, 1, 2), ((0, 0), (0, 0), (1, 1), (1, 1)))
    np.testing.assert_array_equal(_run(f, a), want)


def test_bound_tests_and_their_thresholds():
    j = E.Var("j", "int32")
    assert pieces._bound_test(E.GE(j - 1, E.IntImm("int32", 0)), j) == (1, False)
    assert pieces._bound_test(E.LT(j - 1, E.IntImm("int32", 224)), j) == (225, True)
    assert pieces._bound_test(E.LE(j + 2, E.IntImm("int32", 9)), j) == (8, True)
    assert pieces._bound_test(E.GT(j, E.IntImm("int32", 4)), j) == (5, False)
    k = E.Var("k", "int32")
    assert pieces._bound_test(E.LT(j + k, E.IntImm("int32", 3)), j) is None


def test_many_bound_tests_keep_the_per_element_test():
    # more thresholds than MAX_BOUND_CUTS along one axis: no cut from them (each is a nest)
    j = E.Var("j", "int32")
    body = E.IntImm("bool", 1)
    for c in range(1, pieces.MAX_BOUND_CUTS + 2):
        body = E.And(body, E.GE(j, E.IntImm("int32", c)))
    assert pieces.cuts(body, j, 100) == []
    few = E.And(E.GE(j, E.IntImm("int32", 2)), E.LT(j, E.IntImm("int32", 7)))
    assert pieces.cuts(few, j, 100) == [2, 7]

"""DenseOfTransposeToMatmul: ``dense(x, transpose(w))`` of a run-time float32 ``w`` becomes
``matmul(x, w)``; constants, other dtypes and other layouts are left alone; relay.build then runs
no transpose kernel and gives numpy's values."""

import numpy as np
import pytest
from pass_test_util import check_numerics, infer, run_pass

import minitvm as tvm
from minitvm import relay
from minitvm.contrib import graph_executor


def _run(func):
    mod = infer(tvm.IRModule.from_expr(func))
    with tvm.transform.PassContext(opt_level=3):
        out = run_pass(relay.transform.DenseOfTransposeToMatmul(), mod)
    return mod, out


def test_pass_info():
    p = relay.transform.DenseOfTransposeToMatmul()
    assert (p.info.name, p.info.opt_level, list(p.info.required)) == (
        "DenseOfTransposeToMatmul", 3, ["InferType"])


@pytest.mark.parametrize("axes", [(1, 0), None, (-1, -2)])
def test_run_time_matrix_read_in_place(axes):
    x, w = relay.var("x", shape=(3, 20)), relay.var("w", shape=(20, 12))
    mod, out = _run(relay.Function([x, w], relay.nn.relu(
        relay.nn.dense(x, relay.transpose(w, axes)))))
    want = relay.Function([x, w], relay.nn.relu(relay.nn.matmul(x, w)))
    tvm.ir.assert_structural_equal(out["main"], infer(want))
    check_numerics(mod, out)


def test_activation_operand_rewritten_too():
    """``w`` computed in the graph (here ``exp(v)``) is as much a run-time value."""
    x, v = relay.var("x", shape=(2, 8)), relay.var("v", shape=(8, 5))
    w = relay.exp(v)
    mod, out = _run(relay.Function([x, v], relay.nn.dense(x, relay.transpose(w, (1, 0)))))
    tvm.ir.assert_structural_equal(out["main"], infer(relay.Function([x, v],
                                                                      relay.nn.matmul(x, w))))
    check_numerics(mod, out)


def _unchanged(func):
    mod, out = _run(func)
    tvm.ir.assert_structural_equal(out["main"], mod["main"])


def test_constant_weight_kept_as_dense():
    x = relay.var("x", shape=(3, 20))
    w = relay.const(np.ones((20, 12), "float32"))
    _unchanged(relay.Function([x], relay.nn.dense(x, relay.transpose(w, (1, 0)))))


def test_other_dtypes_and_plain_dense_kept():
    x, w = relay.var("x", shape=(3, 20), dtype="float16"), \
        relay.var("w", shape=(20, 12), dtype="float16")
    _unchanged(relay.Function([x, w], relay.nn.dense(x, relay.transpose(w, (1, 0)))))
    x, w = relay.var("x", shape=(3, 20)), relay.var("w", shape=(12, 20))
    _unchanged(relay.Function([x, w], relay.nn.dense(x, w)))


def test_built_graph_runs_no_transpose_and_matches_numpy():
    """relay.build (opt_level 3) of ``relu(x @ w + b)``, ``w`` an input, at 1 and 5 rows."""
    rng = np.random.default_rng(0)
    for m in (1, 5):
        x, w, b = (relay.var("x", shape=(m, 40)), relay.var("w", shape=(40, 48)),
                   relay.var("b", shape=(48,)))
        body = relay.nn.relu(relay.add(relay.nn.dense(x, relay.transpose(w, (1, 0))), b))
        with tvm.transform.PassContext(opt_level=3):
            lib = relay.build(tvm.IRModule.from_expr(relay.Function([x, w, b], body)),
                              target="llvm")
        g = graph_executor.GraphModule(lib["default"](tvm.cpu()))
        assert not any("transpose" in step[0] for step in g._plan["steps"])
        xs, ws, bs = (rng.standard_normal(s).astype("float32") for s in ((m, 40), (40, 48),
                                                                          (48,)))
        g.set_input("x", xs)
        g.set_input("w", ws)
        g.set_input("b", bs)
        g.run()
        want = np.maximum(xs.astype("float64") @ ws + bs, 0)
        np.testing.assert_allclose(g.get_output(0).numpy(), want, rtol=1e-4, atol=1e-4)

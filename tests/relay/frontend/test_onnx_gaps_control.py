"""ONNX If and Loop through relay.frontend.from_onnx, against ONNX Runtime: a branch chosen at
import, a run-time condition (Relay If), loops unrolled by trip count or by a condition known
at import, scan outputs, outer-scope values, and the errors for loops that cannot unroll."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the ONNX importer needs the `onnx` package")
ort = pytest.importorskip("onnxruntime", reason="reference outputs come from onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from minitvm import relay  # noqa: E402
from minitvm.relay.frontend import ImportError_  # noqa: E402

F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
rng = np.random.default_rng(0)


def vi(name, t, shape):
    return helper.make_tensor_value_info(name, t, shape)


def model(nodes, inputs, outputs, inits=None):
    g = helper.make_graph(nodes, "g", inputs, [helper.make_empty_tensor_value_info(o)
                                               for o in outputs],
                          initializer=[numpy_helper.from_array(v, k)
                                       for k, v in (inits or {}).items()])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def check(m, feeds, **kw):
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    ref = sess.run(None, feeds)
    mod, params = relay.frontend.from_onnx(m, **kw)
    ex = relay.create_executor("debug", mod=mod).evaluate()
    out = ex(*[feeds[p.name_hint] for p in mod["main"].params])
    got = [out.numpy()] if hasattr(out, "numpy") else [o.numpy() for o in out]
    assert len(got) == len(ref)
    for g, r in zip(got, ref):
        assert g.shape == r.shape
        np.testing.assert_allclose(g, r, rtol=1e-5, atol=1e-6)
    return mod


def branches():
    """then: x * 2 and x + 1; else: x - 3 and x * x (both reading the outer x)."""
    then_g = helper.make_graph(
        [helper.make_node("Mul", ["x", "two"], ["t0"]), helper.make_node("Add", ["x", "one"],
                                                                         ["t1"])],
        "then", [], [vi("t0", F, (2, 3)), vi("t1", F, (2, 3))],
        initializer=[numpy_helper.from_array(np.array(2.0, "float32"), "two"),
                     numpy_helper.from_array(np.array(1.0, "float32"), "one")])
    else_g = helper.make_graph(
        [helper.make_node("Sub", ["x", "three"], ["e0"]), helper.make_node("Mul", ["x", "x"],
                                                                           ["e1"])],
        "else", [], [vi("e0", F, (2, 3)), vi("e1", F, (2, 3))],
        initializer=[numpy_helper.from_array(np.array(3.0, "float32"), "three")])
    return then_g, else_g


@pytest.mark.parametrize("flag", [True, False])
def test_if_with_a_known_condition_keeps_one_branch(flag):
    then_g, else_g = branches()
    node = helper.make_node("If", ["c"], ["a", "b"], then_branch=then_g, else_branch=else_g)
    m = model([node], [vi("x", F, (2, 3))], ["a", "b"], {"c": np.array(flag)})
    mod = check(m, {"x": rng.standard_normal((2, 3)).astype("float32")})
    assert "if (" not in mod.astext()


@pytest.mark.parametrize("flag", [True, False])
def test_if_with_a_runtime_condition(flag):
    then_g, else_g = branches()
    node = helper.make_node("If", ["c"], ["a", "b"], then_branch=then_g, else_branch=else_g)
    m = model([node], [vi("c", B, ()), vi("x", F, (2, 3))], ["a", "b"])
    mod = check(m, {"c": np.array(flag), "x": rng.standard_normal((2, 3)).astype("float32")})
    assert "if (" in mod.astext()


def test_if_branches_of_different_types_need_a_known_condition():
    then_g = helper.make_graph([helper.make_node("Identity", ["x"], ["t"])], "then", [],
                               [vi("t", F, (2, 3))])
    else_g = helper.make_graph([helper.make_node("ReduceSum", ["x"], ["e"], keepdims=0)],
                               "else", [], [vi("e", F, ())])
    node = helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g)
    m = model([node], [vi("c", B, ()), vi("x", F, (2, 3))], ["y"])
    with pytest.raises(ImportError_, match="output 0 differs between the branches"):
        relay.frontend.from_onnx(m)


def loop_body(cond_expr=None):
    """y_out = y_in + x[i] (x an outer value); scan output y_out; cond_out as given."""
    nodes = [
        helper.make_node("Unsqueeze", ["i", "zero"], ["start"]),
        helper.make_node("Add", ["i", "one"], ["end_"]),
        helper.make_node("Unsqueeze", ["end_", "zero"], ["end"]),
        helper.make_node("Slice", ["x", "start", "end"], ["row"]),
        helper.make_node("Squeeze", ["row", "zero"], ["row1"]),
        helper.make_node("Add", ["y_in", "row1"], ["y_out"]),
        helper.make_node("Identity", ["y_out"], ["scan"]),
    ]
    nodes += cond_expr or [helper.make_node("Identity", ["c_in"], ["c_out"])]
    return helper.make_graph(
        nodes, "body", [vi("i", I64, ()), vi("c_in", B, ()), vi("y_in", F, (3,))],
        [vi("c_out", B, ()), vi("y_out", F, (3,)), vi("scan", F, (3,))],
        initializer=[numpy_helper.from_array(np.array([0], "int64"), "zero"),
                     numpy_helper.from_array(np.array(1, "int64"), "one")])


def test_loop_with_a_static_trip_count():
    node = helper.make_node("Loop", ["M", "", "y0"], ["y", "scan"], body=loop_body())
    m = model([node], [vi("x", F, (5, 3)), vi("y0", F, (3,))], ["y", "scan"],
              {"M": np.array(4, "int64")})
    check(m, {"x": rng.standard_normal((5, 3)).astype("float32"),
              "y0": rng.standard_normal(3).astype("float32")})


def test_loop_with_a_condition_known_at_import():
    # a while loop: continue while i < 2 (computed from the iteration number)
    cond = [helper.make_node("Less", ["i", "two"], ["c_out"])]
    body = loop_body(cond)
    body.initializer.append(numpy_helper.from_array(np.array(2, "int64"), "two"))
    node = helper.make_node("Loop", ["", "c0", "y0"], ["y", "scan"], body=body)
    m = model([node], [vi("x", F, (5, 3)), vi("y0", F, (3,))], ["y", "scan"],
              {"c0": np.array(True)})
    check(m, {"x": rng.standard_normal((5, 3)).astype("float32"),
              "y0": rng.standard_normal(3).astype("float32")})


def test_loop_trip_count_as_input_runs_as_a_run_time_loop():
    # the body's x[i:i + 1] is sliced at run time, so an unbound trip count needs no constant:
    # one import runs every trip count; bound (const_inputs) the loop still unrolls
    node = helper.make_node("Loop", ["M", "", "y0"], ["y", "scan"], body=loop_body())
    m = model([node], [vi("M", I64, ()), vi("x", F, (5, 3)), vi("y0", F, (3,))],
              ["y", "scan"])
    for trips in (0, 3, 5):
        feeds = {"M": np.array(trips, "int64"),
                 "x": rng.standard_normal((5, 3)).astype("float32"),
                 "y0": rng.standard_normal(3).astype("float32")}
        assert "%while_loop" in check(m, feeds).astext()
    mod = check(m, feeds, const_inputs={"M": feeds["M"]})
    assert "while_loop" not in mod.astext()


def test_loop_with_a_data_dependent_condition_runs_as_a_run_time_loop():
    # the condition depends on the data: it cannot unroll, and runs as a Relay while loop
    cond = [helper.make_node("ReduceSum", ["y_out"], ["s"], keepdims=0),
            helper.make_node("Less", ["s", "lim"], ["c_out"])]
    body = loop_body(cond)
    body.initializer.append(numpy_helper.from_array(np.array(5.0, "float32"), "lim"))
    node = helper.make_node("Loop", ["", "c0", "y0"], ["y", "scan"], body=body)
    m = model([node], [vi("x", F, (5, 3)), vi("y0", F, (3,))], ["y", "scan"],
              {"c0": np.array(True)})
    x = np.ones((5, 3), "float32")
    for y0 in ([0, 0, 0], [10, 0, 0], [-6, 0, 0]):  # (2, 1 and 4 iterations: scan's rows)
        mod = check(m, {"x": x, "y0": np.array(y0, "float32")})
        assert "%while_loop" in mod.astext()


def test_loop_past_the_unroll_limit_is_a_clear_error(monkeypatch):
    from minitvm.frontend_common import onnx_control

    monkeypatch.setattr(onnx_control, "MAX_UNROLL", 3)
    node = helper.make_node("Loop", ["M", "", "y0"], ["y", "scan"], body=loop_body())
    m = model([node], [vi("x", F, (5, 3)), vi("y0", F, (3,))], ["y", "scan"],
              {"M": np.array(5, "int64")})
    with pytest.raises(ImportError_, match="runs past 3 iterations"):
        relay.frontend.from_onnx(m)

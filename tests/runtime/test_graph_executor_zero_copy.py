"""``GraphModule.set_input_zero_copy``: kernels read the caller's array in place."""

from __future__ import annotations

import json

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.runtime import cpu
from minitvm.runtime.graph_executor import GraphModule


def _mlp():
    """dense + bias + relu, then dense: x [8, 32] -> [8, 4], its weights as graph params."""
    rng = np.random.default_rng(0)
    x = relay.var("x", shape=(8, 32))
    w1, b1 = relay.var("w1", shape=(16, 32)), relay.var("b1", shape=(16,))
    w2 = relay.var("w2", shape=(4, 16))
    y = relay.nn.dense(relay.nn.relu(relay.nn.bias_add(relay.nn.dense(x, w1), b1)), w2)
    params = {"w1": rng.standard_normal((16, 32)).astype("float32"),
              "b1": rng.standard_normal(16).astype("float32"),
              "w2": rng.standard_normal((4, 16)).astype("float32")}
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(tvm.IRModule.from_expr(relay.Function([x, w1, b1, w2], y)), "llvm",
                          params=params)

    def ref(a):
        return np.maximum(a @ params["w1"].T + params["b1"], 0) @ params["w2"].T

    return lib, ref


def _run(gm):
    gm.run()
    return gm.get_output(0).numpy().copy()


@pytest.mark.parametrize("per_step", [False, True])  # the whole-graph entry, or kernel by kernel
def test_kernels_read_the_callers_array_in_place(per_step):
    lib, ref = _mlp()
    gm = GraphModule(lib["default"](cpu(0)))
    if per_step:
        gm._state().entry = None
    a = np.random.default_rng(1).standard_normal((8, 32)).astype("float32")
    gm.set_input_zero_copy("x", a)
    np.testing.assert_allclose(_run(gm), ref(a), rtol=1e-5, atol=1e-5)
    a *= -2.0  # no set_input: the next run reads the new values
    np.testing.assert_allclose(_run(gm), ref(a), rtol=1e-5, atol=1e-5)
    assert np.shares_memory(gm.get_input("x").numpy(), a)
    b = a.copy()
    gm.set_input("x", b)  # copied again: later changes to the caller's arrays are not seen
    a += 5.0
    b += 5.0
    np.testing.assert_allclose(_run(gm), ref(b - 5.0), rtol=1e-5, atol=1e-5)
    gm.set_input_zero_copy(x=tvm.nd.array(b))  # keywords and NDArrays too
    np.testing.assert_allclose(_run(gm), ref(b), rtol=1e-5, atol=1e-5)


def test_zero_copy_errors_name_what_is_wrong():
    lib, _ = _mlp()
    gm = GraphModule(lib["default"](cpu(0)))
    ok = np.zeros((8, 32), "float32")
    with pytest.raises(ValueError, match=r"input 'x' expects shape \(8, 32\) float32"):
        gm.set_input_zero_copy("x", np.zeros((8, 31), "float32"))
    with pytest.raises(ValueError, match="expects shape .* float32, got .* float64"):
        gm.set_input_zero_copy("x", np.zeros((8, 32)))
    with pytest.raises(ValueError, match="must be C-contiguous"):
        gm.set_input_zero_copy("x", np.zeros((32, 8), "float32").T)
    with pytest.raises(ValueError, match="must be a numpy array or NDArray, got list"):
        gm.set_input_zero_copy("x", ok.tolist())
    param = sorted(gm._param_names)[0]  # a weight the build lifted to a graph parameter
    with pytest.raises(ValueError, match=f"'{param}' is a parameter of the graph"):
        gm.set_input_zero_copy(param, np.zeros(gm._params[param].shape, "float32"))
    with pytest.raises(ValueError, match="no input named 'w1'"):  # (bound: a constant now)
        gm.set_input_zero_copy("w1", ok)
    with pytest.raises(ValueError, match="were never set"):  # nothing was bound by the errors
        gm.run()


def test_reshape_views_of_the_input_follow_it():
    """A reshape of the input is a view of its storage (``__nop``): bound in place, the view
    must read the caller's array too (BERT's first step reshapes its input)."""
    rng = np.random.default_rng(2)
    x = relay.var("x", shape=(2, 16))
    w = rng.standard_normal((3, 8)).astype("float32")
    y = relay.nn.dense(relay.reshape(x, (4, 8)), relay.const(w))
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(tvm.IRModule.from_expr(relay.Function([x], y)), "llvm")
    nodes = json.loads(lib.get_graph_json())["nodes"]
    assert "__nop" in [n.get("attrs", {}).get("func_name") for n in nodes]
    for per_step in (False, True):
        gm = GraphModule(lib["default"](cpu(0)))
        if per_step:
            gm._state().entry = None
        a = rng.standard_normal((2, 16)).astype("float32")
        gm.set_input_zero_copy("x", a)
        np.testing.assert_allclose(_run(gm), a.reshape(4, 8) @ w.T, rtol=1e-5, atol=1e-5)
        gm.set_input("x", a + 1.0)
        a -= 3.0  # copied in: no longer read
        np.testing.assert_allclose(_run(gm), (a + 4.0).reshape(4, 8) @ w.T, rtol=1e-5,
                                   atol=1e-5)


def test_the_same_array_again_is_a_no_op_and_a_copy_in_between_rebinds():
    # a serving loop passes one buffer every call: nothing to rebind; after set_input copied
    # a value in, the same buffer given again is read in place again
    lib, ref = _mlp()
    gm = GraphModule(lib["default"](cpu(0)))
    a = np.random.default_rng(1).standard_normal((8, 32)).astype("float32")
    gm.set_input_zero_copy("x", a)
    gm.set_input_zero_copy(0, a)  # (by index too)
    np.testing.assert_allclose(_run(gm), ref(a), rtol=1e-5, atol=1e-5)
    b = np.ones((8, 32), "float32")
    gm.set_input("x", b)
    np.testing.assert_allclose(_run(gm), ref(b), rtol=1e-5, atol=1e-5)
    gm.set_input_zero_copy("x", a)
    a[:] = -a
    np.testing.assert_allclose(_run(gm), ref(a), rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="no input named 'y'"):
        gm.set_input_zero_copy("y", a)


def test_get_output_follows_each_run_and_keeps_no_stale_hash():
    # get_output hands back the same NDArray for the same memory, its content hash dropped:
    # a structural hash taken after one run does not survive into the next
    lib, ref = _mlp()
    gm = GraphModule(lib["default"](cpu(0)))
    a = np.random.default_rng(1).standard_normal((8, 32)).astype("float32")
    gm.set_input("x", a)
    gm.run()
    first = gm.get_output(0)
    h1 = tvm.ir.structural_hash(first)
    gm.set_input("x", -a)
    gm.run()
    second = gm.get_output(0)
    np.testing.assert_allclose(second.numpy(), ref(-a), rtol=1e-5, atol=1e-5)
    assert tvm.ir.structural_hash(second) != h1
    with pytest.raises(ValueError, match="output index must be an integer"):
        gm.get_output(True)
    with pytest.raises(ValueError, match="out of range"):
        gm.get_output(np.int64(3))

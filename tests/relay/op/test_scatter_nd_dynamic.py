"""``scatter_nd`` and ``scatter_elements`` of dynamic shapes: their type relations take a
dynamic dimension of the updates as possibly equal to the data's or the indices' (two distinct
``relay.Any()`` objects, a reshape's -1 and the batch), and the ONNX ScatterND converter counts
negative indices from the run-time sizes."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.relay.frontend.common import Folder
from minitvm.relay.frontend.onnx.registry import CONVERTERS, Context
from minitvm.runtime import vm as runtime_vm


def _typed(e):
    mod = tvm.IRModule.from_expr(relay.Function(relay.analysis.free_vars(e), e))
    return relay.transform.InferType()(mod)["main"].ret_type


def test_updates_of_another_dynamic_size_type_check_and_static_mismatches_do_not():
    data = relay.var("data", shape=(relay.Any(), 4, 3))
    idx = relay.var("idx", shape=(1, 2), dtype="int64")  # two index tuples into axis 0
    ok = relay.var("upd", shape=(2, 4, 3))
    assert str(_typed(relay.scatter_nd(data, idx, ok))) == "Tensor[(?, 4, 3), float32]"
    other = relay.var("upd2", shape=(relay.Any(), 4, 3))  # (the model's -1: another Any)
    idx2 = relay.var("idx2", shape=(1, relay.Any()), dtype="int64")
    assert str(_typed(relay.scatter_nd(data, idx2, other))) == "Tensor[(?, 4, 3), float32]"
    bad = relay.var("bad", shape=(2, 5, 3))
    with pytest.raises(Exception, match=r"updates must have shape"):
        _typed(relay.scatter_nd(data, idx, bad))


def test_onnx_scatter_nd_counts_negative_indices_from_a_dynamic_batch():
    """ScatterND of rows ``[-1]`` and ``[0]`` into a (batch, 3) tensor: the -1 is the last
    row at every batch size (it needed the batch's static size: an ImportError_)."""
    ctx = Context(17, Folder())
    data = relay.var("x", shape=(relay.Any(), 3))
    upd = relay.var("u", shape=(2, 3))
    idx = relay.const(np.array([[-1], [0]], "int64"))
    out = CONVERTERS["ScatterND"](ctx, [data, idx, upd], {})
    vm = runtime_vm.VirtualMachine(relay.vm.compile(
        tvm.IRModule.from_expr(relay.Function([data, upd], out)), "llvm"), tvm.cpu())
    u = np.array([[7, 8, 9], [1, 2, 3]], "float32")
    for n in (2, 4):
        x = np.zeros((n, 3), "float32")
        want = x.copy()
        want[-1], want[0] = u[0], u[1]
        np.testing.assert_array_equal(vm.run(x, u).numpy(), want)


def test_scatter_elements_of_indices_and_updates_of_distinct_dynamic_sizes():
    """Mixtral's router: indices and updates (?, 4) whose Anys are distinct objects type check
    and run at two sizes (the relation compared the shapes as tuples: a RelayTypeError)."""
    data = relay.var("d", shape=(6, 4))
    idx = relay.var("i", shape=(relay.Any(), 4), dtype="int64")
    upd = relay.var("u", shape=(relay.Any(), 4))
    out = relay.scatter_elements(data, idx, upd, axis=0, reduction="add")
    assert str(_typed(out)) == "Tensor[(6, 4), float32]"
    with pytest.raises(Exception, match=r"must have one shape"):
        _typed(relay.scatter_elements(data, idx, relay.var("w", shape=(relay.Any(), 3)), 0))
    vm = runtime_vm.VirtualMachine(relay.vm.compile(
        tvm.IRModule.from_expr(relay.Function([data, idx, upd], out)), "llvm"), tvm.cpu())
    d = np.zeros((6, 4), "float32")
    for n in (2, 3):
        i = np.arange(n * 4, dtype="int64").reshape(n, 4) % 6
        u = np.ones((n, 4), "float32")
        want = d.copy()
        np.add.at(want, (i, np.arange(4)[None, :].repeat(n, 0)), u)
        np.testing.assert_array_equal(vm.run(d, i, u).numpy(), want)

"""The Relay VM hands out an output its kernel wrote into a storage of its own (fresh each call)
as it is, without the copy it makes of views of anything else: arguments, constants; the
results of two calls stay apart, and torch.unique_consecutive's outputs (kernel-written, numpy
slices) match torch, 100,000 elements included."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.runtime.vm import VirtualMachine


def _vm(params, body):
    mod = tvm.IRModule.from_expr(relay.Function(params, body))
    with tvm.transform.PassContext(opt_level=3):
        return VirtualMachine(relay.vm.compile(mod, target="llvm"), tvm.cpu())


def test_kernel_outputs_are_returned_without_a_copy_and_stay_apart():
    x = relay.var("x", shape=(1000,), dtype="float32")
    vm = _vm([x], relay.Tuple([relay.nn.relu(x), x * relay.const(2.0)]))
    a = np.random.default_rng(0).standard_normal(1000).astype("float32")
    first = [o.numpy() for o in vm.run(a)]
    for o in first:  # the kernel's storage itself (a byte array of exactly its size)
        assert o.base is not None and o.base.dtype == np.uint8 and o.base.nbytes == o.nbytes
    second = [o.numpy() for o in vm.run(a + 1)]
    for o1, o2 in zip(first, second, strict=True):
        assert not np.shares_memory(o1, o2)
    np.testing.assert_array_equal(first[0], np.maximum(a, 0))
    np.testing.assert_array_equal(second[1], (a + 1) * 2)


def test_views_of_arguments_and_constants_are_copied():
    x = relay.var("x", shape=(4, 6), dtype="uint8")
    c = relay.const(np.arange(24, dtype="uint8"))
    vm = _vm([x], relay.Tuple([relay.reshape(x, (24,)), relay.reshape(c, (4, 6))]))
    a = np.arange(24, dtype="uint8").reshape(4, 6)
    out_x, out_c = (o.numpy() for o in vm.run(a))
    assert not np.shares_memory(out_x, a)
    out_c[...] = 0  # writing a result never reaches the constant
    np.testing.assert_array_equal(vm.run(a)[1].numpy(), np.arange(24).reshape(4, 6))


def test_unique_consecutive_outputs_match_torch():
    torch = pytest.importorskip("torch")
    from minitvm.relay.frontend.pytorch import from_exported_program

    class Runs(torch.nn.Module):
        def forward(self, x):
            return torch.unique_consecutive(x, return_inverse=True, return_counts=True)

    rng = np.random.default_rng(0)
    x = torch.from_numpy(np.sort(rng.integers(0, 5000, 100000)))
    mod, params = from_exported_program(torch.export.export(Runs(), (x,)))
    with tvm.transform.PassContext(opt_level=3):
        vm = VirtualMachine(relay.vm.compile(mod, target="llvm", params=params), tvm.cpu())
    for data in (x, torch.arange(100000), torch.zeros(100000, dtype=torch.int64)):
        got = [o.numpy() for o in vm.run(data.numpy())]
        for g, w in zip(got, Runs()(data), strict=True):
            assert g.dtype == w.numpy().dtype
            np.testing.assert_array_equal(g, w.numpy())

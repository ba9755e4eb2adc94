"""relay.strided_slice with run-time begin / end over static axes (TVM refuses axes there):
the bounds spread over every axis up to the last named one, the rest whole, on the VM."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.runtime import vm as runtime_vm


def _vm(mod):
    with tvm.transform.PassContext(opt_level=3):
        return runtime_vm.VirtualMachine(relay.vm.compile(mod, target="llvm"), tvm.cpu())


def test_strided_slice_run_time_bounds_over_static_axes():
    # (TVM refuses axes with run-time bounds; the axes before the last named one run whole)
    x = relay.var("x", shape=(relay.Any(), 6, 5), dtype="float32")
    b, e = (relay.var(n, shape=(2,), dtype="int64") for n in "be")
    mod = tvm.IRModule.from_expr(relay.Function([x, b, e], relay.strided_slice(
        x, b, e, [1, 2], axes=[1, 2])))
    vm = _vm(mod)
    xv = np.arange(3 * 6 * 5, dtype="float32").reshape(3, 6, 5)
    for lo, hi, want in (([1, -4], [5, 5], xv[:, 1:5, -4:5:2]),
                         ([-2, 0], [100, 3], xv[:, -2:, 0:3:2])):
        np.testing.assert_array_equal(vm.run(xv, np.array(lo), np.array(hi)).numpy(), want)


def test_strided_slice_run_time_bounds_refuse_negative_or_repeated_axes():
    x = relay.var("x", shape=(2, 3), dtype="float32")
    b = relay.var("b", shape=(1,), dtype="int64")
    for axes in ([-1], [1, 1]):
        with pytest.raises(ValueError, match="must be distinct and non-negative"):
            relay.strided_slice(x, b, b, axes=axes)

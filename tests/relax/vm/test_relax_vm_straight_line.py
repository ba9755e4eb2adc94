"""Relax VM functions whose sizes depend on data (nonzero, a dynamic slice) run as generated
Python (``runtime.relax_vm.straight_line``), their kernels with scalar ``tir_vars`` through the
generated fast call, and ``tensor_to_shape`` as a VM builtin: the same results as the
instruction-by-instruction interpreter and numpy (empty results, 100,000 elements), the same
errors; functions with branches as blocks in a loop (tests/relax/vm/test_relax_vm_tail_call_loops.py
runs loops)."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax
from minitvm.relax import op as R
from minitvm.runtime.relax_vm.builtins import BUILTINS, ShapeTuple
from minitvm.runtime.relax_vm.executable import ARG_IMM, GOTO, IF, MOVE, RET, VMFunction
from minitvm.runtime.relax_vm.kernel import NativeKernel
from minitvm.runtime.relax_vm.straight_line import straight_line_function

_RNG = np.random.default_rng(0)


def _vm(params, body):
    bb = relax.BlockBuilder()
    with bb.function("main", params):
        bb.emit_func_output(bb.emit(body))
    return relax.VirtualMachine(relax.build(bb.get(), "llvm"), tvm.cpu())


def _nonzero_vm(n: int):
    x = relax.Var("x", relax.TensorStructInfo([n], "float32"))
    return _vm([x], R.nonzero(x))


def _both(vm, *args):
    """(generated, interpreted) results of ``main``."""
    vm.straight_line = True
    fast = vm["main"](*args)
    vm.straight_line = False
    slow = vm["main"](*args)
    vm.straight_line = True
    return fast, slow


@pytest.mark.parametrize("n,density", [(16, 0.5), (16, 0.0), (100000, 0.3)])
def test_nonzero_generated_matches_interpreter_and_numpy(n, density):
    vm = _nonzero_vm(n)
    for _ in range(3):  # the data changes the result's length from call to call
        x = np.where(_RNG.random(n) < density, _RNG.standard_normal(n), 0).astype("float32")
        fast, slow = _both(vm, tvm.nd.array(x))
        want = np.stack(np.nonzero(x)).astype("int64")
        assert fast.numpy().shape == want.shape
        np.testing.assert_array_equal(fast.numpy(), want)
        np.testing.assert_array_equal(slow.numpy(), want)
    assert "main" not in vm._native  # data-dependent sizes: no native entry...
    assert callable(next(iter(vm._straight.values())))  # ...but generated code


def test_dynamic_slice_kernel_takes_the_fast_call_and_keeps_its_errors():
    x = relax.Var("x", relax.TensorStructInfo([16], "float32"))
    b, e, s = (relax.Var(k, relax.TensorStructInfo([1], "int64")) for k in "bes")
    vm = _vm([x, b, e, s], R.dynamic_strided_slice(x, b, e, s))
    kernels = [ins[3] for ins in vm._linked[id(vm._exec.functions["main"])]
               if ins[0] == 0 and isinstance(ins[3], NativeKernel) and
               any(p[0] == "scalar" for p in ins[3].spec["params"])]
    assert kernels and all(k._sym is not None for k in kernels)
    data = _RNG.standard_normal(16).astype("float32")
    for lo, hi, step in [(2, 11, 3), (15, -17, -2), (5, 5, 1), (0, 16, 1)]:
        args = [tvm.nd.array(data)] + [tvm.nd.array(np.array([v], "int64"))
                                       for v in (lo, hi, step)]
        fast, slow = _both(vm, *args)
        want = data[lo:hi if hi > -17 else None:step]
        np.testing.assert_array_equal(fast.numpy(), want)
        np.testing.assert_array_equal(slow.numpy(), want)
    # the generated call hands anything it does not expect to the checked call
    k = kernels[0]
    bufs = [np.zeros(1, "int64") if p[0] == "buf" and p[1] == "int64" else None
            for p in k.spec["params"]]
    with pytest.raises(ValueError, match=f"kernel {k.name!r}"):
        k(*[b if b is not None else np.zeros(3, "float64") for b in bufs[:-1]], 3)


def test_wrong_input_gives_the_interpreter_error():
    vm = _nonzero_vm(16)
    for flag in (True, False):
        vm.straight_line = flag
        with pytest.raises(ValueError, match="dimension 0 must be 16"):
            vm["main"](tvm.nd.array(np.zeros(5, "float32")))


def test_tensor_to_shape_is_a_vm_builtin():
    to_shape, _ = BUILTINS["vm.builtin.tensor_to_shape"]
    to_tensor, _ = BUILTINS["vm.builtin.shape_to_tensor"]
    got = to_shape(np.array([4, 0, 7], "int64"))
    assert isinstance(got, ShapeTuple) and list(got) == [4, 0, 7]
    assert all(type(d) is int for d in got)
    np.testing.assert_array_equal(to_tensor(ShapeTuple([5, 3])), np.array([5, 3], "int64"))
    with pytest.raises(ValueError, match="expects a 1-D tensor"):
        to_shape(np.zeros((2, 2), "int64"))


def test_branches_compile_and_missing_returns_stay_interpreted():
    # (functions with branches were interpreted before loops ran as generated code too)
    func = VMFunction("f", ["c"], 2, [])
    branchy = [(IF, 0, 3), (MOVE, 1, (ARG_IMM, 7)), (RET, 1), (RET, 0)]
    run = straight_line_function(func, branchy, lambda k, v: v)
    assert run([True]) == 7 and run([np.array(True)]) == 7
    assert run([0]) == 0 and run([np.array(False)]).item() is False
    with pytest.raises(ValueError, match="f: the condition of an if must be a scalar"):
        run([np.zeros(2, "bool")])
    assert straight_line_function(func, [], lambda k, v: v) is None
    assert straight_line_function(func, [(IF, 0, 1), (RET, 0), (MOVE, 1, (ARG_IMM, 1))],
                                  lambda k, v: v) is None  # runs off its end
    assert straight_line_function(func, [(GOTO, 5), (RET, 0)], lambda k, v: v) is None
    ident = straight_line_function(func, [(RET, 0)], lambda k, v: v)
    assert ident(["value"]) == "value"


def test_static_kernels_direct_call_runs_and_checks():
    vm = _nonzero_vm(16)
    static = [ins[3] for ins in vm._linked[id(vm._exec.functions["main"])]
              if ins[0] == 0 and isinstance(ins[3], NativeKernel) and ins[3]._fast is not None]
    assert static
    k = next(k for k in static if k.name == "nonzero_count")  # (x [16], count [1] int64)
    x = np.array([0, 1, -2, 0] * 4, "float32")
    count = np.zeros(1, "int64")
    assert k.direct(x, count) is None
    assert count[0] == 8
    with pytest.raises(ValueError, match=f"kernel {k.name!r}"):
        k.direct(np.zeros(5, "float32"), count)

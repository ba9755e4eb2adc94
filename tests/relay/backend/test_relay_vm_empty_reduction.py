"""argmax / argmin over an axis that is empty only at run time (a dynamic-fuzzer open
finding): there is no index to give (numpy and the interpreter raise). The reduction's shape rule
states the axis positive (``topi.shape_conditions``), so the VM's symbolic kernel does not run
at such a size, and the shape's specialization raises the typing error naming the op and the
axis, where it returned -inf / +inf / -1; the same kernel still serves every other size, also
from a saved and loaded executable. max / min have an identity (-inf / +inf, as TVM's kernels
and Relax): they give it there, in the VM and the interpreter alike. An integer mean over
symbolic axes is one symbolic kernel (it compiled per shape: its division by a run-time count
could trap at 0): a 64-bit sum divided by the count, at least 1, so an empty axis gives 0, as
the interpreter."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.relay.backend.vm.saved import SavedFunction
from minitvm.relay.backend.vm.symbolic import SymbolicKernel
from minitvm.runtime.module import load_module
from minitvm.runtime.vm import Executable, VirtualMachine


def _mod(op, axis=0):
    x = relay.var("x", shape=(relay.Any(), 3), dtype="float32")
    return tvm.IRModule.from_expr(relay.Function([x], op(relay.exp(x), axis=axis)))


def _vm(mod):
    return VirtualMachine(relay.vm.compile(mod, target="llvm"), tvm.cpu())


@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_empty_axis_at_run_time_raises_like_the_interpreter(name):
    mod = _mod(getattr(relay, name))
    vm = _vm(mod)
    ref = relay.create_executor("debug", mod=mod).evaluate()
    empty = np.zeros((0, 3), "float32")
    for n in (2, 0, 1, 0):  # the error does not stick to the kernel, nor a good size to it
        if n == 0:
            with pytest.raises(Exception, match="no identity|empty sequence"):
                ref(empty)
            with pytest.raises(Exception, match=rf"{name}: cannot reduce over axis 0 of size 0"):
                vm.run(empty)
        else:
            xv = np.linspace(-1, 1, 3 * n, dtype="float32").reshape(n, 3)
            np.testing.assert_allclose(vm.run(xv).numpy(), ref(xv).numpy(), rtol=1e-6)


@pytest.mark.parametrize(("name", "identity"), [("max", -np.inf), ("min", np.inf)])
def test_max_min_of_an_axis_empty_at_run_time_is_their_identity(name, identity):
    mod = _mod(getattr(relay, name))
    vm = _vm(mod)
    ref = relay.create_executor("debug", mod=mod).evaluate()
    for n in (2, 0, 1, 0):  # one kernel at every size, the empty one included
        xv = np.linspace(-1, 1, 3 * n, dtype="float32").reshape(n, 3)
        got = vm.run(xv).numpy()
        np.testing.assert_allclose(got, ref(xv).numpy(), rtol=1e-6)
        if n == 0:
            np.testing.assert_array_equal(got, np.full(3, identity, "float32"))


def _conditions(vm_mod) -> list:
    exe = relay.vm.compile(vm_mod, target="llvm")
    return [c for k in exe.kernels if isinstance(k.run, SymbolicKernel) for c in k.run.conditions]


def test_a_static_or_other_axis_has_no_condition():
    """Reducing the static axis of a (?, 3) input is legal at n = 0 (an empty result)."""
    mod = _mod(relay.max, axis=1)
    assert _vm(mod).run(np.zeros((0, 3), "float32")).numpy().shape == (0,)
    assert [kind for kind, _, _ in _conditions(mod)] == []
    assert [kind for kind, _, _ in _conditions(_mod(relay.argmax))] == ["greater"]
    assert [kind for kind, _, _ in _conditions(_mod(relay.max))] == []  # (an identity)


def test_loaded_executable_raises_too(tmp_path):
    exe = relay.vm.compile(_mod(relay.argmax), target="llvm")
    code, lib = exe.save()
    lib.export_library(str(tmp_path / "k.so"))
    loaded = Executable.load_exec(code, load_module(str(tmp_path / "k.so")))
    vm = VirtualMachine(loaded, tvm.cpu())
    xv = np.array([[0.0, 2.0, 1.0], [3.0, 0.0, 1.0]], "float32")
    assert vm.run(xv).numpy().tolist() == [1, 0, 0]
    with pytest.raises(Exception, match="argmax: cannot reduce over axis 0 of size 0"):
        vm.run(np.zeros((0, 3), "float32"))


def test_loaded_kernel_without_such_a_reduction_parses_nothing(tmp_path):
    x = relay.var("x", shape=(relay.Any(), 3), dtype="float32")
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.sum(relay.exp(x), axis=0)))
    code, lib = relay.vm.compile(mod, target="llvm").save()
    lib.export_library(str(tmp_path / "k.so"))
    loaded = Executable.load_exec(code, load_module(str(tmp_path / "k.so")))
    vm = VirtualMachine(loaded, tvm.cpu())
    assert vm.run(np.zeros((0, 3), "float32")).numpy().tolist() == [0.0, 0.0, 0.0]
    runs = [k.run for k in loaded.kernels if isinstance(k.run, SymbolicKernel)]
    assert runs and all(isinstance(r._spec_args[0], SavedFunction) and
                        r._spec_args[0]._func is None for r in runs)


@pytest.mark.parametrize("dtype", ["int32", "int8", "uint8"])
def test_integer_mean_over_symbolic_axes_is_one_kernel(dtype):
    from minitvm.relay.backend.vm.kernels import dynamic_kernel_counts

    x = relay.var("x", shape=(relay.Any(), 4, relay.Any()), dtype=dtype)
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.mean(x, axis=[0, 2], keepdims=True)))
    exe = relay.vm.compile(mod, target="llvm")
    assert dynamic_kernel_counts(exe.kernels) == {"symbolic": 1, "specialized": 0}
    vm = VirtualMachine(exe, tvm.cpu())
    ref = relay.create_executor("debug", mod=mod).evaluate()
    rng = np.random.default_rng(0)
    low = 0 if dtype == "uint8" else -60
    for n, m in ((3, 5), (0, 5), (40, 7), (2, 0)):  # int8 sums of 280 values would wrap
        xv = rng.integers(low, low + 120, (n, 4, m)).astype(dtype)
        got = vm.run(xv).numpy()
        np.testing.assert_array_equal(got, ref(xv).numpy())
        if n * m:  # numpy's mean truncated toward zero
            np.testing.assert_array_equal(got, np.trunc(xv.mean((0, 2), keepdims=True)))
        else:
            np.testing.assert_array_equal(got, np.zeros((1, 4, 1), dtype))

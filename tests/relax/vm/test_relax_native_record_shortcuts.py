"""Shortcuts the native entry's recording takes on every kernel call of a function (a
100,000-call function records 100,000 calls): ``NativeKernel.pack`` of plain arrays of a
static-shape kernel skips the checks its generated test already made, and
``image_major.written`` remembers its answer per kernel spec. Each gives what the full path
gives."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax
from minitvm.relax import op as R
from minitvm.runtime.ndarray import NDArray
from minitvm.runtime.relax_vm import image_major
from minitvm.runtime.relax_vm.kernel import NativeKernel


def _kernels(vm) -> list:
    return [ins[3] for ins in vm._linked[id(vm._exec.functions["main"])]
            if ins[0] == 0 and isinstance(ins[3], NativeKernel)]


def _static_vm():
    x = relax.Var("x", relax.TensorStructInfo([3, 4], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            y = bb.emit(R.add(x, x))
            z = bb.emit_output(R.nn.relu(y))
        bb.emit_func_output(z)
    return relax.VirtualMachine(relax.build(bb.get(), "llvm"), tvm.cpu())


def _full_pack(k: NativeKernel, args):
    fast = k._fast
    k._fast = None  # the checked path
    try:
        return k.pack(args)
    finally:
        k._fast = fast


def test_pack_of_plain_arrays_equals_the_checked_pack():
    vm = _static_vm()
    kernels = [k for k in _kernels(vm) if k._fast is not None]
    assert kernels
    for k in kernels:
        args = [np.zeros(p[3], p[1]) for p in k.spec["params"]]
        arrays, kvars = k.pack(args)
        want_arrays, want_vars = _full_pack(k, args)
        assert kvars == want_vars == []
        assert len(arrays) == len(want_arrays)
        assert all(a is b for a, b in zip(arrays, want_arrays, strict=True))
        # an NDArray, a wrong shape or a strided view take the checked path, as before
        wrapped = [NDArray(a) if i == 0 else a for i, a in enumerate(args)]
        got = k.pack(wrapped)
        assert got[0][0] is args[0] and got == _full_pack(k, wrapped)
        bad = [np.zeros((5, 4), a.dtype) if i == 0 else a for i, a in enumerate(args)]
        with pytest.raises(ValueError, match=f"kernel {k.name!r}: argument 0 dimension 0"):
            k.pack(bad)
        view = [np.zeros((a.shape[0], a.shape[1] * 2), a.dtype)[:, ::2] if i == 0 else a
                for i, a in enumerate(args)]
        with pytest.raises(ValueError, match="must be C-contiguous"):
            k.pack(view)


def test_pack_with_vars_or_a_count_mismatch_is_checked():
    vm = _static_vm()
    k = next(k for k in _kernels(vm) if k._fast is not None)
    with pytest.raises(ValueError, match="expects 2 arguments, got 1|expects 3 arguments"):
        k.pack([np.zeros(k.spec["params"][0][3], "float32")])


class _Stub:
    """A stand-in for a NativeKernel: only its spec."""

    def __init__(self, spec):
        self.spec = spec


def _written_uncached(kernel) -> set:
    bufs = [k for k, p in enumerate(kernel.spec["params"]) if p[0] == "buf"]
    return {bufs.index(k) for k in kernel.spec.get("written", ()) if k in bufs}


def test_written_remembered_per_spec_equals_the_computed_positions():
    specs = [{"params": [("buf", "float32", 1, [4]), ("scalar", "int64"),
                         ("buf", "float32", 1, [4])], "written": [2]},
             {"params": [("buf", "float32", 1, [4])] * 3, "written": [0, 2]},
             {"params": [("buf", "float32", 1, [4])]}]
    for spec in specs:
        for _ in range(2):  # computed, then remembered
            got = image_major.written(_Stub(spec))
            assert got == _written_uncached(_Stub(spec))
    # a new spec at a reused address is not mistaken for the old one
    spec = {"params": [("buf", "float32", 1, [4])] * 2, "written": [1]}
    image_major._WRITTEN[id(spec)] = ({"other": 1}, frozenset({0}))
    assert image_major.written(_Stub(spec)) == {1}
    vm = _static_vm()
    for k in _kernels(vm):
        assert image_major.written(k) == _written_uncached(k)


def test_recorded_plan_runs_the_same_numbers():
    vm = _static_vm()
    x = np.random.default_rng(0).standard_normal((3, 4)).astype("float32")
    first = vm["main"](x).numpy()  # recorded (interpreted, then planned)
    second = vm["main"](x).numpy()  # through the plan
    np.testing.assert_array_equal(first, np.maximum(x + x, 0))
    np.testing.assert_array_equal(second, first)

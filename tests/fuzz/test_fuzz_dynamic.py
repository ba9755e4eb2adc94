"""The dynamic-shape fuzzers (CI-sized; ``scripts/fuzz_long.py --dyn-programs`` and
``--relax-sizes-programs`` run thousands): Relay programs with ``Any`` dimensions compiled once
by ``relay.vm.compile`` and run at a schedule of batch sizes against the interpreter, and Relax
programs with a symbolic batch built once and run at several sizes."""

import random

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.testing.fuzz.dynamic_differential import check_dynamic, shrink_dynamic
from minitvm.testing.fuzz.dynamic_generator import generate_dynamic_program, size_schedule

#: Small programs (at most 4 operator steps), each showing the named feature.
SEEDS = {16: "update_row", 7: "dyn.reshape", 14: "slice-by-value", 136: "roi", 3: "topk",
         79: "scan", 4: "argwhere"}  # (unique: test_fuzz_found_dynamic's unique cases)


@pytest.mark.parametrize("seed", sorted(SEEDS))
def test_one_vm_compile_agrees_with_the_interpreter_at_every_size(seed):
    prog = generate_dynamic_program(seed, max_ops=4)
    assert SEEDS[seed] in prog.features
    sizes = [2, 2, prog.min_size, 3]
    assert check_dynamic(prog, sizes, opt_level=3) == []


def test_generation_is_deterministic_and_shapes_are_any():
    a, b = generate_dynamic_program(16, max_ops=4), generate_dynamic_program(16, max_ops=4)
    assert a.mod.astext() == b.mod.astext()
    assert any("?" in str(p.type_annotation) for p in a.mod["main"].params)


def test_size_schedules_repeat_change_back_and_respect_the_minimum():
    for s in range(20):
        for lo in (0, 1):
            sizes = size_schedule(random.Random(s), lo)
            assert len(sizes) == 10 and min(sizes) >= lo
            assert sizes[0] == sizes[1] == sizes[2] > 0  # planned and bound before a change
    assert any(0 in size_schedule(random.Random(s), 0) for s in range(20))


def test_shape_valued_inputs_are_legal_and_vary_at_one_shape():
    """A reshape-by-value parameter multiplies out to the tensor's size; a slice's begin is
    at most its end, inside the axis; the same batch gets other values on other runs."""
    def plain(p):  # a reshape-by-value of a tensor whose dims are static or the batch
        return [q for q in p.params if q.kind == "reshape" and
                all(d == "n" or isinstance(d, int) for d in q.info["of"])]

    prog = generate_dynamic_program(17, max_ops=6)
    param = plain(prog)[0]
    k = prog.params.index(param)
    total = int(np.prod([3 if d == "n" else d for d in param.info["of"]]))
    values = set()
    for run in range(8):
        new = prog.inputs(3, seed=run)[k]
        known = int(np.prod(new[new != -1]))
        assert known == total or ((new == -1).sum() == 1 and total % known == 0)
        values.add(tuple(new))
    assert len(values) > 1
    prog = generate_dynamic_program(14, max_ops=4)
    b = next(i for i, q in enumerate(prog.params) if q.kind == "slice_begin")
    for run in range(8):
        args = prog.inputs(4, seed=run)
        assert 0 <= args[b][0] <= args[b + 1][0]


def test_a_wrong_vm_result_is_reported_and_shrunk(monkeypatch):
    """The checker reports a VM that disagrees with the interpreter (here: one that adds 1 to
    every float output), naming the run and the sizes so far; ``shrink_dynamic`` finds the
    smallest program of the seed that still shows it."""
    from minitvm.runtime import vm as runtime_vm
    from minitvm.testing.fuzz.differential import flatten

    real = runtime_vm.VirtualMachine.run

    def off_by_one(self, *args, **kwargs):
        return [v + 1 if v.dtype.kind == "f" else v
                for v in flatten(real(self, *args, **kwargs))]

    monkeypatch.setattr(runtime_vm.VirtualMachine, "run", off_by_one)
    prog = generate_dynamic_program(7, max_ops=4)
    vm = runtime_vm.VirtualMachine(relay.vm.compile(prog.mod, target="llvm"), tvm.cpu())
    assert any(a.dtype.kind == "f" and a.size for a in flatten(real(vm, *prog.inputs(2))))
    found = check_dynamic(prog, [2, 2], opt_level=0)
    assert len(found) == 1 and found[0].kind == "mismatch"
    assert "run 0 (n=2, sizes [2]" in found[0].detail
    small = shrink_dynamic(7, lambda p: bool(check_dynamic(p, [2], opt_level=0)), max_ops=4)
    assert small is not None


def test_relax_build_at_a_schedule_of_symbolic_sizes():
    from minitvm.testing.fuzz.relax_differential import check_relax_sizes
    from minitvm.testing.fuzz.relax_generator import generate_relax_program

    prog = generate_relax_program(3, symbolic=True, max_ops=4)
    assert prog.symbolic
    assert check_relax_sizes(prog, [2, 2, 0, 5, 2]) == []


def test_relax_oracle_keeps_a_symbolic_unit_axis_in_squeeze():
    """``R.squeeze(x, axis=None)`` of an ``(n, 2, 3, 1)`` tensor types as ``(n, 2, 3)`` and the
    VM keeps the batch axis at n = 1; the oracle removed it (numpy's squeeze of every unit
    axis) and failed its own struct-info check once sizes included 1 (Relax seed 20029)."""
    from minitvm.testing.fuzz.relax_differential import check_relax_sizes
    from minitvm.testing.fuzz.relax_generator import generate_relax_program
    from minitvm.testing.fuzz.relax_reference import evaluate

    prog = generate_relax_program(20029, symbolic=True, max_ops=3)
    assert "R.squeeze(lv1, axis=None)" in prog.script()
    out = evaluate(prog.mod, prog.inputs(1))
    assert np.asarray(out.numpy() if hasattr(out, "numpy") else out).shape == (1, 2, 3)
    assert check_relax_sizes(prog, [1, 2]) == []

"""The Relax loop fuzzer (``relax_loop_generator``): recursive loops with vm.builtin.update_row,
recurrences and running reductions, built once, optionally exported and loaded back, run at a
schedule of lengths; and what it found: EliminateCommonSubexpr made two loops' ``R.zeros``
buffers one tensor and the Relax VM's in-place update_row wrote each loop's rows into the
other's result (seed 0 and ten more in 60). The VM now writes in place only into a buffer the
same call site made (``builtins.update_row_site``)."""

import numpy as np
import pytest

from minitvm import relax
from minitvm.runtime.relax_vm.builtins import update_row_site
from minitvm.testing.fuzz.relax_loop_generator import check_relax_loops, generate_loop_program


@pytest.mark.parametrize("seed", [1, 2])  # a recurrence (saved), rows
def test_loop_programs_agree_at_a_schedule_of_lengths(seed):
    prog = generate_loop_program(seed)
    assert check_relax_loops(prog, sizes=[3, 3, 0, 1, 4]) == []


def test_generator_is_deterministic_and_reaches_its_kinds():
    kinds = set()
    for seed in range(12):
        a, b = generate_loop_program(seed), generate_loop_program(seed)
        assert a.mod.script() == b.mod.script() and a.loops == b.loops
        kinds |= a.features
    assert {"rows", "recurrence", "running", "shared-zeros"} <= kinds


def test_two_loops_on_one_zeros_buffer_after_cse():
    """Seed 0 minimized: two row loops whose initial ``R.zeros`` CSE merges."""
    prog = generate_loop_program(0)
    merged = relax.transform.EliminateCommonSubexpr()(prog.mod).script()
    assert merged.count("R.zeros(") < prog.mod.script().count("R.zeros(")  # one buffer
    assert check_relax_loops(prog, sizes=[2, 2, 5], saved=False,
                             passes=["EliminateCommonSubexpr"]) == []


def test_a_planted_in_place_write_is_caught(monkeypatch):
    """The checker sees aliasing: with every call site writing in place (the old builtin)
    the CSE'd seed-0 program differs."""
    from minitvm.runtime.relax_vm import builtins

    def always_in_place(tmpl, positions):
        def site(*regs):
            args = list(tmpl)
            for p, v in zip(positions, regs, strict=True):
                args[p] = v
            return builtins.update_row(*args)
        site.builtin = builtins.update_row
        return site

    monkeypatch.setattr(builtins, "update_row_site", always_in_place)
    # (the planted site writes for the generated Python's steps; a native loop makes its own
    # row writes, a copy first: the loops stay in Python here)
    from minitvm.runtime.relax_vm import straight_line

    monkeypatch.setattr(straight_line, "native_loop_entry", lambda *args: None)
    found = check_relax_loops(generate_loop_program(0), sizes=[2], saved=False,
                              passes=["EliminateCommonSubexpr"])
    assert [f.kind for f in found] == ["mismatch"]


def test_update_row_site_owns_only_what_it_made():
    site = update_row_site([None, None, None], [0, 1, 2])
    a = np.zeros((3, 2), "float32")
    b = site(a, np.ones(2, "float32"), np.array(0))
    assert b is not a and not a.any()  # the first write copies
    c = site(b, np.ones(2, "float32"), np.array(1))
    assert c is b  # then in place
    other = update_row_site([None, None, None], [0, 1, 2])
    d = other(c, np.full(2, 5.0, "float32"), np.array(2))
    assert d is not c and not c[2].any()  # another site's buffer is copied
    with pytest.raises(IndexError, match="row 3 of a tensor of 3 rows"):
        site(c, np.ones(2, "float32"), np.array(3))


def test_update_row_site_with_a_constant_index():
    site = update_row_site([None, None, 1], [0, 1])
    got = site(np.zeros((2, 2), "float32"), np.ones(2, "float32"))
    np.testing.assert_array_equal(got, [[0, 0], [1, 1]])


def test_closure_gets_its_arguments_before_its_captured_values():
    """Found by the loop fuzzer's closure kind (seed 15: f(v) = tanh(v * 2) + w, w captured):
    LambdaLift appends the captured values to the lifted function's parameters (TVM's
    convention), the Relax VM's invoke_closure passed them first, so v and w were swapped
    (an ``add`` closure, the only one tested, did not show it)."""
    import minitvm as tvm
    from minitvm import tir
    from minitvm.relax import op as R
    from minitvm.relax.expr import BindingBlock, Call, Function, SeqExpr, Var, VarBinding, const
    from minitvm.relax.struct_info import TensorStructInfo

    n = tir.Var("n", "int64")
    x = Var("x", TensorStructInfo([n, 2], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        w = bb.emit(R.multiply(x, const(np.array(0.5, "float32"))))
        v, t = Var("v", x.struct_info), Var("t", x.struct_info)
        body = SeqExpr([BindingBlock([VarBinding(t, bb.normalize(R.subtract(v, w)))])], t)
        f = bb.emit(Function([v], body, x.struct_info))
        bb.emit_func_output(bb.emit(Call(f, [bb.emit(Call(f, [x]))])))
    mod = bb.get()
    vm = relax.VirtualMachine(relax.build(mod, target="llvm"), tvm.cpu())
    xv = np.array([[1.0, -2.0], [4.0, 0.5]], "float32")
    np.testing.assert_allclose(vm["main"](xv).numpy(), xv - 2 * (xv * 0.5), atol=1e-6)
    assert check_relax_loops(generate_loop_program(15), sizes=[3, 1], saved=True,
                             passes=[]) == []

"""Relay VM loops run natively once ``native_loop.PYTHON_STEPS`` steps ran in Python (and the
step binding the kernels, where they are not bound at these shapes yet) (``vm.loop_ops``,
``runtime.native_loop``): the same bits as the generated Python's steps at every length (0, 1,
more) and batch, rows read while written again, no native call for a loop that short, the VM's own error for a row index out of range, and the symbolic checks refusing
what the native loop would not do as the VM does."""

import numpy as np
import pytest
from relay_recurrent import recurrent

import minitvm as tvm
from minitvm import relay
from minitvm.runtime import jit, native_loop
from minitvm.runtime.vm import vm as vm_module


def _vms(mod):
    """A VM whose loops stay in Python and one running them natively."""
    exe = relay.vm.compile(mod, target="llvm")
    python = vm_module.VirtualMachine(exe, tvm.cpu())
    python.native_loops = False
    native = vm_module.VirtualMachine(exe, tvm.cpu())
    return python, native


def _loop(vm) -> native_loop.NativeLoop:
    entries = [f.__globals__["native_loop"] for f in vm._straight
               if f is not None and "native_loop" in f.__globals__]
    assert len(entries) == 1
    return entries[0].loop


@pytest.mark.parametrize("kind", ["gru", "lstm"])
@pytest.mark.parametrize("variant", [{}, {"fixed_index": True}, {"return_row": True}])
@pytest.mark.parametrize("wait", [1, None])
def test_native_loop_same_bits(kind, variant, wait, monkeypatch):
    """``wait``: the steps run in Python first (1: the step binding the kernels; None:
    ``PYTHON_STEPS``, the VM's own). The native loop makes every step after them (after the
    first, which binds the kernels, where they are not bound at this input's shape yet: they
    read the whole input), none of a loop no longer than them (it is not called; or, kernels
    bound at another shape, it refuses)."""
    if wait is None:
        wait = native_loop.PYTHON_STEPS
    monkeypatch.setattr(native_loop, "PYTHON_STEPS", wait)
    python, native = _vms(recurrent(kind, **variant))
    loop = _loop(native)
    lengths = [(0, 2), (1, 3), (2, 1), (7, 2), (9, 4), (wait, 2), (wait + 1, 3), (wait + 6, 2),
               (wait + 6, 2), (1, 2), (wait, 2)]
    bound = None  # the input shape the dynamic kernels were bound at (by an earlier run's step)
    for n, batch in lengths:
        first = wait if bound == (n, batch) else max(wait, 1)  # (the first native step)
        xv = np.random.default_rng(n).standard_normal((n, batch, 3)).astype("float32")
        want = [w.numpy() for w in python.run(xv)]
        loop.steps = -1  # (a run of the native loop sets it)
        got = [g.numpy() for g in native.run(xv)]
        for g, w in zip(got, want, strict=True):
            assert g.shape == w.shape and g.dtype == w.dtype
            np.testing.assert_array_equal(g, w)
        # (the loop head after the Python steps calls the native loop: the exit's too)
        if n >= first:
            assert loop.why == "" and loop.steps == n - first, n
        elif bound is None:  # (no kernel bound: not called)
            assert loop.why == "" and loop.steps == -1, n
        else:  # (tried at the first head on the kernels bound at another shape: refused)
            assert "shape" in loop.why and loop.steps == 0, n
        bound = (n, batch) if n else bound


def test_native_loop_row_index_out_of_range_raises_the_vms_error():
    python, native = _vms(recurrent("gru", shift=1))
    # (the last step's row is out of range: a native step)
    xv = np.ones((max(native_loop.PYTHON_STEPS, 1) + 4, 2, 3), "float32")
    with pytest.raises(Exception) as want:
        python.run(xv)
    with pytest.raises(type(want.value), match=str(want.value)[:40].replace("(", r"\(")
                       .replace(")", r"\)").replace("[", r"\[").replace("]", r"\]")):
        native.run(xv)
    assert _loop(native).steps == 3  # (the native loop's steps before it handed that one back)


_ADD1 = """
define void @add1(ptr %args, ptr %vars, i32 %nth) {
entry:
  %a = load ptr, ptr %args
  %op = getelementptr ptr, ptr %args, i64 1
  %o = load ptr, ptr %op
  %v = load i64, ptr %a
  %w = add i64 %v, 1
  store i64 %w, ptr %o
  ret void
}
"""


def _counting_loop(add1: int) -> list:
    """``while i != n: data[i] = i; i = i + 1`` (r0 i, r1 n, r2 the next i, r3 data)."""
    return [("exit", 0, 1, True, 0),
            ("fresh", 2, (), "int64"),
            ("call", add1, 0, [("reg", 0, None), ("out", 2)], []),
            ("row", 3, 3, 0, 0),
            ("move", 0, 2),
            ("kill", (2,)),
            ("back",)]


@pytest.mark.parametrize("n", [0, 1, 5])
def test_native_loop_counts_and_writes_rows(n):
    compiled = jit.compile_ir(_ADD1, "add1", opt=2)
    data = np.full(n, -1, np.int64)
    regs = [np.array(0, np.int64), n, None, data]
    loop = native_loop.NativeLoop()
    assert loop.run(regs, _counting_loop(compiled.address), 1) == 0, loop.why
    assert int(regs[0]) == n and regs[1] == n and regs[2] is None
    np.testing.assert_array_equal(regs[3], np.arange(n))
    assert (data == -1).all()  # (the caller's buffer: copied, never written)
    assert loop.steps == n


def test_native_loop_row_index_out_of_range_hands_the_step_back():
    compiled = jit.compile_ir(_ADD1, "add1", opt=2)
    data = np.zeros(3, np.int64)
    regs = [np.array(0, np.int64), 5, None, data]
    loop = native_loop.NativeLoop()
    assert loop.run(regs, _counting_loop(compiled.address), 1) == -1
    assert int(regs[0]) == 3 and loop.steps == 3  # (the registers at that step's head)
    np.testing.assert_array_equal(regs[3], [0, 1, 2])


def test_native_loop_refuses_a_value_read_three_steps_late():
    """Each site has two buffers: a value moved along three registers is overwritten before
    its read, so the symbolic run refuses (no kernel is called)."""
    ops = [("fresh", 1, (2,), "float32"),
           ("move", 4, 3), ("move", 3, 2), ("move", 2, 1),
           ("call", 0, 0, [("reg", 4, None)], []),
           ("back",)]
    regs = [None, None, np.zeros(2, "float32"), np.zeros(2, "float32"), np.zeros(2, "float32")]
    before = list(regs)
    loop = native_loop.NativeLoop()
    assert loop.run(regs, ops, 1) is None
    assert "gone" in loop.why and all(a is b for a, b in zip(regs, before, strict=True))


@pytest.mark.parametrize("ops, why", [
    ([("move", 0, 1)], "jump back"),
    ([("exit", 0, 1, True, 0), ("back",)], "integer scalar"),
    ([("call", 0, 0, [("reg", 1, ((3,), "float32"))], []), ("back",)], "shape or dtype"),
])
def test_native_loop_refuses(ops, why):
    regs = [np.zeros((), "float32"), np.zeros(2, "float32")]
    loop = native_loop.NativeLoop()
    assert loop.run(regs, ops, 1) is None
    assert why in loop.why


def test_native_loop_of_a_100k_op_chain():
    """A step of 100,000 moves (a value passed along a chain of registers): the checks, the
    layout and the native run are loops, no recursion."""
    n = 100_000
    ops = [("exit", 0, 1, True, 0)] + [("move", k + 1, k) for k in range(2, n + 2)] + \
        [("move", 2, n + 2), ("back",)]
    regs = [7, 7, np.zeros(2, "float32")] + [None] * n
    loop = native_loop.NativeLoop()
    assert loop.run(regs, ops, 1) == 0, loop.why
    assert regs[n + 2] is None and regs[2] is not None


def test_native_loop_drops_registers_not_read_after_its_exit():
    """``keep``: per exit, the registers read after it; a written one not among them is
    dropped at the hand-back (the row buffer here), the others handed back as before."""
    compiled = jit.compile_ir(_ADD1, "add1", opt=2)
    regs = [np.array(0, np.int64), 4, None, np.zeros(4, np.int64)]
    loop = native_loop.NativeLoop(keep=[frozenset({0, 1})])
    assert loop.run(regs, _counting_loop(compiled.address), 1) == 0, loop.why
    assert int(regs[0]) == 4 and regs[1] == 4 and regs[3] is None


def test_native_loop_reruns_a_kept_layout_and_checks_the_registers_look():
    """A second run of the same ops at the same look reuses the layout (no symbolic run); a run
    whose registers look otherwise (a longer buffer) gets its own, with its own bits."""
    compiled = jit.compile_ir(_ADD1, "add1", opt=2)
    ops = _counting_loop(compiled.address)
    loop = native_loop.NativeLoop()
    for n in (3, 3, 5, 3):
        regs = [np.array(0, np.int64), n, None, np.full(n, -1, np.int64)]
        assert loop.run(regs, ops, 1, ops_key=("counting",)) == 0, loop.why
        np.testing.assert_array_equal(regs[3], np.arange(n))
        assert loop.steps == n
    assert len(loop._layouts) == 2


def test_native_loop_keeps_a_refusal(monkeypatch):
    """A look of the registers refused once is refused again without the symbolic run."""
    ops = [("exit", 0, 1, True, 0), ("back",)]
    regs = [np.zeros((), "float32"), np.zeros(2, "float32")]
    loop = native_loop.NativeLoop()
    assert loop.run(regs, ops, 1, ops_key=("x",)) is None and "integer scalar" in loop.why
    monkeypatch.setattr(native_loop._Symbolic, "step", None)  # (a symbolic run would fail)
    assert loop.run(regs, ops, 1, ops_key=("x",)) is None and "integer scalar" in loop.why


def test_main_calling_the_loop_is_generated_with_the_dispatch_loops_bits():
    """main, which invokes the loop's closure, runs as generated Python too (one Python call
    for the invocation), with the dispatch loop's results."""
    exe = relay.vm.compile(recurrent("lstm"), target="llvm")
    plain = vm_module.VirtualMachine(exe, tvm.cpu())
    plain.straight_line = False
    fast = vm_module.VirtualMachine(exe, tvm.cpu())
    main = fast._straight[exe.global_map["main"]]
    assert main is not None and "frames.append(" in main.source
    for n, batch in [(0, 2), (1, 3), (5, 3), (5, 3)]:
        xv = np.random.default_rng(n).standard_normal((n, batch, 3)).astype("float32")
        for g, w in zip(fast.run(xv), plain.run(xv), strict=True):
            np.testing.assert_array_equal(g.numpy(), w.numpy())

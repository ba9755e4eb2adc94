"""Relay VM loop functions as generated Python (``vm.straight_line``) and the rows their kernels
write into the stacked result themselves (``vm.row_outputs``, ``runtime.row_site``): the same
bits as the dispatch loop, the interpreter's values, a copy where a live value is the row."""

import numpy as np
import pytest
from relay_recurrent import recurrent as _recurrent

import minitvm as tvm
from minitvm import relay
from minitvm.runtime import row_site
from minitvm.runtime.vm import bytecode as B
from minitvm.runtime.vm import row_outputs, straight_line
from minitvm.runtime.vm import vm as vm_module


def _vms(mod, monkeypatch):
    """The dispatch loop's VM and one running the loop as straight-line code, rows always
    handed out (``ROW_VIEW_MIN_BYTES`` 0: the test's rows are small)."""
    exe = relay.vm.compile(mod, target="llvm")
    monkeypatch.setattr(straight_line, "ROW_VIEW_MIN_BYTES", 0)
    plain = vm_module.VirtualMachine(exe, tvm.cpu())
    plain.straight_line = False
    fast = vm_module.VirtualMachine(exe, tvm.cpu())
    fast.native_loops = False  # (the generated Python's own steps: test_relay_vm_native_loop)
    assert any(f is not None for f in fast._straight)
    return plain, fast


def _views(monkeypatch) -> list:
    """Whether each row view asked for was handed out (a spy on ``_row_view``)."""
    got = []
    real = vm_module.VirtualMachine._row_view

    def spy(self, *args):
        out = real(self, *args)
        got.append(out is not None)
        return out

    monkeypatch.setattr(vm_module.VirtualMachine, "_row_view", spy)
    return got


def _check(mod, monkeypatch, sizes=((5, 2), (1, 3), (7, 2))):
    plain, fast = _vms(mod, monkeypatch)
    views = _views(monkeypatch)
    ref = relay.create_executor("debug", mod=mod).evaluate()
    for n, batch in sizes:
        xv = np.random.default_rng(n).standard_normal((n, batch, 3)).astype("float32")
        want = [w.numpy() for w in ref(xv)]
        a = [g.numpy() for g in plain.run(xv)]
        b = [g.numpy() for g in fast.run(xv)]
        for p, f, w in zip(a, b, want, strict=True):
            np.testing.assert_array_equal(f, p)  # (the same kernels: the same bits)
            np.testing.assert_allclose(f, w, rtol=1e-5, atol=1e-5)
    return views


@pytest.mark.parametrize("kind", ["gru", "lstm"])
def test_recurrent_loop_writes_its_rows_in_place(kind, monkeypatch):
    views = _check(_recurrent(kind), monkeypatch)
    # every step but each run's first (the buffer is then the caller's: copied) got its view;
    # the first run's first step has no binding yet (no view asked for)
    assert views == [True] * 4 + [False] + [False] + [True] * 6


def test_row_read_after_its_row_is_written_again_copies(monkeypatch):
    """Step t writes row t // 2: an odd step reads h, the view of that row, while it writes
    it again: the view is not handed out again while live, and the write copies the buffer
    (the results keep the interpreter's values)."""
    views = _check(_recurrent("gru", fixed_index=True), monkeypatch, sizes=((6, 2),))
    assert views == [True, True, False, True, False]  # (steps 1..5: rows 0, 1, 1, 2, 2)


def test_loop_returning_the_row(monkeypatch):
    """The last h (a view of the result's last row) leaves the VM as its own array."""
    mod = _recurrent("lstm", return_row=True)
    _check(mod, monkeypatch)
    _, fast = _vms(mod, monkeypatch)
    xv = np.ones((4, 2, 3), "float32")
    ys, h = (o.numpy() for o in fast.run(xv))
    np.testing.assert_array_equal(ys[-1], h)
    assert not np.shares_memory(ys, h)


def test_small_rows_are_copied_not_handed_out():
    """Below ``ROW_VIEW_MIN_BYTES`` the kernel makes its own output and UpdateRow copies it."""
    mod = _recurrent("gru")
    vm = vm_module.VirtualMachine(relay.vm.compile(mod, target="llvm"), tvm.cpu())
    # (the loop's: main, calling it, is generated too)
    src = next(f.source for f in vm._straight if f is not None and "_update_row" in f.source)
    assert "_row_view" in src  # (the site may, once a binding's rows are large enough)
    xv = np.ones((6, 2, 3), "float32")
    vm.run(xv)
    sites = [ins[6] for code, *_ in vm._code for ins in code if ins[0] == B.UPDATE_ROW]
    assert sites and all(site[4][0] is None for site in sites)  # (no view handed out)


def test_generated_code_text(monkeypatch):
    """One statement per instruction, operands as literals, the dead code after a jump left
    out, a fresh scalar storage reusing its array of two steps before."""
    _, fast = _vms(_recurrent("gru"), monkeypatch)
    src = next(f.source for f in fast._straight if f is not None and "_update_row" in f.source)
    assert src.startswith("def run(values, frames, args):")
    assert "refs(t) != 3" in src and "b.into(" in src and "vm._update_row(" in src
    lines = src.splitlines()
    for k, line in enumerate(lines[:-1]):
        if line.strip() in ("continue", "return"):
            assert lines[k + 1].strip().startswith("if pc ==")


def test_row_producers_finds_the_dynamic_kernel_and_not_a_buffer_read_after():
    exe = relay.vm.compile(_recurrent("gru"), target="llvm")
    f = next(f for f in exe.functions if any(i[0] == B.UPDATE_ROW for i in f.instructions))
    code = f.instructions
    leaders = {0} | {pc + t for pc, i in enumerate(code) if i[0] == B.GOTO for t in (i[1],)} | \
        {pc + t for pc, i in enumerate(code) if i[0] == B.IF for t in (i[3], i[4])}
    got = row_outputs.row_producers(code, leaders, frozenset())
    (p, u), = got.items()
    assert code[u][0] == B.UPDATE_ROW and code[p][0] == B.INVOKE_PACKED and code[p][5]
    assert code[p][4][-1] == code[u][2]  # (its one output is the row)
    assert row_outputs.row_producers(code, leaders, frozenset({u})) == {}


def test_row_producers_refuses_a_read_of_the_buffer_between():
    """A kernel reading the stacked buffer between the row's kernel and the write: no view."""
    code = [(B.INVOKE_PACKED, 0, 2, 1, [0, 3], 1),  # row $3 = k(idx $0), dynamic
            (B.INVOKE_PACKED, 1, 2, 1, [1, 4], 1),  # reads the buffer $1
            (B.UPDATE_ROW, 1, 3, 0, 2), (B.RET, 2)]
    assert row_outputs.row_producers(code, {0}, frozenset()) == {}
    code[1] = (B.INVOKE_PACKED, 1, 2, 1, [0, 4], 1)  # (reads the index only)
    assert row_outputs.row_producers(code, {0}, frozenset()) == {0: 2}


def test_row_producers_of_a_100k_move_chain():
    """The buffer passed through 100,000 moves before its write (``may_hold``'s worklist)."""
    n = 100_000
    code = [(B.MOVE, 10 + k, 11 + k) for k in range(n)]
    data = 10 + n
    code += [(B.INVOKE_PACKED, 0, 2, 1, [0, 3], 1), (B.UPDATE_ROW, data, 3, 0, 2), (B.RET, 2)]
    assert row_outputs.row_producers(code, {0}, frozenset()) == {n: n + 1}
    assert len(row_site.may_hold({k: [k + 1] for k in range(n)}, 0)) == n + 1

"""A loop step's kernel writing straight into its row of the stacked result (``row_outputs``
finds where generated code may, ``update_row_site``'s ``row`` hands the view): loops whose row
is carried to the next step, written twice (a live value is that row), returned, or whose
step reads the stacked buffer (refused), each bitwise the interpreter's outputs; the site's
runtime checks on their own; a 100,000-instruction function."""

from __future__ import annotations

import numpy as np

import minitvm as tvm
from minitvm import relax, tir
from minitvm.relax.op.call_inplace import call_inplace_packed
from minitvm.runtime.relax_vm import builtins
from minitvm.runtime.relax_vm.executable import ARG_REG, CALL, MOVE, RET
from minitvm.runtime.relax_vm.kernel import NativeKernel
from minitvm.runtime.relax_vm.row_outputs import row_outputs


def _carried_loop(halve_index: bool = False, read_stacked: bool = False):
    """main(src [n, 3]) -> (h, acc, ys): r = tanh(h * 0.5 + src[t]); ys[t] = r (``ys[t // 2]``
    with ``halve_index``; the row adds ``ys[0]`` with ``read_stacked``); acc += h; h = r, by a
    recursive function."""
    n, m = tir.Var("n", "int64"), tir.Var("m", "int64")
    t = relax.Var("t", relax.TensorStructInfo([], "int64"))
    src = relax.Var("src", relax.TensorStructInfo([m, 3], "float32"))
    h = relax.Var("h", relax.TensorStructInfo([3], "float32"))
    acc = relax.Var("acc", relax.TensorStructInfo([3], "float32"))
    ys = relax.Var("ys", relax.TensorStructInfo([m, 3], "float32"))
    out_sinfo = relax.TupleStructInfo([h.struct_info, acc.struct_info, ys.struct_info])
    gv = relax.GlobalVar("rows")
    gv._checked_type = relax.FuncStructInfo(
        [t.struct_info, src.struct_info, h.struct_info, acc.struct_info, ys.struct_info],
        out_sinfo)
    bb = relax.BlockBuilder()
    with bb.function("rows", [t, src, h, acc, ys], private=True):
        steps = bb.emit(relax.op.take(relax.op.shape_to_tensor(relax.ShapeExpr([m, 3])),
                                      relax.const(np.array(0, "int64")), 0))
        go = bb.emit(relax.op.less(t, steps))
        bb.begin_dataflow_block()
        # (the index made before the row: the row's tensor is made when the index is known)
        index = bb.emit(relax.op.floor_divide(t, relax.const(np.array(2, "int64")))) \
            if halve_index else t
        pre = relax.op.add(relax.op.multiply(h, relax.const(np.array(0.5, "float32"))),
                           relax.op.take(src, t, 0))
        if read_stacked:
            pre = relax.op.add(pre, relax.op.take(ys, relax.const(np.array(0, "int64")), 0))
        h2 = bb.emit(relax.op.tanh(pre))
        written = bb.emit_output(call_inplace_packed("vm.builtin.update_row", ys, h2, index,
                                                     inplace_indices=[0],
                                                     sinfo_args=ys.struct_info))
        # (h read after the write: a view of a row written again would show the new row)
        acc2 = bb.emit_output(relax.op.add(acc, h))
        nxt = bb.emit_output(relax.op.add(t, relax.const(np.array(1, "int64"))))
        step = bb.end_block()
        bb.begin_binding_block()
        again = bb.emit(relax.Call(gv, [nxt, src, h2, acc2, written]))
        then = relax.SeqExpr([step, bb.end_block()], again)
        out = bb.emit(relax.If(go, then, relax.SeqExpr([], relax.Tuple([h, acc, ys]))))
        fgv = bb.emit_func_output(out)
    x = relax.Var("x", relax.TensorStructInfo([n, 3], "float32"))
    with bb.function("main", [x]):
        zeros = bb.emit(relax.op.zeros(relax.ShapeExpr([n, 3]), "float32"))
        h0 = bb.emit(relax.op.zeros(relax.ShapeExpr([3]), "float32"))
        res = bb.emit(relax.Call(gv, [relax.const(np.array(0, "int64")), x, h0, h0, zeros]))
        bb.emit_func_output(res)
    mod = bb.get()
    func = mod[fgv]
    mod.remove(fgv)
    mod[gv] = func
    return mod


def _reference(x, halve_index, read_stacked):
    h, acc, ys = np.zeros(3, "float32"), np.zeros(3, "float32"), np.zeros_like(x)
    for t in range(x.shape[0]):
        pre = h * np.float32(0.5) + x[t]
        if read_stacked:
            pre = pre + ys[0]
        r = np.tanh(pre)
        ys[t // 2 if halve_index else t] = r
        acc = acc + h
        h = r
    return h, acc, ys


def _run(halve_index=False, read_stacked=False, steps=(1, 2, 7, 300)):
    """The loop's outputs from generated code and the interpreter (bitwise equal, near numpy,
    sharing no memory), and whether the generated code hands out row views."""
    ex = relax.build(_carried_loop(halve_index, read_stacked), "llvm")
    fast, slow = relax.VirtualMachine(ex, tvm.cpu()), relax.VirtualMachine(ex, tvm.cpu())
    slow.straight_line = False
    rng = np.random.default_rng(0)
    for s in steps:
        x = rng.standard_normal((s, 3)).astype("float32")
        keep = x.copy()
        for _ in range(2):  # (a second run: the site's buffers of the first are reused)
            got = [v.numpy() for v in fast["main"](x)]
            want = [v.numpy() for v in slow["main"](x)]
            for g, w in zip(got, want, strict=True):
                assert g.tobytes() == w.tobytes()
            for g, r in zip(got, _reference(x, halve_index, read_stacked), strict=True):
                np.testing.assert_allclose(g, r, rtol=1e-5, atol=1e-6)
            assert not any(np.shares_memory(a, b) for a in got for b in got if a is not b)
        np.testing.assert_array_equal(x, keep)
    run = fast._straight[id(ex.functions["rows"])]
    return any(getattr(v, "__name__", "") == "row" for v in run.__globals__.values())


def test_carried_row_is_written_in_place_and_returned_detached():
    assert _run()


def test_a_row_written_twice_keeps_the_live_value():
    # t // 2: each row is written by two steps, while the first step's value (h, that row's
    # view) is still read by the second: the second step gets a fresh tensor, and its write
    # copies the buffer, so h keeps its bits
    assert _run(halve_index=True)


def test_a_step_reading_the_stacked_buffer_gets_no_view():
    assert not _run(read_stacked=True)


def test_site_hands_views_of_its_own_buffer_only():
    site = builtins.update_row_site([None] * 3, [0, 1, 2])
    alloc = builtins.site_tensor(0, "float32")
    size, shape = builtins.ShapeTuple([64]), builtins.ShapeTuple([16])  # (64-byte rows)
    theirs = np.zeros((3, 16), "float32")
    fresh = site.row(alloc, size, shape, theirs, np.array(0))
    assert not np.shares_memory(fresh, theirs) and site.handed[0] is None
    fresh[:] = 1
    mine = site(theirs, fresh, np.array(0))  # (not the site's: copied, then written)
    assert mine is not theirs and not theirs.any() and (mine[0] == 1).all()
    view = site.row(alloc, size, shape, mine, np.array(1))
    assert np.shares_memory(view, mine) and site.handed[0] is view
    view[:] = 2  # (the kernel)
    assert site(mine, view, np.array(1)) is mine and (mine[1] == 2).all()
    # row 1's value is alive (view): not handed again; a write of another value there copies
    again = site.row(alloc, size, shape, mine, np.array(1))
    assert not np.shares_memory(again, mine)
    again[:] = 3
    copied = site(mine, again, np.array(1))
    assert copied is not mine and (copied[1] == 3).all() and (view == 2).all()
    # the returned value holds no view; other values pass as they are
    h, ys = site.detach((view, mine))
    assert h is not view and (h == 2).all() and ys is mine
    # the buffer written last is the copy: a dead view's row is handed out again; a wrong
    # dtype or shape is not a row, nor is a row of the buffer before
    assert not np.shares_memory(site.row(alloc, size, shape, mine, np.array(2)), mine)
    first = site.row(alloc, size, shape, copied, np.array(0))
    assert np.shares_memory(first, copied)
    del first
    assert np.shares_memory(site.row(alloc, size, shape, copied, np.array(0)), copied)
    assert not np.shares_memory(
        site.row(alloc, size, builtins.ShapeTuple([2, 2]), copied, np.array(2)), copied)
    wide = builtins.site_tensor(0, "float64")
    assert not np.shares_memory(
        site.row(wide, builtins.ShapeTuple([128]), shape, copied, np.array(2)), copied)
    # the site's own buffers start at a 64-byte boundary, as the allocator's tensors do
    assert mine.ctypes.data % 64 == 0 and copied.ctypes.data % 64 == 0
    # rows not a multiple of 64 bytes are not handed out (their kernels' stores would split)
    narrow = site(np.zeros((3, 4), "float32"), np.ones(4, "float32"), np.array(0))
    assert not np.shares_memory(
        site.row(alloc, builtins.ShapeTuple([16]), builtins.ShapeTuple([4]), narrow,
                 np.array(1)), narrow)


def test_a_hundred_thousand_instructions():
    n = 100_000
    site = builtins.update_row_site([None] * 3, [0, 1, 2])
    kernel = object.__new__(NativeKernel)
    kernel.spec = {"written": [1]}

    def alloc():
        return np.zeros(3, "float32")

    # r0 data, r1 index, r2 src; r3 = alloc(); kernel(r2, r3); r5 = r3; ... ; update_row
    code = [(CALL, 3, 0, alloc, "alloc", [], [], []),
            (CALL, 4, 0, kernel, "k", [None, None], [(0, 2), (1, 3)], [2, 3])]
    code += [(MOVE, k + 1, (ARG_REG, k if k > 4 else 3)) for k in range(4, 4 + n)]
    last = 4 + n
    code += [(CALL, last + 1, 0, site, "vm.builtin.update_row", [None] * 3,
              [(0, 0), (1, last), (2, 1)], [0, last, 1]), (RET, last + 1)]
    rows, detach = row_outputs(code, {0}, {0})
    assert rows == {0: (site, 0, 1, n + 2)} and detach == {}
    # the stacked buffer read between the row's allocation and its write: no view
    code[1] = (CALL, 4, 0, kernel, "k", [None, None], [(0, 0), (1, 3)], [0, 3])
    assert row_outputs(code, {0}, {0}) == ({}, {})

"""Relax VM loops run natively once ``native_loop.PYTHON_STEPS`` steps ran in Python
(``relax_vm.loop_ops``, ``runtime.native_loop``): a recurrent loop over a symbolic number of
steps and batch, written with the builder API, gives the bits of the generated Python's steps
at lengths 0, 1 and more (every step native, or those after the Python steps), keeps its
caller's buffer, and raises the VM's error for a row out of range."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, tir
from minitvm.relax.op.call_inplace import call_inplace_packed
from minitvm.runtime import native_loop


def _recurrent(shift: int = 0):
    """main(x [n, b, 3]): h = 0; for t < n: h = tanh(h * 0.5 + x[t]); ys[t + shift] = h;
    returns (ys, h) (a recursive function the build turns into a loop; n a tensor argument,
    as the ONNX importer's loops take their length)."""
    n, b = tir.Var("n", "int64"), tir.Var("b", "int64")
    m, c = tir.Var("m", "int64"), tir.Var("c", "int64")
    t = relax.Var("t", relax.TensorStructInfo([], "int64"))
    rows = relax.Var("rows", relax.TensorStructInfo([], "int64"))
    src = relax.Var("src", relax.TensorStructInfo([m, c, 3], "float32"))
    h = relax.Var("h", relax.TensorStructInfo([c, 3], "float32"))
    ys = relax.Var("ys", relax.TensorStructInfo([m, c, 3], "float32"))
    out_sinfo = relax.TupleStructInfo([ys.struct_info, h.struct_info])
    gv = relax.GlobalVar("steps")
    gv._checked_type = relax.FuncStructInfo([t.struct_info, rows.struct_info, src.struct_info,
                                             h.struct_info, ys.struct_info], out_sinfo)
    bb = relax.BlockBuilder()
    with bb.function("steps", [t, rows, src, h, ys], private=True):
        go = bb.emit(relax.op.less(t, rows))
        bb.begin_dataflow_block()
        pre = relax.op.add(relax.op.multiply(h, relax.const(np.array(0.5, "float32"))),
                           relax.op.take(src, t, 0))
        h2 = bb.emit(relax.op.tanh(pre))
        at = relax.op.add(t, relax.const(np.array(shift, "int64"))) if shift else t
        written = bb.emit_output(call_inplace_packed("vm.builtin.update_row", ys, h2, at,
                                                     inplace_indices=[0],
                                                     sinfo_args=ys.struct_info))
        nxt = bb.emit_output(relax.op.add(t, relax.const(np.array(1, "int64"))))
        h_out = bb.emit_output(h2)
        step = bb.end_block()
        bb.begin_binding_block()
        again = bb.emit(relax.Call(gv, [nxt, rows, src, h_out, written]))
        then = relax.SeqExpr([step, bb.end_block()], again)
        out = bb.emit(relax.If(go, then, relax.SeqExpr([], relax.Tuple([ys, h]))))
        fgv = bb.emit_func_output(out)
    x = relax.Var("x", relax.TensorStructInfo([n, b, 3], "float32"))
    with bb.function("main", [x]):
        h0 = bb.emit(relax.op.zeros(relax.ShapeExpr([b, 3]), "float32"))
        zeros = bb.emit(relax.op.zeros(relax.ShapeExpr([n, b, 3]), "float32"))
        n_t = bb.emit(relax.op.take(relax.op.shape_to_tensor(relax.ShapeExpr([n, b, 3])),
                                    relax.const(np.array(0, "int64")), 0))
        res = bb.emit(relax.Call(gv, [relax.const(np.array(0, "int64")), n_t, x, h0, zeros]))
        bb.emit_func_output(res)
    mod = bb.get()
    func = mod[fgv]
    mod.remove(fgv)
    mod[gv] = func
    return mod


def _vms(mod):
    exe = relax.build(mod, "llvm")
    python = relax.VirtualMachine(exe, tvm.cpu())
    python.native_loops = False
    return python, relax.VirtualMachine(exe, tvm.cpu())


def _loops(vm) -> list:
    return [f.__globals__["native_loop"].loop for f in vm._straight.values()
            if f is not None and "native_loop" in f.__globals__]


@pytest.mark.parametrize("wait", [0, None])
def test_relax_native_loop_same_bits(wait, monkeypatch):
    """``wait``: the steps run in Python first (0: every step native; None: ``PYTHON_STEPS``,
    the VM's own). The native loop makes every step after them, none of a loop no longer than
    them (it is not called)."""
    if wait is None:
        wait = native_loop.PYTHON_STEPS
    monkeypatch.setattr(native_loop, "PYTHON_STEPS", wait)
    python, native = _vms(_recurrent())
    native["main"](np.zeros((0, 1, 3), "float32"))  # (its generated function: made at a call)
    lengths = [(0, 2), (1, 3), (2, 1), (7, 2), (9, 4), (7, 2), (wait, 2), (wait + 1, 3),
               (wait + 6, 2)]
    for n, batch in lengths:
        x = np.random.default_rng(n).standard_normal((n, batch, 3)).astype("float32")
        kept = x.copy()
        want = [o.numpy() for o in python["main"](x)]
        for loop in _loops(native):
            loop.steps = -1  # (a run of the native loop sets it)
        got = [o.numpy() for o in native["main"](x)]
        for g, w in zip(got, want, strict=True):
            assert g.shape == w.shape
            np.testing.assert_array_equal(g, w)
        np.testing.assert_array_equal(x, kept)
        (loop,) = _loops(native)
        # (the loop head after the Python steps calls the native loop: the exit's too)
        assert loop.why == "" and loop.steps == (n - wait if n >= wait else -1), n
    assert not _loops(python)


def test_relax_native_loop_row_out_of_range_is_the_vms_error():
    python, native = _vms(_recurrent(shift=1))
    n = native_loop.PYTHON_STEPS + 4  # (the last step's row is out of range: a native step)
    x = np.ones((n, 2, 3), "float32")
    with pytest.raises(IndexError, match=f"update_row: row {n} of a tensor of {n} rows"):
        python["main"](x)
    with pytest.raises(IndexError, match=f"update_row: row {n} of a tensor of {n} rows"):
        native["main"](x)
    (loop,) = _loops(native)
    assert loop.steps == 3  # (the native loop's steps before it handed that one back)


def test_relax_main_calling_the_loop_is_generated_with_the_interpreters_bits():
    """main, which calls the loop function, runs as generated Python too (the call one Python
    call of the loop's generated function), with the interpreter's results."""
    exe = relax.build(_recurrent(), "llvm")
    plain = relax.VirtualMachine(exe, tvm.cpu())
    plain.straight_line = False
    fast = relax.VirtualMachine(exe, tvm.cpu())
    for n, batch in [(0, 2), (1, 3), (6, 3), (6, 3)]:
        x = np.random.default_rng(n).standard_normal((n, batch, 3)).astype("float32")
        for g, w in zip(fast["main"](x), plain["main"](x), strict=True):
            np.testing.assert_array_equal(g.numpy(), w.numpy())
    assert callable(fast._straight[id(exe.functions["main"])])

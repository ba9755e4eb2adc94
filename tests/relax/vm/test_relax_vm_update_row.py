"""``vm.builtin.update_row`` (``R.call_inplace_packed``): a loop's step writing its row of a
result in place, as the ONNX recurrent layers over a run-time length use it: a recursive Relax
function over a symbolic number of rows, against numpy; a read-only buffer is copied; a row out
of range is a clear error."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, tir
from minitvm.relax.op.call_inplace import call_inplace_packed
from minitvm.runtime.relax_vm.builtins import update_row


def _row_loop():
    """main(src [n, 3]): ys = zeros; for t < n: ys[t] = src[t] * 2 (a recursive function)."""
    n = tir.Var("n", "int64")
    m = tir.Var("m", "int64")
    t = relax.Var("t", relax.TensorStructInfo([], "int64"))
    src = relax.Var("src", relax.TensorStructInfo([m, 3], "float32"))
    ys = relax.Var("ys", relax.TensorStructInfo([m, 3], "float32"))
    gv = relax.GlobalVar("rows")
    gv._checked_type = relax.FuncStructInfo([t.struct_info, src.struct_info, ys.struct_info],
                                            ys.struct_info)
    bb = relax.BlockBuilder()
    with bb.function("rows", [t, src, ys], private=True):
        steps = bb.emit(relax.op.take(relax.op.shape_to_tensor(relax.ShapeExpr([m, 3])),
                                      relax.const(np.array(0, "int64")), 0))
        go = bb.emit(relax.op.less(t, steps))
        bb.begin_dataflow_block()
        row = bb.emit(relax.op.multiply(relax.op.take(src, t, 0),
                                        relax.const(np.array(2.0, "float32"))))
        written = bb.emit_output(call_inplace_packed("vm.builtin.update_row", ys, row, t,
                                                     inplace_indices=[0],
                                                     sinfo_args=ys.struct_info))
        nxt = bb.emit_output(relax.op.add(t, relax.const(np.array(1, "int64"))))
        step = bb.end_block()
        bb.begin_binding_block()
        again = bb.emit(relax.Call(gv, [nxt, src, written]))
        then = relax.SeqExpr([step, bb.end_block()], again)
        out = bb.emit(relax.If(go, then, relax.SeqExpr([], ys)))
        fgv = bb.emit_func_output(out)
    x = relax.Var("x", relax.TensorStructInfo([n, 3], "float32"))
    with bb.function("main", [x]):
        zeros = bb.emit(relax.op.zeros(relax.ShapeExpr([n, 3]), "float32"))
        res = bb.emit(relax.Call(gv, [relax.const(np.array(0, "int64")), x, zeros]))
        bb.emit_func_output(res)
    mod = bb.get()
    func = mod[fgv]
    mod.remove(fgv)
    mod[gv] = func
    return mod


def test_update_row_in_a_recursive_loop_over_symbolic_rows():
    mod = _row_loop()
    assert 'R.call_inplace_packed("vm.builtin.update_row"' in mod.script()
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    for steps in (1, 4, 500):  # (frames in a list: test_relax_vm_build runs 5,000 deep)
        x = np.arange(steps * 3, dtype="float32").reshape(steps, 3)
        np.testing.assert_array_equal(vm["main"](x).numpy(), x * 2)
        np.testing.assert_array_equal(x, np.arange(steps * 3).reshape(steps, 3))


def test_update_row_builtin():
    data = np.zeros((3, 2), "float32")
    assert update_row(data, np.ones(2, "float32"), np.array(1)) is data  # (in place)
    np.testing.assert_array_equal(data, [[0, 0], [1, 1], [0, 0]])
    frozen = np.zeros((2, 2), "float32")
    frozen.flags.writeable = False
    got = update_row(frozen, np.ones(2, "float32"), 0)
    np.testing.assert_array_equal(got, [[1, 1], [0, 0]])
    np.testing.assert_array_equal(frozen, 0)
    with pytest.raises(IndexError, match=r"update_row: row 3 of a tensor of 3 rows"):
        update_row(data, np.ones(2, "float32"), 3)

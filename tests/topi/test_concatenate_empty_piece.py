"""``topi.concatenate`` leaves out a piece that is empty along the axis: its clamped load
(every piece is read under a vector select) would read a zero-size buffer. A sorting network's
odd-even layer concatenates ``x[:, rest]`` with ``rest`` empty; with a symbolic batch and 16
columns (a whole vector) the fused Relax kernel read it and crashed."""

from __future__ import annotations

import numpy as np

import minitvm as tvm
from minitvm import relax, te, tir
from minitvm.topi import manipulation


def test_empty_piece_left_out_of_the_compute():
    xs = [te.placeholder((2, 8), "float32", "a"), te.placeholder((2, 0), "float32", "e"),
          te.placeholder((2, 8), "float32", "b")]
    t = manipulation.concatenate(xs, 1)
    assert [int(d) for d in t.shape] == [2, 16]
    assert [x.op.name for x in t.op.input_tensors] == ["a", "b"]
    only = manipulation.concatenate([te.placeholder((3, 0), "float32", "e")], 1)
    assert [int(d) for d in only.shape] == [3, 0]


def test_take_of_no_columns_in_a_fused_concat_runs():
    b = tir.Var("b", "int64")
    x = relax.Var("x", relax.TensorStructInfo((b, 16), "float32"))
    bb, R = relax.BlockBuilder(), relax.op
    lo, hi = np.arange(0, 16, 2), np.arange(1, 16, 2)
    inv = np.argsort(np.concatenate([lo, hi]))  # (the network's wires back in order)
    with bb.function("main", [x]):
        with bb.dataflow():
            a = bb.emit(R.take(x, relax.const(lo, "int64"), axis=1))
            c = bb.emit(R.take(x, relax.const(hi, "int64"), axis=1))
            rest = bb.emit(R.take(x, relax.const(np.zeros((0,), "int64")), axis=1))
            s = bb.emit(R.sigmoid(R.subtract(c, a)))
            cat = bb.emit(R.concat([R.multiply(s, a), R.multiply(s, c), rest], axis=1))
            out = bb.emit_output(R.take(cat, relax.const(inv, "int64"), axis=1))
        bb.emit_func_output(out)
    vm = relax.VirtualMachine(relax.build(bb.get(), "llvm"), tvm.cpu())
    for rows in (1, 3):
        v = np.random.default_rng(rows).standard_normal((rows, 16)).astype("float32")
        s = 1 / (1 + np.exp(-(v[:, hi] - v[:, lo])))
        want = np.concatenate([s * v[:, lo], s * v[:, hi]], 1)[:, inv]
        np.testing.assert_allclose(vm["main"](tvm.nd.array(v)).numpy(), want, rtol=1e-5)

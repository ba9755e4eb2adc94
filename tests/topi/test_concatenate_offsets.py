"""``topi.concatenate`` computes each input's offset from the previous one, simplified as it
goes (simplifying every prefix sum from scratch was quadratic in the number of inputs: a
2,000-way concat spent most of Relax's LegalizeOps there); the offsets and the output shape
are the same, static or symbolic, and the result matches numpy natively."""

from __future__ import annotations

import numpy as np

import minitvm as tvm
from minitvm import relax, te, tir
from minitvm.topi import manipulation


def _concat(shapes, axis):
    xs = [te.placeholder(s, "float32", f"x{i}") for i, s in enumerate(shapes)]
    return manipulation.concatenate(xs, axis)


def test_symbolic_offsets_and_shape():
    n, k = tir.Var("n", "int64"), tir.Var("k", "int64")
    t = _concat([(2, n), (2, n * 2), (2, 3), (2, k)], 1)
    ana = tvm.arith.Analyzer()
    assert ana.can_prove_equal(t.shape[1], n * 3 + k + 3)
    assert str(t.shape[0]) == "2"


def test_many_static_inputs():
    t = _concat([(2, 3)] * 3000, 1)
    assert [int(d) for d in t.shape] == [2, 9000]


def test_wide_concat_matches_numpy():
    bb, R = relax.BlockBuilder(), relax.op
    x = relax.Var("x", relax.TensorStructInfo((2, 3), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            ys = [bb.emit(R.multiply(x, relax.const(float(j), "float32"))) for j in range(300)]
            out = bb.emit_output(R.concat(ys, axis=1))
        bb.emit_func_output(out)
    vm = relax.VirtualMachine(relax.build(bb.get(), "llvm"), tvm.cpu())
    a = np.random.default_rng(0).standard_normal((2, 3)).astype("float32")
    want = np.concatenate([a * j for j in range(300)], axis=1)
    np.testing.assert_allclose(vm["main"](tvm.nd.array(a)).numpy(), want, rtol=1e-6)

"""``topi.nn_te.matmul`` (Relax's legalization of ``R.matmul``) writes a batched product in the
form the GEMM raising recognises: a rank-3 product with a batch of 1 reads that axis at index 0
(before, it read the output's unit axis, the stage was left a plain loop nest, and a
``[1, 64, 256] @ [1, 256, 256]`` took 20 ms in Relax against 0.1 ms); rank-4 products and a
rank-3 A times a matrix keep the output's axes. Numerics against numpy through ``relax.build``."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, te, tir
from minitvm.schedule.raise_patterns import gemm_tag
from minitvm.topi import nn_te


def _placeholders(sa, sb):
    a = te.placeholder(tuple(tir.IntImm("int64", d) for d in sa), name="a")
    b = te.placeholder(tuple(tir.IntImm("int64", d) for d in sb), name="b")
    return a, b


@pytest.mark.parametrize("sa,sb,tag", [
    ((1, 8, 16), (1, 16, 12), "batch_matmul"),  # a batch of one on both sides
    ((3, 8, 16), (3, 16, 12), "batch_matmul"),
    ((1, 8, 16), (16, 12), "matmul"),           # rank-3 activations times a weight
    ((1, 4, 8, 16), (1, 4, 16, 12), "batch_matmul"),  # attention heads, batch 1
    ((1, 1, 8, 16), (1, 1, 16, 12), "batch_matmul"),
    ((2, 8, 16), (16, 12), "matmul"),
])
def test_matmul_stage_is_raised_as_gemm(sa, sb, tag):
    a, b = _placeholders(sa, sb)
    got, attrs = gemm_tag(nn_te.matmul(a, b))
    assert got == tag
    assert attrs["operands"] == (a, b)


@pytest.mark.parametrize("sa,sb", [
    ((1, 64, 256), (1, 256, 256)),
    ((1, 5, 7), (1, 7, 3)),
    ((1, 5, 7), (4, 7, 3)),     # A's unit batch broadcast
    ((4, 5, 7), (1, 7, 3)),     # B's unit batch broadcast
    ((1, 2, 5, 7), (1, 2, 7, 3)),
    ((1, 5, 7), (7, 3)),
])
def test_matmul_numerics(sa, sb):
    rng = np.random.default_rng(0)
    x = relax.Var("x", relax.TensorStructInfo(sa, "float32"))
    y = relax.Var("y", relax.TensorStructInfo(sb, "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, y]):
        with bb.dataflow():
            out = bb.emit_output(relax.op.matmul(x, y))
        bb.emit_func_output(out)
    vm = relax.VirtualMachine(relax.build(bb.get(), "llvm"), tvm.cpu())
    a = rng.standard_normal(sa).astype("float32")
    b = rng.standard_normal(sb).astype("float32")
    got = vm["main"](tvm.nd.array(a), tvm.nd.array(b)).numpy()
    np.testing.assert_allclose(got, np.matmul(a, b), rtol=1e-5, atol=1e-4)

"""The Relax VM codegen keeps one constant-pool entry per distinct tensor content (an importer
that unrolls a loop, as ONNX's LSTM does, makes one Constant per step of the same weight)."""

import numpy as np

import minitvm as tvm
from minitvm import relax, tir


def _chain(weights):
    """main(x: (n, 8)) = x @ weights[0] @ weights[1] ..., each weight its own relax.Constant."""
    n = tir.Var("n", "int64")
    x = relax.Var("x", relax.TensorStructInfo([n, 8], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            h = x
            for w in weights:
                h = bb.emit(relax.op.matmul(h, relax.const(w.copy())))
            out = bb.emit_output(h)
        bb.emit_func_output(out)
    return bb.get()


def _weights(ex):
    return [c for c in ex.constants if isinstance(c, np.ndarray) and c.ndim >= 2]


def test_equal_weights_share_one_entry_distinct_ones_do_not():
    rng = np.random.default_rng(0)
    w = rng.standard_normal((8, 8)).astype("float32")
    other = rng.standard_normal((8, 8)).astype("float32")
    weights = [w, w, other, w, w]  # four Constants of w's content, one of another
    ex = relax.build(_chain(weights), "llvm")
    assert len(_weights(ex)) == 2
    vm = relax.VirtualMachine(ex, tvm.cpu())
    for rows in (1, 3):
        x = rng.standard_normal((rows, 8)).astype("float32")
        want = x
        for m in weights:
            want = want @ m
        np.testing.assert_allclose(vm["main"](x).numpy(), want, rtol=1e-4, atol=1e-4)


def test_content_is_compared_bytewise():
    """NaNs of one bit pattern merge; -0.0 and 0.0 (different bytes) stay apart."""
    nan = np.full((8, 8), np.nan, "float32")
    zero, negzero = np.zeros((8, 8), "float32"), np.full((8, 8), -0.0, "float32")
    assert len(_weights(relax.build(_chain([nan, nan]), "llvm"))) == 1
    assert len(_weights(relax.build(_chain([zero, negzero]), "llvm"))) == 2

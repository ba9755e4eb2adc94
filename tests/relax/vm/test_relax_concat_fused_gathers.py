"""A concatenation along its last axis whose parts are fused gathers (DCN-v2's embedded
features: ``take`` of a table by ids, flattened, concatenated with a dense part). The last
axis runs inside the vector loop, so the piece choice is a vector select that evaluates every
piece's load: each piece's index must be clamped into it, or a fused ``take`` reads its ids out
of bounds and gathers from a wild row (a segmentation fault before the fix)."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, tir

_RNG = np.random.default_rng(0)
T1 = _RNG.standard_normal((128, 16)).astype("float32")
T2 = _RNG.standard_normal((600, 16)).astype("float32")


def _module(n):
    """main(i1 (n, 8), i2 (n, 6), z (n, 16)) -> concat([T1[i1].flat, T2[i2].flat, z], 1)."""
    i1 = relax.Var("i1", relax.TensorStructInfo([n, 8], "int64"))
    i2 = relax.Var("i2", relax.TensorStructInfo([n, 6], "int64"))
    z = relax.Var("z", relax.TensorStructInfo([n, 16], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [i1, i2, z]):
        with bb.dataflow():
            a = bb.emit(relax.op.reshape(relax.op.take(relax.const(T1), i1, 0), [n, 128]))
            b = bb.emit(relax.op.reshape(relax.op.take(relax.const(T2), i2, 0), [n, 96]))
            out = bb.emit_output(relax.op.concat([a, b, z], axis=1))
        bb.emit_func_output(out)
    return bb.get()


@pytest.mark.parametrize("symbolic", [False, True])
def test_concat_of_fused_takes(symbolic):
    n = tir.Var("n", "int64") if symbolic else 3
    ex = relax.build(_module(n), "llvm")
    vm = relax.VirtualMachine(ex, tvm.cpu())
    for rows in ([3, 1, 5] if symbolic else [3]):
        i1 = _RNG.integers(0, 128, (rows, 8))
        i2 = _RNG.integers(0, 600, (rows, 6))
        z = _RNG.standard_normal((rows, 16)).astype("float32")
        out = vm["main"](tvm.nd.array(i1), tvm.nd.array(i2), tvm.nd.array(z)).numpy()
        ref = np.concatenate([T1[i1].reshape(rows, -1), T2[i2].reshape(rows, -1), z], 1)
        np.testing.assert_array_equal(out, ref)

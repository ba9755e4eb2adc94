"""``relax.nn.lrn``: its struct-info rule and errors, TVMScript print/parse, legalization to
``topi.lrn`` (Before/Expected), and the legalized op run against numpy (Relay's window,
``[c - size // 2, c + (size - 1) // 2]``)."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax
from minitvm.ir import structural_equal
from minitvm.relax.op import nn
from minitvm.relax.transform import LegalizeOps
from minitvm.relax.transform.legalize_ops.common import LegalizeError
from minitvm.script import from_source

rng = np.random.default_rng(7)


def lrn_ref(x, size, axis, bias, alpha, beta, lo=None):
    """numpy LRN in float64: the window ``[c - lo, c - lo + size - 1]`` (``lo`` defaults to
    Relay's ``size // 2``; ONNX uses ``(size - 1) // 2``), zeros outside the axis."""
    lo = size // 2 if lo is None else lo
    sq = np.moveaxis(x.astype("float64") ** 2, axis, 0)
    acc = np.zeros_like(sq)
    for c in range(sq.shape[0]):
        acc[c] = sq[max(0, c - lo):max(0, c - lo + size)].sum(axis=0)
    return x / (bias + alpha / size * np.moveaxis(acc, 0, axis)) ** beta


def _infer(sinfo, **attrs):
    bb = relax.BlockBuilder()
    x = relax.Var("x", sinfo)
    with bb.function("main", [x]):
        out = bb.emit(nn.lrn(x, **attrs))
        bb.emit_func_output(out)
    return out.struct_info


def test_struct_info_is_the_input_sinfo():
    s = _infer(relax.TensorStructInfo([2, 6, 3, 3], "float32"), size=3)
    assert structural_equal(s, relax.TensorStructInfo([2, 6, 3, 3], "float32"))
    n = tvm.tir.Var("n", "int64")
    s = _infer(relax.TensorStructInfo([n, 6, 3], "float16"), size=5, axis=-1)
    assert structural_equal(s, relax.TensorStructInfo([n, 6, 3], "float16"))
    assert _infer(relax.TensorStructInfo(ndim=-1, dtype="float32"), size=3).ndim == -1


@pytest.mark.parametrize("sinfo,attrs,match", [
    (relax.TensorStructInfo([2, 6], "float32"), {"size": 3, "axis": 2},
     "axis 2 is out of range for a tensor of 2 dimensions"),
    (relax.TensorStructInfo([6], "float32"), {"size": 3, "axis": 1},
     "axis 1 is out of range for a tensor of 1 dimensions"),
    (relax.TensorStructInfo([2, 6, 3], "float32"), {"size": 0},
     "size must be a positive window length, got 0"),
    (relax.TensorStructInfo([2, 6, 3], "float32"), {"size": -2},
     "size must be a positive window length, got -2"),
    (relax.TensorStructInfo([2, 6, 3], "int32"), {"size": 3},
     "requires a float input"),
])
def test_struct_info_errors(sinfo, attrs, match):
    with pytest.raises(ValueError, match=f"relax.nn.lrn: {match}"):
        _infer(sinfo, **attrs)


BEFORE = '''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 4, 2), dtype="float32")) -> R.Tensor((1, 4, 2), dtype="float32"):
        gv: R.Tensor((1, 4, 2), dtype="float32") = R.nn.lrn(x, size=3, axis=1, bias=1.0,
                                                             alpha=0.5, beta=0.75)
        return gv
'''

# window [c - 1, c + 1] of squares zero-padded to 6 channels; alpha / size = 0.5 / 3
EXPECTED = '''
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def lrn(x: T.Buffer((T.int64(1), T.int64(4), T.int64(2)), "float32"),
            lrn: T.Buffer((T.int64(1), T.int64(4), T.int64(2)), "float32")):
        T.func_attr({"tir.noalias": T.bool(True)})
        lrn_sq = T.alloc_buffer((T.int64(1), T.int64(6), T.int64(2)))
        lrn_sum = T.alloc_buffer((T.int64(1), T.int64(4), T.int64(2)))
        for i0, i1, i2 in T.grid(T.int64(1), T.int64(6), T.int64(2)):
            with T.block("lrn_sq"):
                v_i0, v_i1, v_i2 = T.axis.remap("SSS", [i0, i1, i2])
                T.reads(x[v_i0, T.max(T.min(v_i1 - T.int64(1), T.int64(3)), T.int64(0)), v_i2])
                T.writes(lrn_sq[v_i0, v_i1, v_i2])
                lrn_sq[v_i0, v_i1, v_i2] = T.Select(
                    v_i1 - T.int64(1) >= T.int64(0) and v_i1 - T.int64(1) < T.int64(4),
                    x[v_i0, T.max(T.min(v_i1 - T.int64(1), T.int64(3)), T.int64(0)), v_i2]
                    * x[v_i0, T.max(T.min(v_i1 - T.int64(1), T.int64(3)), T.int64(0)), v_i2],
                    T.float32(0.0))
        for i0, i1, i2, rw in T.grid(T.int64(1), T.int64(4), T.int64(2), T.int64(3)):
            with T.block("lrn_sum"):
                v_i0, v_i1, v_i2, v_rw = T.axis.remap("SSSR", [i0, i1, i2, rw])
                T.reads(lrn_sq[v_i0, v_i1 + v_rw, v_i2])
                T.writes(lrn_sum[v_i0, v_i1, v_i2])
                with T.init():
                    lrn_sum[v_i0, v_i1, v_i2] = T.float32(0.0)
                lrn_sum[v_i0, v_i1, v_i2] = (lrn_sum[v_i0, v_i1, v_i2]
                                              + lrn_sq[v_i0, v_i1 + v_rw, v_i2])
        for i0, i1, i2 in T.grid(T.int64(1), T.int64(4), T.int64(2)):
            with T.block("lrn"):
                v_i0, v_i1, v_i2 = T.axis.remap("SSS", [i0, i1, i2])
                T.reads(x[v_i0, v_i1, v_i2], lrn_sum[v_i0, v_i1, v_i2])
                T.writes(lrn[v_i0, v_i1, v_i2])
                lrn[v_i0, v_i1, v_i2] = x[v_i0, v_i1, v_i2] / T.pow(
                    T.float32(1.0) + T.float32(0.16666666666666666) * lrn_sum[v_i0, v_i1, v_i2],
                    T.float32(0.75))

    @R.function
    def main(x: R.Tensor((1, 4, 2), dtype="float32")) -> R.Tensor((1, 4, 2), dtype="float32"):
        cls = Module
        gv = R.call_tir(cls.lrn, (x,), out_sinfo=R.Tensor((1, 4, 2), dtype="float32"))
        return gv
'''


def test_tvmscript_round_trip():
    mod = from_source(BEFORE)
    text = mod.script()
    assert "R.nn.lrn(x, size=3, axis=1, bias=1, alpha=0.5, beta=0.75)" in text
    assert structural_equal(from_source(text), mod)


def test_legalized_module_matches_expected():
    before = from_source(BEFORE)
    after = LegalizeOps()(before)
    assert structural_equal(after, from_source(EXPECTED)), after.script()
    assert structural_equal(before, from_source(BEFORE))  # the input is left as it was


def _lrn_module(shape, **attrs):
    x = relax.Var("x", relax.TensorStructInfo(shape, "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        bb.emit_func_output(bb.emit(nn.lrn(x, **attrs)))
    return bb.get()


def test_symbolic_axis_extent_is_a_clear_legalize_error():
    c = tvm.tir.Var("c", "int64")
    with pytest.raises(LegalizeError, match="relax.nn.lrn: needs a static extent along axis 1"):
        LegalizeOps()(_lrn_module([2, c, 3], size=3))


@pytest.mark.parametrize("batch", [1, 3])
def test_symbolic_batch_builds_once_and_matches_numpy(batch):
    n = tvm.tir.Var("n", "int64")
    mod = _lrn_module([n, 6, 3, 5], size=5, alpha=0.2, beta=0.75, bias=1.5)
    data = rng.standard_normal((batch, 6, 3, 5)).astype("float32")
    got = _run(mod, tvm.nd.array(data))
    np.testing.assert_allclose(got, lrn_ref(data, 5, 1, 1.5, 0.2, 0.75), rtol=1e-5, atol=1e-6)


def _run(mod, *args):
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    return vm["main"](*args).numpy()


@pytest.mark.parametrize("shape,size,axis,dtype", [
    ((2, 7, 5, 4), 5, 1, "float32"),
    ((1, 6, 9), 4, 1, "float32"),   # even size: window [c - 2, c + 1]
    ((3, 4, 8), 3, -1, "float64"),  # innermost axis
    ((2, 3, 2, 2), 1, 1, "float32"),
    ((1, 2, 3, 3), 7, 1, "float32"),  # window wider than the axis
])
def test_numerics_against_numpy(shape, size, axis, dtype):
    x = rng.standard_normal(shape).astype(dtype)
    p = relax.Var("x", relax.TensorStructInfo(list(shape), dtype))
    bb = relax.BlockBuilder()
    with bb.function("main", [p]):
        bb.emit_func_output(bb.emit(nn.lrn(p, size, axis, bias=2.0, alpha=1e-2, beta=0.75)))
    got = _run(bb.get(), tvm.nd.array(x))
    ref = lrn_ref(x, size, axis % len(shape), 2.0, 1e-2, 0.75)
    np.testing.assert_allclose(got, ref, rtol=1e-5 if dtype == "float32" else 1e-12, atol=1e-6)

"""schedule.roi_ops: the RoI pooling kernels. Relay's vision.roi_pool (NCHW and NHWC, corners
rounded half to even) built natively against its numpy reference; ONNX RoiAlign's PrimFunc
with a symbolic box count and batch against the numpy reference of ONNX Runtime's arithmetic
(fixed and adaptive grids, both pooling modes); C's rounding of halves, exactly."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.codegen.build import compile_prim_func
from minitvm.contrib import graph_executor
from minitvm.schedule.common import LowerCtx
from minitvm.schedule.roi_ops import roi_align_prim_func, roi_pool_prim_func, round_half_away
from minitvm.tir import expr as E
from minitvm.tir import stmt as S
from minitvm.tir.buffer import decl_buffer
from minitvm.tir.function import PrimFunc
from minitvm.topi.reference.vision import roi_pool_nchw
from minitvm.topi.roi_align import RoiAlignSpec, roi_align_onnx_np

RNG = np.random.default_rng(3)
# (batch, x1, y1, x2, y2): inside, across the edges, halves (rounding), reversed, far out
POOL_ROIS = np.array([[0, 0.0, 0.0, 6.0, 4.0], [1, -3.0, -2.0, 4.0, 3.0],
                      [1, 5.0, 3.0, 9.0, 7.0], [0, 6.0, 5.0, 1.0, 2.0],
                      [1, 5.0, 4.0, 30.0, 25.0]], "float32")


def _build(expr, args: dict):
    mod = tvm.IRModule.from_expr(relay.Function(relay.analysis.free_vars(expr), expr))
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm")
    g = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    for k, v in args.items():
        g.set_input(k, v)
    g.run()
    return g.get_output(0).numpy()


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_relay_roi_pool_is_native_and_matches_the_reference(layout):
    data = RNG.standard_normal((2, 5, 8, 10)).astype("float32")
    want = roi_pool_nchw(data, POOL_ROIS, (3, 2), 0.5)  # x 2.5 rounds to 2, 4.5 to 4
    x = data.transpose(0, 2, 3, 1).copy() if layout == "NHWC" else data
    xv = relay.var("x", shape=x.shape)
    rv = relay.var("rois", shape=POOL_ROIS.shape)
    got = _build(relay.vision.roi_pool(xv, rv, (3, 2), 0.5, layout=layout),
                 {"x": x, "rois": POOL_ROIS})
    np.testing.assert_array_equal(got.transpose(0, 3, 1, 2) if layout == "NHWC" else got, want)


def _call(prim, arrays, out_shape):
    fn, _ = compile_prim_func(prim, "roi_kernel")
    args = [tvm.nd.array(a) for a in arrays] + [tvm.nd.array(np.zeros(out_shape, "float32"))]
    fn(*args)
    return args[-1].numpy()


@pytest.mark.parametrize("grid", [2, 0])
@pytest.mark.parametrize("mode", ["avg", "max"])
@pytest.mark.parametrize("half_pixel", [True, False])
def test_roi_align_prim_func_with_symbolic_boxes(grid, mode, half_pixel):
    spec = RoiAlignSpec(3, 2, grid, 0.5, half_pixel, mode)
    n, r = E.Var("n", "int64"), E.Var("num_rois", "int64")
    prim = roi_align_prim_func(spec, (n, 19, 9, 11), r, "float32", "int64")
    for count in (1, 6):
        x = RNG.standard_normal((2, 19, 9, 11)).astype("float32")
        rois = (RNG.uniform(-4, 24, (count, 4))).astype("float32")
        idx = np.arange(count, dtype="int64") % 3  # 2 is past the batch: clamped to 1
        got = _call(prim, [x, rois, idx], (count, 19, 3, 2))
        want = roi_align_onnx_np(x, rois, idx, spec)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_max_roi_pool_prim_func_rounds_halves_away_from_zero():
    x = RNG.standard_normal((1, 3, 8, 8)).astype("float32")
    rois = np.array([[0, 2.5, 1.5, 4.5, 3.5]], "float32")
    got = _call(roi_pool_prim_func((1, 1), 1.0, (1, 3, 8, 8), 1, "float32"), [x, rois],
                (1, 3, 1, 1))
    np.testing.assert_array_equal(got[0, :, 0, 0], x[0, :, 2:5, 3:6].max(axis=(1, 2)))


def test_round_half_away_is_exact():
    vals = np.array([2.5, -2.5, 0.5, -0.5, 1.5, 0.49999997, -0.49999997, 3.2, -3.7, 0.0,
                     8388607.5], "float32")
    a, o = decl_buffer((len(vals),), "float32", "a"), decl_buffer((len(vals),), "float32", "o")
    i = LowerCtx().fresh("i")
    body = S.For(i, 0, len(vals), S.ForKind.SERIAL,
                 S.BufferStore(o, round_half_away(E.BufferLoad(a, [i])), [i]))
    got = _call(PrimFunc([a, o], body), [vals], vals.shape)
    want = np.sign(vals) * np.floor(np.abs(vals.astype("float64")) + 0.5)
    np.testing.assert_array_equal(got, want.astype("float32"))


def test_relay_roi_pool_with_a_fused_epilogue():
    """vision.roi_pool is out-elementwise fusable: a following elementwise op is fused into its
    kernel and reads the pooled stage."""
    data = RNG.standard_normal((2, 5, 8, 10)).astype("float32")
    xv, rv = relay.var("x", shape=data.shape), relay.var("rois", shape=POOL_ROIS.shape)
    y = relay.nn.relu(relay.negative(relay.vision.roi_pool(xv, rv, (2, 2), 0.5)))
    got = _build(y, {"x": data, "rois": POOL_ROIS})
    np.testing.assert_array_equal(got, np.maximum(-roi_pool_nchw(data, POOL_ROIS, (2, 2), 0.5),
                                                  0))


@pytest.mark.parametrize("shape", [(2, 19, 40, 40), (1, 17, 32, 32)])  # 32 x 32: 4 KiB planes
def test_both_roi_align_paths(shape):
    """A few boxes gather each corner's channels from the NCHW maps; many boxes read a
    channels-last copy (power-of-two planes copied in tiles): both as the reference does."""
    spec = RoiAlignSpec(2, 3, 2, 0.5, True, "avg")
    prim = roi_align_prim_func(spec, shape, E.Var("num_rois", "int64"), "float32", "int64")
    x = RNG.standard_normal(shape).astype("float32")
    for count in (1, 3, 80):  # 80 boxes read 4 corners x 24 samples: over 1.5 a pixel
        rois = RNG.uniform(-4, 2 * shape[3], (count, 4)).astype("float32")
        idx = np.arange(count, dtype="int64") % shape[0]
        got = _call(prim, [x, rois, idx], (count, shape[1], 2, 3))
        np.testing.assert_allclose(got, roi_align_onnx_np(x, rois, idx, spec), rtol=1e-5,
                                   atol=1e-6)


def test_both_roi_pool_paths():
    shape = (2, 19, 40, 40)
    prim = roi_pool_prim_func((2, 2), 0.5, shape, E.Var("num_rois", "int64"), "float32",
                              half_away=False)
    x = RNG.standard_normal(shape).astype("float32")
    for count in (1, 400):
        rois = np.concatenate([np.arange(count)[:, None] % 2, RNG.uniform(-4, 80, (count, 4))],
                              1).astype("float32")
        got = _call(prim, [x, rois], (count, 19, 2, 2))
        np.testing.assert_array_equal(got, roi_pool_nchw(x, rois, (2, 2), 0.5))

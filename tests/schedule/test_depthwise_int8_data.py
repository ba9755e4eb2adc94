"""Depthwise convs of 8-bit data (``depthwise.widened_data``): a quantized model's depthwise
conv of its uint8 or int8 activation (zero point 0), a float32 weight of integers and a
float32 output, the input read as it is and widened as each plane is copied. The sums are
integers float32 adds exactly, so the results equal numpy's int64 conv exactly, over the
schedule's modes (row mode with streaming copies at 56x56, stride 2, narrow rows, the flat mode
of a 5x5 plane, channels in the lanes for the smallest planes, stride 2 with aligned or packed
phase rows, its copies reading even-width uint8 rows as 16-bit pairs), channel counts that are no multiple of a vector, odd and tiny planes, padding, a
batch and a requantizing epilogue; one kernel that reads the 8-bit input (no float32 copy of
it in memory), takes the depthwise schedule and, requantizing to uint8, applies the epilogue
in its stores (``lower._EPILOGUE_STORES``: no float32 temporary). int16 data too (a 16x8
model's, ``tflite.products16``): exact where the weights bound the sums below 2**24, also with
two output channels a group (its filters split in a high and a low part)."""

import numpy as np
import pytest
from conv_reference import conv_kernel, grouped_conv_ref, run_graph

import minitvm as tvm
from minitvm import relay
from minitvm.schedule import depthwise
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import walk_stmts

CASES = [  # (input shape, kernel, stride, pads (t, l, b, r))
    ((1, 24, 56, 56), 3, 1, (1, 1, 1, 1)),  # row mode, streamed copies
    ((1, 40, 28, 28), 3, 2, (0, 0, 1, 1)),  # stride 2, TFLite's SAME padding
    ((2, 20, 14, 14), 3, 1, (1, 1, 1, 1)),  # a batch, narrow rows
    ((1, 16, 5, 5), 3, 1, (1, 1, 1, 1)),    # a 5x5 plane: the flat mode
    ((1, 32, 4, 4), 3, 1, (1, 1, 1, 1)),    # channels in the lanes
    ((1, 12, 9, 9), 5, 2, (2, 2, 2, 2)),    # 5x5 filter, stride 2
    ((1, 8, 7, 7), 3, 1, (0, 0, 0, 0)),     # no padding
    ((1, 19, 57, 57), 3, 2, (1, 1, 1, 1)),  # stride 2, odd plane: aligned phase rows (29 -> 32)
    ((1, 21, 112, 112), 3, 2, (0, 0, 1, 1)),  # 112x112 s2: aligned rows, streamed copies
    ((1, 10, 33, 34), 3, 2, (0, 0, 1, 1)),  # stride 2, rows of 17: packed, whole copy
    ((1, 3, 3, 3), 3, 1, (1, 1, 1, 1)),     # a tiny image, 3 channels
    ((2, 13, 30, 30), 3, 2, (1, 1, 1, 1)),  # stride 2, left padding 1: odd columns' pairs
    ((1, 9, 20, 36), 5, 2, (2, 2, 2, 2)),   # 5x5 stride 2, padding 2, pairs
]


def _build(shape, dtype, w, stride, pads, requantize):
    x = relay.var("x", shape=shape, dtype=dtype)
    y = relay.nn.conv2d(x, relay.const(w), strides=(stride, stride), padding=pads,
                        groups=shape[1], channels=w.shape[0], kernel_size=w.shape[2:],
                        out_dtype="float32")
    if requantize:  # (bias, scale, round, zero point, saturate: the importer's epilogue)
        bias = np.arange(shape[1], dtype="float32").reshape(1, -1, 1, 1) * 7
        y = relay.add(y, relay.const(bias))
        y = relay.round(relay.multiply(y, relay.const(np.float32(1 / 512))))
        y = relay.cast(relay.clip(relay.add(y, relay.const(np.float32(3))), 0, 255), "uint8")
    with tvm.transform.PassContext(opt_level=3):
        return relay.build(tvm.IRModule.from_expr(relay.Function([x], y)), target="llvm")


@pytest.mark.parametrize("shape, k, stride, pads", CASES)
@pytest.mark.parametrize("dtype", ["uint8", "int8"])
@pytest.mark.parametrize("requantize", [False, True])
def test_depthwise_of_8bit_data_is_exact(shape, k, stride, pads, dtype, requantize):
    rng = np.random.default_rng(shape[1] + k)
    c = shape[1]
    w = rng.integers(-128, 128, (c, 1, k, k)).astype("float32")
    lo, hi = (0, 256) if dtype == "uint8" else (-128, 128)
    x = rng.integers(lo, hi, shape).astype(dtype)
    x.reshape(-1)[0] = hi - 1
    lib = _build(shape, dtype, w, stride, pads, requantize)
    want = grouped_conv_ref(x, w.astype("int64"), c, (stride, stride), pads)
    if requantize:
        want = want + np.arange(c).reshape(1, -1, 1, 1) * 7
        want = np.round(want.astype("float32") * np.float32(1 / 512)) + 3
        want = np.clip(want, 0, 255).astype("uint8")
    for threads in (1, 2):
        got = run_graph(lib, {"x": x}, threads)
        np.testing.assert_array_equal(got, want.astype(got.dtype))
    kernels = lib.get_lib().kernels
    assert len(kernels) == 1  # (no separate cast of the input)
    prim = conv_kernel(lib).prim_func
    assert prim.buffer_map[prim.params[0]].dtype == dtype
    if requantize:  # the uint8 epilogue in the conv's stores: no float32 conv in memory
        assert conv_kernel(lib).ws_bytes == 0
    names = {s.buffer.name for s in walk_stmts(prim.body) if isinstance(s, S.DeclBuffer)}
    assert names & {"dw_xph", "dw_win", "dw_xt", "dw_flat"}  # (the depthwise schedule's copies)
    # stride-2 phase copies of uint8 rows of an even width read the input as 16-bit pairs
    # (``depthwise.PAIR_FILL``; none of these strided planes has its channels in the lanes)
    pairs = dtype == "uint8" and stride == 2 and shape[3] % 2 == 0
    assert any(n.endswith("_pairs") for n in names) == pairs


@pytest.mark.parametrize("shape, k, stride, pads", CASES[::3])
@pytest.mark.parametrize("multiplier", [1, 2])
def test_depthwise_of_int16_data_is_exact(shape, k, stride, pads, multiplier):
    """int16 data over the full range, taps bounding each sum below 2**24 (|w| <= 20 on 5x5)."""
    rng = np.random.default_rng(shape[1] + k + multiplier)
    c = shape[1]
    w = rng.integers(-20, 21, (c * multiplier, 1, k, k)).astype("float32")
    x = rng.integers(-32768, 32768, shape).astype("int16")
    x.reshape(-1)[0] = -32768
    lib = _build(shape, "int16", w, stride, pads, False)
    want = grouped_conv_ref(x, w.astype("int64"), c, (stride, stride), pads)
    np.testing.assert_array_equal(run_graph(lib, {"x": x}, 1), want.astype("float32"))
    assert len(lib.get_lib().kernels) == 1  # (no separate cast of the input)
    prim = conv_kernel(lib).prim_func
    assert prim.buffer_map[prim.params[0]].dtype == "int16"
    names = {s.buffer.name for s in walk_stmts(prim.body) if isinstance(s, S.DeclBuffer)}
    assert names & {"dw_xph", "dw_win", "dw_xt", "dw_flat"}  # (the depthwise schedule's copies)


def test_widened_data_rule():
    """Which convs of 8-bit data the depthwise schedule takes: one input channel a group,
    float32 weight and output; a grouped conv of several channels a group, an integer output
    or an int8 weight go elsewhere."""
    from minitvm.relay.backend import te_compiler

    def stage(groups, cg, out_dtype="float32", w_dtype="float32"):
        x = relay.var("x", shape=(1, 8, 6, 6), dtype="uint8")
        w = relay.var("w", shape=(8, cg, 3, 3), dtype=w_dtype)
        y = relay.nn.conv2d(x, w, padding=(1, 1), groups=groups, channels=8,
                            kernel_size=(3, 3), out_dtype=out_dtype)
        mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x, w], y)))
        _, _, outs = te_compiler.build_te(mod["main"])
        return outs[0]

    assert depthwise.widened_data(stage(8, 1))
    assert depthwise.supported(stage(8, 1))
    assert not depthwise.widened_data(stage(2, 4))
    assert not depthwise.widened_data(stage(8, 1, out_dtype="int32", w_dtype="int8"))

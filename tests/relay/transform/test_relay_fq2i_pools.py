"""FakeQuantizationToInteger's average pools (``fake_quantization_to_integer_pools``): inside a
region the integer mean rounds to nearest, ties to even (as quantize rounds the float mean:
equal to the float program, ties included); in QAT mode a global pool is the exact sum with
the scale divided by the window, int16 where it fits, so a dense head reading it becomes the
int16 x int8 qnn.dense (equal to the float head up to float rounding); where neither is exact
the ops stay float."""

import numpy as np
import pytest
from pass_test_util import run_pass

import minitvm as tvm
from minitvm import relay
from minitvm.relay.transform.fake_quantization_to_integer_pools import rounded_mean

qnn = relay.qnn.op
RNG = np.random.default_rng(11)


def _c(v, dtype):
    return relay.const(np.asarray(v, dtype), dtype)


def _dq(x, scale, zp, axis=1):
    return qnn.dequantize(x, _c(scale, "float32"), _c(zp, "int32"), axis=axis)


def _q(x, scale, zp, dtype="uint8"):
    return qnn.quantize(x, _c(scale, "float32"), _c(zp, "int32"), axis=1, out_dtype=dtype)


def _ops(mod) -> dict:
    return relay.analysis.list_op_freqs(mod)


def _run(mod, *args, built=False):
    if built:
        with tvm.transform.PassContext(opt_level=3):
            return relay.create_executor("graph", mod=mod, target="llvm").evaluate()(
                *args).numpy()
    return relay.create_executor("debug", mod=mod).evaluate()(*args).numpy()


def _fq2i(expr, **opts):
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(expr))
    return mod, run_pass(relay.transform.FakeQuantizationToInteger(**opts), mod)


def test_rounded_mean_is_round_half_to_even():
    totals = np.arange(-300, 301, dtype="int32")
    x = relay.var("t", shape=totals.shape, dtype="int32")
    for count in (1, 2, 4, 6, 9, 144):
        mod = tvm.IRModule.from_expr(relay.Function([x], rounded_mean(x, count)))
        np.testing.assert_array_equal(_run(mod, totals), np.round(totals / count))
    # a divisor per element (windows of different sizes): float32 division, ties exact
    counts = RNG.integers(1, 50, size=totals.shape)
    counts[::7] = 2
    mod = tvm.IRModule.from_expr(relay.Function([x], rounded_mean(x, counts)))
    for built in (False, True):
        np.testing.assert_array_equal(_run(mod, totals, built=built), np.round(totals / counts))
    big = np.tile(np.arange(-(1 << 22) + 1, (1 << 22), 4099, dtype="int32"), 3)
    c = np.repeat([3, 9, 16383], big.size // 3)
    y = relay.var("t", shape=big.shape, dtype="int32")
    mod = tvm.IRModule.from_expr(relay.Function([y], rounded_mean(y, c)))
    np.testing.assert_array_equal(_run(mod, big, built=True),
                                  np.round(big.astype(np.float64) / c))


@pytest.mark.parametrize("pool", ["avg", "global_avg"])
@pytest.mark.parametrize("dtype, zp", [("uint8", 3), ("int8", -5)])
def test_region_pool_rounds_like_the_float_program(pool, dtype, zp):
    """2x2 windows and a 4x4 plane: many exact ties; zero points odd (a tie's parity)."""
    x = relay.var("x", shape=(1, 4, 4, 4), dtype=dtype)
    f = _dq(x, 0.5, zp)
    f = relay.nn.avg_pool2d(f, [2, 2], [2, 2]) if pool == "avg" else \
        relay.nn.global_avg_pool2d(f)
    mod, out = _fq2i(_q(f, 0.5, zp, dtype))
    ops = _ops(out)
    assert "qnn.dequantize" not in ops and "qnn.quantize" not in ops
    assert ("nn.avg_pool2d" in ops) == (pool == "avg") and ("sum" in ops) == (pool != "avg")
    info = np.iinfo(dtype)
    data = RNG.integers(info.min, info.max + 1, size=(1, 4, 4, 4)).astype(dtype)
    for built in (False, True):
        np.testing.assert_array_equal(_run(out, data, built=built), _run(mod, data))


@pytest.mark.parametrize("include, ceil", [(False, False), (False, True), (True, True)],
                         ids=["uncounted", "uncounted-ceil", "counted-ceil"])
@pytest.mark.parametrize("dtype, zp", [("uint8", 3), ("int8", -5)])
def test_region_pool_of_windows_of_different_sizes_rounds_like_the_float_program(
        include, ceil, dtype, zp):
    """3x3 windows, stride 2, padding 1 on a 6x6 plane: uncounted padding divides border
    windows by 4 or 6 taps, ceil mode adds a last window past the padding (divided by its
    taps inside the padded input, or the input): each window's integer sum, then the rounded
    mean by its own divisor -- equal to the float program."""
    x = relay.var("x", shape=(1, 4, 6, 6), dtype=dtype)
    f = relay.nn.avg_pool2d(_dq(x, 0.5, zp), [3, 3], [2, 2], padding=[1, 1, 1, 1],
                            ceil_mode=ceil, count_include_pad=include)
    mod, out = _fq2i(_q(f, 0.5, zp, dtype))
    ops = _ops(out)
    assert "qnn.dequantize" not in ops and "qnn.quantize" not in ops
    # (one float32 pool of the integers; each window's sum divided by its divisor grid)
    assert ops.get("divide") == 1 and ops.get("nn.avg_pool2d") == 1 and "floor_divide" not in ops
    info = np.iinfo(dtype)
    data = RNG.integers(info.min, info.max + 1, size=(1, 4, 6, 6)).astype(dtype)
    data[0, 0] = zp + 1  # (ties: a border window's sum of 4 or 6 ones and halves)
    for built in (False, True):
        np.testing.assert_array_equal(_run(out, data, built=built), _run(mod, data))


@pytest.mark.parametrize("include", [False, True], ids=["uncounted", "counted"])
def test_region_pool_nhwc_dilated_asymmetric_padding(include):
    """NHWC, dilation 2, padding (1, 2, 2, 1), ceil mode: the divisor grid follows the layout's
    H and W; equal to the float program."""
    x = relay.var("x", shape=(1, 7, 7, 4), dtype="uint8")
    f = relay.nn.avg_pool2d(_dq(x, 0.5, 3, axis=3), [3, 3], [2, 2], dilation=[2, 2],
                            padding=[1, 2, 2, 1], layout="NHWC", ceil_mode=True,
                            count_include_pad=include)
    mod, out = _fq2i(_q(f, 0.5, 3))
    assert "qnn.quantize" not in _ops(out) and _ops(out).get("divide") == 1
    data = RNG.integers(0, 256, size=(1, 7, 7, 4)).astype("uint8")
    np.testing.assert_array_equal(_run(out, data, built=True), _run(mod, data))


def test_qat_pool_of_windows_of_different_sizes_sums_exactly():
    """QAT mode, a 3x3 pool with uncounted padding (divisors 4, 6, 9): each window's sum
    times 36 / its divisor, the scale divided by 36 -- int16 (36 x 255 fits): the mean
    exactly, so the float program's values up to float rounding."""
    x = relay.var("x", shape=(1, 4, 5, 5), dtype="uint8")
    f = relay.nn.avg_pool2d(_dq(x, 0.05, 3), [3, 3], [1, 1], padding=[1, 1, 1, 1],
                            count_include_pad=False)
    mod, out = _fq2i(f, use_qat=True)
    text = out.astext(show_meta_data=False)
    assert _ops(out).get("qnn.dequantize") == 1 and "int16" in text
    scale = []
    relay.analysis.post_order_visit(out["main"], lambda e: scale.append(
        float(e.args[1].data.numpy())) if isinstance(e, relay.Call) and
        getattr(e.op, "name", "") == "qnn.dequantize" else None)
    assert scale == [pytest.approx(0.05 / 36, rel=1e-7)]
    data = RNG.integers(0, 256, size=(1, 4, 5, 5)).astype("uint8")
    ref = _run(mod, data)
    for built in (False, True):
        np.testing.assert_allclose(_run(out, data, built=built), ref, rtol=1e-6, atol=1e-7)


def _head(hw: int, zp: int = 0, windowed: bool = False):
    """A QAT head: uint8 activations (zero point ``zp``) -> global (or 2x2) average pool ->
    flatten -> dense with per-channel int8 weights -> float bias; no quantize after."""
    x = relay.var("x", shape=(2, 32, hw, hw), dtype="uint8")
    f = _dq(x, 0.05, zp)
    f = relay.nn.avg_pool2d(f, [2, 2], [2, 2]) if windowed else relay.nn.global_avg_pool2d(f)
    f = relay.nn.batch_flatten(f)
    k = 32 * (hw // 2) ** 2 if windowed else 32
    w = RNG.integers(-127, 128, size=(10, k)).astype("int8")
    scale = RNG.uniform(0.5, 1.5, size=10).astype("float32") / 127
    wq = qnn.dequantize(_c(w, "int8"), _c(scale, "float32"), _c(np.zeros(10), "int32"),
                        axis=0)
    y = relay.nn.dense(f, wq, units=10)
    return relay.nn.bias_add(y, _c(RNG.normal(0, 0.3, 10), "float32"), axis=-1), x


def _float_bias_of_dequantized(out) -> bool:
    """Is the head's bias_add a float add of the dequantized qnn.dense (QAT mode: quantizing
    the float bias would round it)?"""
    found = []
    relay.analysis.post_order_visit(out["main"], lambda e: found.append(
        getattr(e.args[0].op, "name", "") == "qnn.dequantize" and
        e.args[1].data.numpy().dtype == np.float32)
        if isinstance(e, relay.Call) and getattr(e.op, "name", "") == "nn.bias_add" else None)
    return found == [True]


@pytest.mark.parametrize("zp, windowed, hw", [(0, False, 8), (128, False, 8), (3, True, 8),
                                              (128, False, 16)])
def test_qat_head_is_integer_and_exact(zp, windowed, hw):
    """8x8 planes: sums of 64 (or 4) values of at most 255 fit int16; a 16x16 plane's sums
    of 256 need int32 (their range, 256 x 255 from int_range, times the weights' sum of
    |w| stays under 2**31): qnn.dense either way, its int32 sums exact; the float bias added
    to the dequantized product as the float program adds it (per-channel scales: quantizing
    it would round it)."""
    expr, _ = _head(hw, zp, windowed)
    mod, out = _fq2i(expr, use_qat=True)
    ops = _ops(out)
    assert "nn.global_avg_pool2d" not in ops and "nn.dense" not in ops
    assert ops.get("qnn.dense") == 1 and ops.get("sum" if not windowed else "round") == 1
    assert ("int16" in out.astext(show_meta_data=False)) == (hw == 8)
    assert _float_bias_of_dequantized(out)
    data = RNG.integers(0, 256, size=(2, 32, hw, hw)).astype("uint8")
    ref = _run(mod, data)
    for built in (False, True):
        np.testing.assert_allclose(_run(out, data, built=built), ref, rtol=0,
                                   atol=2e-6 * np.abs(ref).max())


def test_qat_head_refusals():
    """A 64x64 plane's sums (4096 x 255) times the weights' sum of |w| could pass 2**31: the
    dense stays float (the pool's exact int32 sum stays); a QAT pool of int16 values whose
    7x7 windows with uncounted padding have divisors of least common multiple 176,400 (the
    scaled sums could pass int32) stays float."""
    expr, _ = _head(64)
    mod, out = _fq2i(expr, use_qat=True)
    ops = _ops(out)
    assert ops.get("sum") == 1 and ops.get("nn.dense") == 1 and "qnn.dense" not in ops
    data = RNG.integers(0, 256, size=(2, 32, 64, 64)).astype("uint8")
    ref = _run(mod, data)
    np.testing.assert_allclose(_run(out, data), ref, rtol=0, atol=2e-6 * np.abs(ref).max())
    x = relay.var("x", shape=(1, 4, 8, 8), dtype="int16")
    f = relay.nn.avg_pool2d(_dq(x, 0.5, 3), [7, 7], [1, 1], padding=[3, 3, 3, 3],
                            count_include_pad=False)
    _, out = _fq2i(f, use_qat=True)
    assert "nn.avg_pool2d" in _ops(out) and "qnn.dequantize" in _ops(out)
    assert "cast" not in _ops(out)


def test_qat_bias_exact_at_the_scale_is_integer():
    """A scalar-scale dense whose float bias is integers of the product's scale: the bias is
    quantized (TVM's rule, exact here) and added in int32; a bias between steps stays the
    float add."""
    x = relay.var("x", shape=(2, 16), dtype="uint8")
    w = RNG.integers(-127, 128, size=(4, 16)).astype("int8")
    wq = qnn.dequantize(_c(w, "int8"), _c(0.25, "float32"), _c(0, "int32"))
    scale = np.float32(0.5 * 0.25)
    for bias, integer in ((np.array([1, -2, 3, 40], "float32") * scale, True),
                          (np.array([0.3, -2, 3, 40], "float32") * scale, False)):
        y = relay.nn.bias_add(relay.nn.dense(_dq(x, 0.5, 7), wq, units=4), _c(bias, "float32"))
        mod, out = _fq2i(y, use_qat=True)
        assert _float_bias_of_dequantized(out) != integer
        assert relay.analysis.list_op_freqs(out).get("qnn.dense") == 1
        data = RNG.integers(0, 256, size=(2, 16)).astype("uint8")
        exact = ((data.astype(np.float64) - 7) * 0.5) @ (w.astype(np.float64) * 0.25).T + bias
        np.testing.assert_allclose(_run(out, data, built=True), exact, rtol=1e-6, atol=1e-6)


def test_region_pool_feeding_a_quantized_dense_sums_exactly():
    """dequantize -> global pool -> flatten -> dense -> bias -> quantize (a linear head whose
    output is fake-quantized): the pool's exact int16 sums feed qnn.dense, and the region's
    one rounding is the final requantize: equal to the float program (a pool requantized into
    the head's output scale, as TVM types it, was far off)."""
    expr, _ = _head(8, 0)
    mod, out = _fq2i(_q(expr, 0.02, 128), use_qat=False)
    ops = _ops(out)
    assert ops.get("qnn.dense") == 1 and ops.get("sum") == 1 and "nn.dense" not in ops
    data = RNG.integers(0, 256, size=(2, 32, 8, 8)).astype("uint8")
    ref = _run(mod, data).astype("int32")
    assert np.abs(_run(out, data, built=True).astype("int32") - ref).max() <= 1

"""TFLite models with run-time sizes beyond the batch, imported once (``shape_dict`` marks the
dims -1 or ``relay.Any()``), ``relay.vm.compile``d once and run at several sizes against
LiteRT resized to each: a text model over any sequence length, an audio 1-D conv over any
length, a fully convolutional image model at any H and W, quantized text and image models;
8-bit RESIZE_BILINEAR / TRANSPOSE_CONV to sizes computed when they run, 8-bit MEAN / SUM /
strided average pools over run-time sizes (LiteRT's multipliers computed then); the same files
imported without a shape_dict stay static; UNPACK along a run-time size is a clear error."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("tflite", reason="the TFLite importer needs the `tflite` package")

import tflite_dynmodels as models  # noqa: E402
from test_tflite_dynamic_batch import build_once, litert_run, vm_run  # noqa: E402

from minitvm import relay  # noqa: E402
from minitvm.relay.frontend import ImportError_  # noqa: E402
from minitvm.relay.frontend.tflite.builder import ModelBuilder  # noqa: E402


def _compare(blob, shapes, feeds_at, sizes, steps=None, rtol=1e-4, atol=1e-5):
    """Build once with ``shapes``; at each size compare every output with LiteRT's (float:
    allclose; integer: at most ``steps`` apart). Returns the module."""
    mod, vm = build_once(blob, shapes)
    rng = np.random.default_rng(0)
    for n in sizes:
        feeds = feeds_at(n, rng)
        refs, outs = litert_run(blob, feeds), vm_run(mod, vm, feeds)
        assert len(outs) == len(refs)
        for out, ref in zip(outs, refs, strict=True):
            assert out.shape == ref.shape and out.dtype == ref.dtype, (n, out.shape, ref.shape)
            if ref.dtype.kind == "f":
                np.testing.assert_allclose(out, ref, rtol=rtol, atol=atol)
            else:
                diff = np.abs(out.astype("int64") - ref.astype("int64")).max()
                assert diff <= steps, f"size {n}: {diff} steps"
    return mod


def _ret(mod) -> list[str]:
    return [str(f) for f in mod["main"].ret_type.fields]


@pytest.mark.parametrize("dyn", [-1, relay.Any()], ids=["minus1", "Any"])
def test_text_model_any_sequence_length(dyn):
    """GATHER embedding, FC over the last dim, attention (RESHAPE -1 / TRANSPOSE / BATCH_MATMUL
    with the sequence length on both matrix dims / SOFTMAX), CONCATENATION, STRIDED_SLICE and
    PAD along the sequence, MEAN over it."""
    mod = _compare(models.text_model(), {"ids": (1, dyn)},
                   lambda n, r: {"ids": r.integers(0, 20, (1, n)).astype("int32")}, (3, 6, 9))
    assert _ret(mod) == ["Tensor[(1, 4), float32]", "Tensor[(1, ?, 4), float32]"]


def test_audio_conv_any_length():
    """EXPAND_DIMS / CONV_2D over (1, 1, T, C): SAME stride 1, VALID stride 2, SAME stride 2
    (its pads depend on T: computed when it runs) / SQUEEZE; odd and even lengths."""
    mod = _compare(models.audio_model(), {"x": (1, -1, 4)},
                   lambda n, r: {"x": r.standard_normal((1, n, 4)).astype("float32")},
                   (9, 16, 21))
    assert _ret(mod) == ["Tensor[(1, 5), float32]", "Tensor[(1, ?, 3), float32]"]


def test_image_model_any_height_and_width():
    """Conv stride 2 SAME, depthwise, MAX_POOL stride 2 SAME, AVERAGE_POOL; RESIZE_BILINEAR to
    the input's H, W and RESIZE_NEAREST to twice the pooled size, both from SHAPE at run time;
    MEAN over H, W; a STRIDED_SLICE crop over both run-time dims. Non-square sizes, odd and
    even."""
    mod = _compare(models.image_model(), {"x": (1, relay.Any(), relay.Any(), 3)},
                   lambda n, r: {"x": r.standard_normal((1, n, n + 3, 3)).astype("float32")},
                   (7, 12, 16))
    assert _ret(mod) == ["Tensor[(1, ?, ?, 8), float32]", "Tensor[(1, 8), float32]",
                         "Tensor[(1, ?, ?, 8), float32]"]


def test_quantized_text_model_any_sequence_length():
    t = models.quantized_text_model()
    _compare(t.b.finish(), {"input": (1, -1, 16)},
             lambda n, r: {"input": r.integers(-128, 128, (1, n, 16)).astype("int8")},
             (3, 6, 11), steps=1)


def test_quantized_image_model_any_height_and_width():
    """int8: the stride-2 SAME conv padded by the zero point and the max pool by the least
    int8 when they run."""
    t = models.quantized_image_model()
    _compare(t.b.finish(), {"x": (1, -1, -1, 3)},
             lambda n, r: {"x": r.integers(-128, 128, (1, n, n + 1, 3)).astype("int8")},
             (7, 12, 15), steps=1)


@pytest.mark.parametrize("make,name", [(models.text_model, "ids"), (models.image_model, "x")])
def test_static_import_is_unchanged(make, name):
    """Without a shape_dict the stored sizes are kept (static types, no dyn ops) and match
    LiteRT at them."""
    from frontend_models import build_and_run

    blob = make()
    mod, params = relay.frontend.from_tflite(blob)
    text = mod.astext()
    assert "?" not in text and "dyn." not in text and "shape_of" not in text
    shape = tuple(int(d) for d in mod["main"].params[0].type_annotation.shape)
    rng = np.random.default_rng(3)
    x = rng.integers(0, 20, shape).astype("int32") if name == "ids" else \
        rng.standard_normal(shape).astype("float32")
    outs = build_and_run(mod, params, {name: x})
    for out, ref in zip(outs, litert_run(blob, {name: x}), strict=True):
        np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-5)


def _unpack(axis: int) -> bytes:
    b = ModelBuilder()
    x = b.input("x", (1, 2, 3), signature=(1, -1, 3))
    n = (1, 2, 3)[axis]
    shape = tuple(d for k, d in enumerate((1, 2, 3)) if k != axis)
    ys = [b.tensor(f"y{k}", shape) for k in range(n)]
    b.operator("UNPACK", [x], ys, "UnpackOptions", Num=n, Axis=axis)
    for y in ys:
        b.output(y)
    return b.finish()


def test_unpack_along_a_run_time_size_names_the_op_and_axis():
    """UNPACK has one output per index: along a run-time dim a clear error naming the size its
    Num fixes (LiteRT refuses any other size there); along a static axis of the same input it
    imports and runs."""
    with pytest.raises(ImportError_, match=r"UNPACK \(operator 0\): axis 1 of the input's "
                                           r"dynamic shape \(1, \?, 3\) is a run-time size.*"
                                           r"its 2 outputs \(Num\) fix that size.*give that "
                                           r"dim the static size 2 in shape_dict"):
        relay.frontend.from_tflite(_unpack(1), shape_dict={"x": (1, -1, 3)})
    _compare(_unpack(2), {"x": (1, -1, 3)},
             lambda n, r: {"x": r.standard_normal((1, n, 3)).astype("float32")}, (1, 4))


def test_reshape_to_a_static_shape_over_a_run_time_dim_is_refused():
    b = ModelBuilder()
    x = b.input("x", (1, 4, 6))
    y = b.tensor("y", (1, 24))
    b.operator("RESHAPE", [x, b.constant("s", np.array([1, 24], "int32"))], [y],
               "ReshapeOptions", NewShape=[1, 24])
    b.output(y)
    with pytest.raises(ImportError_, match=r"RESHAPE: the new shape \[1, 24\] is static but "
                                           r"the input \(1, \?, 6\) has run-time dims"):
        relay.frontend.from_tflite(b.finish(), shape_dict={"x": (1, relay.Any(), 6)})


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
def test_integer_mean_and_sum_over_a_run_time_size(dtype):
    """LiteRT's 8-bit MEAN / SUM fold the count into fixed-point multipliers: computed when the
    model runs, as LiteRT computes them (the fast H/W path's float32 multiplier; the general
    path's log2 and division; SUM's float32 bias), bit-exact at 3 sizes (20 channels: NEON's
    16-channel blocks and the rest)."""
    from tflite_qtwin import QTwin

    t = QTwin(dtype, 2)
    x = t.input("x", (1, 6, 6, 20))
    total = t.op("SUM", [x], lambda f: f.sum(axis=(1, 2), keepdims=True), "ReducerOptions",
                 params=(float(t.qp[x][0]) * 20, 0 if dtype == "int8" else 128),
                 consts=([1, 2],), KeepDims=True)
    t.finish([t.mean(x, [1, 2], True), t.mean(x, [1], True), t.mean(x, [2, 3], False), total])
    lo = -128 if dtype == "int8" else 0
    mod = _compare(t.b.finish(), {"x": (1, -1, -1, 20)},
                   lambda n, r: {"x": r.integers(lo, lo + 256, (1, n, n + 3, 20)).astype(dtype)},
                   (1, 5, 9), steps=0)
    assert _ret(mod) == [f"Tensor[(1, 1, 1, 20), {dtype}]", f"Tensor[(1, 1, ?, 20), {dtype}]",
                         f"Tensor[(1, ?), {dtype}]", f"Tensor[(1, 1, 1, 20), {dtype}]"]


def test_batch_and_sequence_both_run_time():
    """(batch, time, features) with both leading dims run-time sizes: FULLY_CONNECTED
    keep_num_dims and BATCH_MATMUL split their merged dim back by sizes read when the model
    runs (one merged dim cannot be split into two unknowns by reshape values)."""
    t = models.Net(14)
    x = t.b.input("x", (1, 5, 6), signature=(-1, -1, 6))
    h = t.fc(x, (1, 5, 6), 8)
    s = t.op("BATCH_MATMUL", [h, h], (1, 5, 5), "BatchMatMulOptions", AdjX=False, AdjY=True)
    p = t.op("SOFTMAX", [s], (1, 5, 5), "SoftmaxOptions", Beta=1.0)
    y = t.op("BATCH_MATMUL", [p, h], (1, 5, 8), "BatchMatMulOptions", AdjX=False, AdjY=False)
    t.b.output(y)
    mod = _compare(t.b.finish(), {"x": (-1, -1, 6)},
                   lambda n, r: {"x": r.standard_normal((n // 3, n, 6)).astype("float32")},
                   (3, 7, 12))
    assert str(mod["main"].ret_type) == "Tensor[(?, ?, 8), float32]"


def test_converter_reshape_by_a_packed_run_time_length_keeps_the_channels():
    """TF's converter writes EXPAND_DIMS of a run-time length as SHAPE -> STRIDED_SLICE
    (shrink) -> PACK [1, 1, T, C] -> RESHAPE: a dyn.reshape whose packed constants (the
    channels) stay static in the type, so the CONV_2D after it converts."""
    t = models.Net(15)
    x = t.b.input("x", (1, 10, 4), signature=(1, -1, 4))
    shape = t.op("SHAPE", [x], (3,), "ShapeOptions", "int32", OutType=2)
    steps = t.op("STRIDED_SLICE", [shape, t.i32([1]), t.i32([2]), t.i32([1])], (),
                 "StridedSliceOptions", "int32", BeginMask=0, EndMask=0, EllipsisMask=0,
                 NewAxisMask=0, ShrinkAxisMask=1)
    dims = t.op("PACK", [t.i32(1), t.i32(1), steps, t.i32(4)], (4,), "PackOptions", "int32",
                ValuesCount=4, Axis=0)
    e = t.op("RESHAPE", [x, dims], (1, 1, 10, 4))
    c = t.conv(e, (1, 1, 10, 4), 6, 1, 3, stride=2)
    t.b.output(t.op("SQUEEZE", [c], (1, 5, 6), "SqueezeOptions", SqueezeDims=[1]))
    mod = _compare(t.b.finish(), {"x": (1, -1, 4)},
                   lambda n, r: {"x": r.standard_normal((1, n, 4)).astype("float32")},
                   (5, 10, 13))
    assert str(mod["main"].ret_type) == "Tensor[(1, ?, 6), float32]"


def test_pools_with_a_stride_over_run_time_sizes():
    """AVERAGE_POOL_2D / MAX_POOL_2D 3x3 stride 2 SAME over run-time H, W: padded when they
    run (the average over in-bounds taps only: window sums of x over those of ones)."""
    t = models.Net(16)
    x = t.b.input("x", (1, 9, 9, 4), signature=(1, -1, -1, 4))
    pool = dict(FilterHeight=3, FilterWidth=3, StrideH=2, StrideW=2, Padding=0,
                FusedActivationFunction=0)
    t.b.output(t.op("AVERAGE_POOL_2D", [x], (1, 5, 5, 4), "Pool2DOptions", **pool))
    t.b.output(t.op("MAX_POOL_2D", [x], (1, 5, 5, 4), "Pool2DOptions", **pool))
    _compare(t.b.finish(), {"x": (1, -1, -1, 4)},
             lambda n, r: {"x": r.standard_normal((1, n, n + 1, 4)).astype("float32")},
             (4, 7, 10))


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
def test_integer_average_pool_with_a_stride_over_a_run_time_size(dtype):
    """8-bit AVERAGE_POOL_2D SAME with stride 2 over run-time H, W: padded when it runs, the
    in-bounds average rounded as LiteRT's integer kernel, bit-exact at 3 sizes."""
    from tflite_qtwin import QTwin

    t = QTwin(dtype, 3)
    x = t.input("x", (1, 6, 6, 4))
    t.finish([t.pool("avg", x, 3, 2, "SAME"), t.pool("avg", x, 2, 2, "SAME")])
    lo = -128 if dtype == "int8" else 0
    _compare(t.b.finish(), {"x": (1, -1, -1, 4)},
             lambda n, r: {"x": r.integers(lo, lo + 256, (1, n, n + 1, 4)).astype(dtype)},
             (1, 4, 7), steps=0)


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
def test_quantized_resize_bilinear_to_a_run_time_size(dtype):
    """8-bit RESIZE_BILINEAR to a size from SHAPE (half pixel) and to a fixed size of a
    run-time H / W (align_corners): TFLite's taps computed when the model runs, bit-exact."""
    lo = -128 if dtype == "int8" else 0
    mod = _compare(models.quantized_resize_model(dtype), {"x": (1, -1, -1, 4)},
                   lambda n, r: {"x": r.integers(lo, lo + 256, (1, n, n + 2, 4)).astype(dtype)},
                   (1, 4, 7), steps=0)
    assert _ret(mod) == [f"Tensor[(1, ?, ?, 4), {dtype}]", f"Tensor[(1, 5, 7, 4), {dtype}]"]


@pytest.mark.parametrize("dtype", ["float32", "int8", "uint8"])
def test_transpose_conv_to_a_run_time_output_shape(dtype):
    """TRANSPOSE_CONV SAME and VALID stride 2 to output shapes computed from SHAPE: cropped at
    LiteRT's pads computed when it runs (8-bit: bit-exact; uint8 with uint8 weights and their
    zero point)."""
    def feeds(n, r):
        if dtype == "float32":
            return {"x": r.standard_normal((1, n, n + 1, 4)).astype("float32")}
        lo = -128 if dtype == "int8" else 0
        return {"x": r.integers(lo, lo + 256, (1, n, n + 1, 4)).astype(dtype)}

    mod = _compare(models.transpose_conv_model(dtype), {"x": (1, -1, -1, 4)}, feeds, (1, 4, 7),
                   steps=0)
    assert _ret(mod) == [f"Tensor[(1, ?, ?, 3), {dtype}]"] * 2

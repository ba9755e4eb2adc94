"""Small float TFLite models with run-time sizes beyond the batch, written with ModelBuilder
(shapes stored at one size, the run-time dims -1 in the inputs' shape_signature): a text model
(sequence length), an audio 1-D conv (time) and a fully convolutional image model (H and W).
Shared by test_tflite_dynamic_dims.py; LiteRT, resized to each size, is the reference."""

from __future__ import annotations

import numpy as np

from minitvm.relay.frontend.tflite.builder import ModelBuilder


class Net:
    """ModelBuilder with one-line operators (outputs typed as declared)."""

    def __init__(self, seed: int):
        self.b = ModelBuilder()
        self.rng = np.random.default_rng(seed)

    def const(self, a, dtype=None):
        return self.b.constant(f"c{len(self.b.tensors)}", np.asarray(a, dtype))

    def w(self, *shape, scale=0.3):
        return self.const((self.rng.standard_normal(shape) * scale).astype("float32"))

    def op(self, name, ins, shape, options=None, dtype="float32", **fields):
        y = self.b.tensor(f"t{len(self.b.tensors)}", shape, dtype)
        self.b.operator(name, ins, [y], options, **fields)
        return y

    def fc(self, x, shape, units, keep=True, act=0):
        return self.op("FULLY_CONNECTED", [x, self.w(units, shape[-1]), self.w(units)],
                       tuple(shape[:-1]) + (units,), "FullyConnectedOptions",
                       FusedActivationFunction=act, KeepNumDims=keep)

    def conv(self, x, shape, cout, kh, kw, stride=1, same=True, act=1, depthwise=False):
        n, h, w, c = shape
        oh = -(-h // stride) if same else (h - kh) // stride + 1
        ow = -(-w // stride) if same else (w - kw) // stride + 1
        if depthwise:
            return self.op("DEPTHWISE_CONV_2D", [x, self.w(1, kh, kw, c), self.w(c)],
                           (n, oh, ow, c), "DepthwiseConv2DOptions", Padding=0 if same else 1,
                           StrideH=stride, StrideW=stride, DepthMultiplier=1,
                           FusedActivationFunction=act, DilationHFactor=1, DilationWFactor=1)
        return self.op("CONV_2D", [x, self.w(cout, kh, kw, c), self.w(cout)],
                       (n, oh, ow, cout), "Conv2DOptions", Padding=0 if same else 1,
                       StrideH=stride, StrideW=stride, FusedActivationFunction=act,
                       DilationHFactor=1, DilationWFactor=1)

    def i32(self, v):
        return self.const(np.array(v, "int32"))


def text_model(seq: int = 6, vocab: int = 20, dim: int = 16, heads: int = 2) -> bytes:
    """ids (1, T) int32 -> GATHER of an embedding table -> single-layer attention (FC q/k/v,
    RESHAPE [1, -1, heads, d] and TRANSPOSE to heads, BATCH_MATMUL q k^T, SOFTMAX, BATCH_MATMUL
    with v, back), CONCATENATION with the embedding, STRIDED_SLICE dropping the first token,
    PAD at the end, MEAN over the sequence, FC, SOFTMAX; and the per-token logits (1, T, 4)."""
    t = Net(11)
    d = dim // heads
    ids = t.b.input("ids", (1, seq), "int32", signature=(1, -1))
    emb = t.op("GATHER", [t.w(vocab, dim, scale=1.0), ids], (1, seq, dim), "GatherOptions",
               Axis=0)
    x = t.fc(emb, (1, seq, dim), dim)

    def heads_of(v):
        r = t.op("RESHAPE", [v, t.i32([1, -1, heads, d])], (1, seq, heads, d),
                 "ReshapeOptions", NewShape=[1, -1, heads, d])
        return t.op("TRANSPOSE", [r, t.i32([0, 2, 1, 3])], (1, heads, seq, d))

    q, k, v = (heads_of(t.fc(x, (1, seq, dim), dim)) for _ in range(3))
    s = t.op("BATCH_MATMUL", [q, k], (1, heads, seq, seq), "BatchMatMulOptions", AdjX=False,
             AdjY=True)
    p = t.op("SOFTMAX", [s], (1, heads, seq, seq), "SoftmaxOptions", Beta=float(1 / np.sqrt(d)))
    a = t.op("BATCH_MATMUL", [p, v], (1, heads, seq, d), "BatchMatMulOptions", AdjX=False,
             AdjY=False)
    a = t.op("TRANSPOSE", [a, t.i32([0, 2, 1, 3])], (1, seq, heads, d))
    a = t.op("RESHAPE", [a, t.i32([1, -1, dim])], (1, seq, dim), "ReshapeOptions",
             NewShape=[1, -1, dim])
    cat = t.op("CONCATENATION", [a, emb], (1, seq, 2 * dim), "ConcatenationOptions", Axis=2,
               FusedActivationFunction=0)
    tail = t.op("STRIDED_SLICE", [cat, t.i32([0, 1, 0]), t.i32([1, 0, 0]), t.i32([1, 1, 1])],
                (1, seq - 1, 2 * dim), "StridedSliceOptions", BeginMask=0, EndMask=6,
                EllipsisMask=0, NewAxisMask=0, ShrinkAxisMask=0)
    pad = t.op("PAD", [tail, t.i32([[0, 0], [0, 1], [0, 0]])], (1, seq, 2 * dim))
    m = t.op("MEAN", [pad, t.i32([1])], (1, 2 * dim), "ReducerOptions", KeepDims=False)
    y = t.op("SOFTMAX", [t.fc(m, (1, 2 * dim), 4, keep=False)], (1, 4), "SoftmaxOptions",
             Beta=1.0)
    tok = t.fc(pad, (1, seq, 2 * dim), 4)
    t.b.output(y)
    t.b.output(tok)
    return t.b.finish()


def audio_model(steps: int = 16, chans: int = 4) -> bytes:
    """x (1, T, C) -> EXPAND_DIMS to (1, 1, T, C) -> CONV_2D 1x3 SAME (stride 1) -> CONV_2D
    1x3 VALID stride 2 -> SQUEEZE back to (1, T', 8) -> FC per step; MEAN over time -> FC."""
    t = Net(12)
    x = t.b.input("x", (1, steps, chans), signature=(1, -1, chans))
    e = t.op("EXPAND_DIMS", [x, t.i32([1])], (1, 1, steps, chans))
    c1 = t.conv(e, (1, 1, steps, chans), 8, 1, 3)
    c2 = t.conv(c1, (1, 1, steps, 8), 8, 1, 3, stride=2, same=False)
    t2 = (steps - 3) // 2 + 1
    c3 = t.conv(c2, (1, 1, t2, 8), 8, 1, 3, stride=2, same=True)
    t3 = -(-t2 // 2)
    sq = t.op("SQUEEZE", [c3], (1, t3, 8), "SqueezeOptions", SqueezeDims=[1])
    per_step = t.fc(sq, (1, t3, 8), 3)
    m = t.op("MEAN", [sq, t.i32([1])], (1, 8), "ReducerOptions", KeepDims=False)
    t.b.output(t.fc(m, (1, 8), 5, keep=False))
    t.b.output(per_step)
    return t.b.finish()


def image_model(size: int = 12) -> bytes:
    """x (1, H, W, 3) -> CONV_2D stride 2 SAME -> DEPTHWISE 3x3 SAME -> MAX_POOL 2x2 SAME,
    AVERAGE_POOL 3x3 stride 1 SAME -> RESIZE_BILINEAR (half pixel) to the input's H and W
    (SHAPE -> STRIDED_SLICE [1:3]) and RESIZE_NEAREST to twice the pooled size (SHAPE * 2) ->
    the resized map, its MEAN over H, W, and the map with a one-pixel border cropped
    (STRIDED_SLICE with negative ends)."""
    t = Net(13)
    n, h, w = 1, size, size
    x = t.b.input("x", (n, h, w, 3), signature=(1, -1, -1, 3))
    c = t.conv(x, (n, h, w, 3), 8, 3, 3, stride=2)
    h2, w2 = -(-h // 2), -(-w // 2)
    d = t.conv(c, (n, h2, w2, 8), 8, 3, 3, act=3, depthwise=True)
    pool = dict(FilterHeight=2, FilterWidth=2, StrideH=2, StrideW=2, Padding=0,
                FusedActivationFunction=0)
    h4, w4 = -(-h2 // 2), -(-w2 // 2)
    mp = t.op("MAX_POOL_2D", [d], (n, h4, w4, 8), "Pool2DOptions", **pool)
    ap = t.op("AVERAGE_POOL_2D", [mp], (n, h4, w4, 8), "Pool2DOptions",
              **dict(pool, FilterHeight=3, FilterWidth=3, StrideH=1, StrideW=1))
    xs = t.op("SHAPE", [x], (4,), "ShapeOptions", "int32", OutType=2)
    hw = t.op("STRIDED_SLICE", [xs, t.i32([1]), t.i32([3]), t.i32([1])], (2,),
              "StridedSliceOptions", "int32", BeginMask=0, EndMask=0, EllipsisMask=0,
              NewAxisMask=0, ShrinkAxisMask=0)
    up = t.op("RESIZE_BILINEAR", [ap, hw], (n, h, w, 8), "ResizeBilinearOptions",
              AlignCorners=False, HalfPixelCenters=True)
    ps = t.op("SHAPE", [ap], (4,), "ShapeOptions", "int32", OutType=2)
    phw = t.op("STRIDED_SLICE", [ps, t.i32([1]), t.i32([3]), t.i32([1])], (2,),
               "StridedSliceOptions", "int32", BeginMask=0, EndMask=0, EllipsisMask=0,
               NewAxisMask=0, ShrinkAxisMask=0)
    two = t.op("MUL", [phw, t.i32([2])], (2,), "MulOptions", "int32",
               FusedActivationFunction=0)
    nn = t.op("RESIZE_NEAREST_NEIGHBOR", [ap, two], (n, 2 * h4, 2 * w4, 8),
              "ResizeNearestNeighborOptions", AlignCorners=False, HalfPixelCenters=False)
    m = t.op("MEAN", [nn, t.i32([1, 2])], (n, 8), "ReducerOptions", KeepDims=False)
    # a one-pixel border cropped off the run-time H and W (ends counted from the end)
    crop = t.op("STRIDED_SLICE", [up, t.i32([0, 1, 1, 0]), t.i32([0, -1, -1, 0]),
                                  t.i32([1, 1, 1, 1])], (n, h - 2, w - 2, 8),
                "StridedSliceOptions", BeginMask=9, EndMask=9, EllipsisMask=0, NewAxisMask=0,
                ShrinkAxisMask=0)
    t.b.output(up)
    t.b.output(m)
    t.b.output(crop)
    return t.b.finish()


def quantized_image_model(dtype: str = "int8", size: int = 12):
    """The image model's quantized counterpart (QTwin, as TFLite's converter writes it): conv
    stride 2 SAME (padded by the zero point), depthwise, MAX_POOL 2x2 stride 2 SAME, AVERAGE_POOL
    3x3 stride 1 SAME, RESIZE_NEAREST to a fixed 8x8 and its MEAN over H and W (a fixed count;
    ``test_integer_mean_and_sum_over_a_run_time_size`` covers run-time counts); returns the
    QTwin."""
    from tflite_qtwin import QTwin

    t = QTwin(dtype, 21)
    x = t.input("x", (1, size, size, 3), scale=1 / 64)
    c = t.conv(x, 8, 3, 2, "relu6")
    d = t.conv(c, 0, 3, 1, "relu6", depthwise=True)
    mp = t.pool("max", d, 2, 2, "SAME")
    ap = t.pool("avg", mp, 3, 1, "SAME")
    r = t.resize(ap, (8, 8), "nearest")
    t.finish([ap, t.mean(r, [1, 2], True)])
    t.b.signatures[t.b.inputs[0]] = (1, -1, -1, 3)
    return t


def quantized_text_model(dtype: str = "int8", tokens: int = 6):
    """QTwin's transformer encoder with its RESHAPEs writing -1 for the token count."""
    from tflite_qtwin import transformer_encoder

    t, _ = transformer_encoder(dtype, tokens=tokens, dim=16, heads=2, ffn=32, layers=1,
                               open_tokens=True)
    t.b.signatures[t.b.inputs[0]] = (1, -1, 16)
    return t


def _run_time_hw(b, x, i32, mult):
    """SHAPE(x)[1:3] * ``mult``: an output size LiteRT and the importer know only when the
    model runs."""
    xs = b.tensor(f"t{len(b.tensors)}", (4,), "int32")
    b.operator("SHAPE", [x], [xs], "ShapeOptions", OutType=2)
    hw = b.tensor(f"t{len(b.tensors)}", (2,), "int32")
    b.operator("STRIDED_SLICE", [xs, i32([1]), i32([3]), i32([1])], [hw], "StridedSliceOptions",
               BeginMask=0, EndMask=0, EllipsisMask=0, NewAxisMask=0, ShrinkAxisMask=0)
    out = b.tensor(f"t{len(b.tensors)}", (2,), "int32")
    b.operator("MUL", [hw, i32(mult)], [out], "MulOptions", FusedActivationFunction=0)
    return out


def quantized_resize_model(dtype: str) -> bytes:
    """8-bit RESIZE_BILINEAR (LiteRT's integer / float32 kernels) of x (1, ?, ?, 4): half pixel
    centres to (2 H, 3 W) computed by SHAPE at run time, and align_corners to a fixed 5x7 of
    the run-time H and W."""
    from tflite_qtwin import QTwin

    t = QTwin(dtype, 5)
    x = t.input("x", (1, 6, 6, 4))
    size = _run_time_hw(t.b, x, t._i32, [2, 3])
    for s, shape, align, half in ((size, (1, 12, 18, 4), False, True),
                                  (t._i32([5, 7]), (1, 5, 7, 4), True, False)):
        y = t.b.tensor(t._name("resize"), shape, dtype, quant=t.qp[x])
        t.b.operator("RESIZE_BILINEAR", [x, s], [y], "ResizeBilinearOptions",
                     AlignCorners=align, HalfPixelCenters=half)
        t.b.output(y)
    t.b.signatures[x] = (1, -1, -1, 4)
    return t.b.finish()


def transpose_conv_model(dtype: str) -> bytes:
    """TRANSPOSE_CONV of x (1, ?, ?, 4), float, int8 (QTwin's per-channel weights) or uint8
    (uint8 weights of one scale and a zero point, as LiteRT's uint8 kernel takes them), to
    output shapes computed at run time: SAME 3x3 stride 2 to (2 H, 2 W) and VALID 3x3 stride 2
    to (2 H + 1, 2 W + 1)."""
    from tflite_qtwin import QTwin

    t = QTwin(dtype, 6) if dtype != "float32" else Net(6)
    b = t.b
    i32 = t.i32 if dtype == "float32" else t._i32
    x = t.input("x", (1, 5, 5, 4)) if dtype != "float32" else b.input("x", (1, 5, 5, 4))
    hw = _run_time_hw(b, x, i32, [2, 2])
    for padding, extra in (("SAME", 0), ("VALID", 1)):
        shape = b.tensor(f"t{len(b.tensors)}", (4,), "int32")
        b.operator("CONCATENATION", [i32([1]), hw, i32([3])], [shape],
                   "ConcatenationOptions", Axis=0, FusedActivationFunction=0)
        if extra:
            grown = b.tensor(f"t{len(b.tensors)}", (4,), "int32")
            b.operator("ADD", [shape, i32([0, extra, extra, 0])], [grown], "AddOptions",
                       FusedActivationFunction=0)
            shape = grown
        n = 10 + extra
        if dtype == "float32":
            y = t.op("TRANSPOSE_CONV", [shape, t.w(3, 3, 3, 4), x, t.w(3)], (1, n, n, 3),
                     "TransposeConvOptions", Padding=0 if padding == "SAME" else 1,
                     StrideH=2, StrideW=2)
        else:
            w8 = {"w_dtype": "uint8", "w_zp": 120} if dtype == "uint8" else {}
            y = t.transpose_conv(x, 3, 3, 2, (n, n), padding, **w8)
            b.ops[-1][1][0] = shape  # (the output shape computed at run time)
        b.output(y)
    b.signatures[x] = (1, -1, -1, 4)
    return b.finish()

"""Sweep of float32 TFLite builtin operators: each one-op model (written with the flatbuffer
builder) is imported, built at opt_level 3 as imported (NHWC) and after ConvertLayout("NCHW"),
and compared with a numpy reference to 1e-4."""

from __future__ import annotations

import numpy as np
import pytest

tflite = pytest.importorskip("tflite", reason="the TFLite importer needs the `tflite` package")

from frontend_models import build_and_run  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relay  # noqa: E402
from minitvm.relay.frontend import ImportError_, OpNotImplemented  # noqa: E402
from minitvm.relay.frontend.tflite.builder import ModelBuilder  # noqa: E402

RNG = np.random.default_rng(0)


def rand(*shape, lo=-1.0, hi=1.0):
    return RNG.uniform(lo, hi, size=shape).astype("float32")


def to_nchw(mod):
    seq = tvm.transform.Sequential([relay.transform.ConvertLayout(
        {"nn.conv2d": ["NCHW", "default"], "nn.conv2d_transpose": ["NCHW", "default"]})])
    with tvm.transform.PassContext(opt_level=3):
        return seq(mod)


def check(b: ModelBuilder, feeds: dict, refs, rtol=1e-4, atol=1e-4):
    """Import, build as imported and after ConvertLayout, compare with ``refs``."""
    refs = refs if isinstance(refs, list) else [refs]
    shapes = {k: v.shape for k, v in feeds.items()}
    dtypes = {k: str(v.dtype) for k, v in feeds.items()}
    mod, params = relay.frontend.from_tflite(b.finish(), shapes, dtypes)
    for m in (mod, to_nchw(mod)):
        outs = build_and_run(m, params, feeds)
        assert len(outs) == len(refs)
        for o, r in zip(outs, refs):
            r = np.asarray(r)
            assert o.shape == r.shape, (o.shape, r.shape)
            if r.dtype.kind in "biu":
                np.testing.assert_array_equal(o, r)
            else:
                np.testing.assert_allclose(o, r, rtol=rtol, atol=atol)


def single(op, args, out, options=None, out_dtype="float32", **fields):
    """A one-op model; ``args`` are arrays (graph inputs, named a0, a1, ...), ("c", array)
    constants, or None (absent). Returns (builder, feeds)."""
    b = ModelBuilder()
    ids, feeds = [], {}
    for i, a in enumerate(args):
        if a is None:
            ids.append(-1)
        elif isinstance(a, tuple) and a[0] == "c":
            ids.append(b.constant(f"c{i}", a[1]))
        else:
            ids.append(b.input(f"a{i}", a.shape, str(a.dtype)))
            feeds[f"a{i}"] = a
    outs = out if isinstance(out, list) else [out]
    dts = out_dtype if isinstance(out_dtype, list) else [out_dtype] * len(outs)
    oids = [b.tensor(f"y{i}", s, d) for i, (s, d) in enumerate(zip(outs, dts))]
    b.operator(op, ids, oids, options, **fields)
    for o in oids:
        b.output(o)
    return b, feeds


# ------------------------------------------------------------------ numpy references
def np_pad_same(n, k, s, d):
    eff = (k - 1) * d + 1
    out = -(-n // s)
    total = max((out - 1) * s + eff - n, 0)
    return total // 2, total - total // 2


def np_conv(x, w_hwio, stride, dil, padding, groups=1):
    n, h, wd, c = x.shape
    kh, kw, ci, co = w_hwio.shape
    if padding == "SAME":
        pt, pb = np_pad_same(h, kh, stride[0], dil[0])
        pl, pr = np_pad_same(wd, kw, stride[1], dil[1])
    else:
        pt = pb = pl = pr = 0
    xp = np.pad(x, ((0, 0), (pt, pb), (pl, pr), (0, 0)))
    oh = (xp.shape[1] - (kh - 1) * dil[0] - 1) // stride[0] + 1
    ow = (xp.shape[2] - (kw - 1) * dil[1] - 1) // stride[1] + 1
    out = np.zeros((n, oh, ow, co), "float64")
    cpg, opg = c // groups, co // groups
    for g in range(groups):
        for i in range(kh):
            for j in range(kw):
                patch = xp[:, i * dil[0]:i * dil[0] + (oh - 1) * stride[0] + 1:stride[0],
                           j * dil[1]:j * dil[1] + (ow - 1) * stride[1] + 1:stride[1],
                           g * cpg:(g + 1) * cpg]
                out[..., g * opg:(g + 1) * opg] += patch @ w_hwio[i, j, :, g * opg:(g + 1) * opg]
    return out.astype("float32")


ACTS = {0: lambda v: v, 1: lambda v: np.maximum(v, 0), 2: lambda v: np.clip(v, -1, 1),
        3: lambda v: np.clip(v, 0, 6), 4: np.tanh}


# ------------------------------------------------------------------ convolutions
@pytest.mark.parametrize("pad,stride,dil,act", [(0, 1, 1, 0), (1, 2, 1, 1), (0, 2, 1, 3),
                                                (0, 1, 2, 2), (1, 1, 2, 4), (0, 3, 1, 0)])
def test_conv2d(pad, stride, dil, act):
    x, w, bias = rand(1, 9, 10, 3), rand(4, 3, 3, 3), rand(4)
    ref = np_conv(x, w.transpose(1, 2, 3, 0), (stride, stride), (dil, dil),
                  "SAME" if pad == 0 else "VALID") + bias
    shape = ref.shape
    b, f = single("CONV_2D", [x, ("c", w), ("c", bias)], shape, "Conv2DOptions", Padding=pad,
                  StrideH=stride, StrideW=stride, DilationHFactor=dil, DilationWFactor=dil,
                  FusedActivationFunction=act)
    check(b, f, ACTS[act](ref))


@pytest.mark.parametrize("mult,pad,stride", [(1, 0, 1), (2, 0, 2), (1, 1, 2), (3, 1, 1)])
def test_depthwise_conv2d(mult, pad, stride):
    c = 4
    x, w, bias = rand(1, 8, 8, c), rand(1, 3, 3, c * mult), rand(c * mult)
    ref = np_conv(x, w.reshape(3, 3, 1, c * mult), (stride, stride), (1, 1),
                  "SAME" if pad == 0 else "VALID", groups=c) + bias
    b, f = single("DEPTHWISE_CONV_2D", [x, ("c", w), ("c", bias)], ref.shape,
                  "DepthwiseConv2DOptions", Padding=pad, StrideH=stride, StrideW=stride,
                  DepthMultiplier=mult, DilationHFactor=1, DilationWFactor=1,
                  FusedActivationFunction=3)
    check(b, f, np.clip(ref, 0, 6))


@pytest.mark.parametrize("pad,stride,with_bias", [(0, 2, False), (1, 2, True), (0, 1, True)])
def test_transpose_conv(pad, stride, with_bias):
    x, w = rand(1, 4, 5, 3), rand(2, 3, 3, 3)  # weights (O, kh, kw, I)
    n, h, wd, _ = x.shape
    full = np.zeros((n, (h - 1) * stride + 3, (wd - 1) * stride + 3, 2), "float64")
    for i in range(h):
        for j in range(wd):
            full[:, i * stride:i * stride + 3, j * stride:j * stride + 3, :] += np.einsum(
                "nc,okl c->nklo".replace(" ", ""), x[:, i, j, :], w)
    if pad == 0:  # SAME
        oh, ow = h * stride, wd * stride
        th = max((h - 1) * stride + 3 - oh, 0) // 2
        tw = max((wd - 1) * stride + 3 - ow, 0) // 2
    else:
        oh, ow, th, tw = full.shape[1], full.shape[2], 0, 0
    ref = full[:, th:th + oh, tw:tw + ow, :].astype("float32")
    bias = rand(2)
    args = [("c", np.array([1, oh, ow, 2], "int32")), ("c", w), x]
    if with_bias:
        args.append(("c", bias))
        ref = ref + bias
    b, f = single("TRANSPOSE_CONV", args, ref.shape, "TransposeConvOptions", Padding=pad,
                  StrideH=stride, StrideW=stride)
    check(b, f, ref)


@pytest.mark.parametrize("keep,bias,shape", [(False, True, (2, 6)), (False, False, (2, 3, 6)),
                                             (True, True, (2, 3, 6))])
def test_fully_connected(keep, bias, shape):
    x, w, bv = rand(*shape), rand(5, 6), rand(5)
    ref = x.reshape(-1, 6) @ w.T + (bv if bias else 0)
    if keep:
        ref = ref.reshape(shape[:-1] + (5,))
    b, f = single("FULLY_CONNECTED", [x, ("c", w), ("c", bv) if bias else None], ref.shape,
                  "FullyConnectedOptions", FusedActivationFunction=1, KeepNumDims=keep)
    check(b, f, np.maximum(ref, 0))


# ------------------------------------------------------------------ pooling, reductions
@pytest.mark.parametrize("op", ["AVERAGE_POOL_2D", "MAX_POOL_2D"])
@pytest.mark.parametrize("pad", [0, 1])
def test_pool(op, pad):
    x = rand(1, 7, 7, 3)
    k, s = 3, 2
    if pad == 0:
        pt, pb = np_pad_same(7, k, s, 1)
    else:
        pt = pb = 0
    oh = -(-7 // s) if pad == 0 else (7 - k) // s + 1
    fill = -np.inf if op == "MAX_POOL_2D" else np.nan
    xp = np.pad(x, ((0, 0), (pt, pb), (pt, pb), (0, 0)), constant_values=fill)
    win = np.stack([xp[:, i:i + (oh - 1) * s + 1:s, j:j + (oh - 1) * s + 1:s, :]
                    for i in range(k) for j in range(k)])
    ref = np.max(win, 0) if op == "MAX_POOL_2D" else np.nanmean(win, 0)
    b, f = single(op, [x], ref.shape, "Pool2DOptions", Padding=pad, StrideH=s, StrideW=s,
                  FilterHeight=k, FilterWidth=k, FusedActivationFunction=0)
    check(b, f, ref.astype("float32"))


@pytest.mark.parametrize("op,fn", [("MEAN", np.mean), ("SUM", np.sum), ("REDUCE_MAX", np.max),
                                   ("REDUCE_MIN", np.min), ("REDUCE_PROD", np.prod)])
@pytest.mark.parametrize("keep", [False, True])
def test_reduce(op, fn, keep):
    x = rand(2, 3, 4, lo=0.5, hi=1.5)
    ref = fn(x, axis=(1, -1), keepdims=keep)
    b, f = single(op, [x, ("c", np.array([1, -1], "int32"))], ref.shape, "ReducerOptions",
                  KeepDims=keep)
    check(b, f, ref)


# ------------------------------------------------------------------ elementwise
@pytest.mark.parametrize("op,fn,opts", [
    ("ADD", np.add, "AddOptions"), ("SUB", np.subtract, "SubOptions"),
    ("MUL", np.multiply, "MulOptions"), ("DIV", np.divide, "DivOptions")])
@pytest.mark.parametrize("act", [0, 1, 3])
def test_binary_fused(op, fn, opts, act):
    x, y = rand(2, 1, 4, 3, lo=0.5, hi=4), rand(3, 1, 3, lo=0.5, hi=2)
    ref = ACTS[act](fn(x, y))
    b, f = single(op, [x, y], ref.shape, opts, FusedActivationFunction=act)
    check(b, f, ref)


@pytest.mark.parametrize("op,fn", [
    ("SQUARED_DIFFERENCE", lambda a, b: (a - b) ** 2), ("MAXIMUM", np.maximum),
    ("MINIMUM", np.minimum), ("POW", lambda a, b: np.power(np.abs(a) + 0.5, b)),
    ("FLOOR_DIV", np.floor_divide), ("FLOOR_MOD", np.mod)])
def test_binary_other(op, fn):
    x, y = rand(2, 3, 4), rand(1, 4, lo=0.5, hi=2)
    if op == "POW":
        x = np.abs(x) + 0.5
        ref = np.power(x, y)
    else:
        ref = fn(x, y)
    b, f = single(op, [x, ("c", y)], ref.shape)
    check(b, f, ref.astype("float32"))


@pytest.mark.parametrize("op,fn", [
    ("LESS", np.less), ("GREATER", np.greater), ("EQUAL", np.equal),
    ("NOT_EQUAL", np.not_equal), ("LESS_EQUAL", np.less_equal),
    ("GREATER_EQUAL", np.greater_equal)])
def test_compare(op, fn):
    x = RNG.integers(0, 3, (2, 4)).astype("float32")
    y = RNG.integers(0, 3, (4,)).astype("float32")
    b, f = single(op, [x, y], (2, 4), out_dtype="bool")
    check(b, f, fn(x, y))


def _erf(v):
    from math import erf
    return np.vectorize(erf)(v.astype("float64"))


UNARY = {
    "LOGISTIC": lambda v: 1 / (1 + np.exp(-v)), "TANH": np.tanh, "RELU": lambda v: np.maximum(v, 0),
    "RELU6": lambda v: np.clip(v, 0, 6), "RELU_N1_TO_1": lambda v: np.clip(v, -1, 1),
    "RELU_0_TO_1": lambda v: np.clip(v, 0, 1),
    "HARD_SWISH": lambda v: v * np.clip(v + 3, 0, 6) / 6, "ELU": lambda v: np.where(
        v > 0, v, np.exp(v) - 1), "EXP": np.exp, "LOG": lambda v: np.log(np.abs(v) + 0.1),
    "SQRT": lambda v: np.sqrt(np.abs(v)), "RSQRT": lambda v: 1 / np.sqrt(np.abs(v) + 0.1),
    "SQUARE": np.square, "ABS": np.abs, "NEG": np.negative, "SIN": np.sin, "COS": np.cos,
    "FLOOR": np.floor, "CEIL": np.ceil, "ROUND": np.round, "SIGN": np.sign,
}
POSITIVE = {"LOG": 0.1, "SQRT": 0.0, "RSQRT": 0.1}


@pytest.mark.parametrize("op", sorted(UNARY))
def test_unary(op):
    x = rand(2, 3, 5, lo=-4, hi=4)
    if op in POSITIVE:
        x = np.abs(x) + POSITIVE[op]
    ref = UNARY[op](np.abs(x) - POSITIVE[op] if op in POSITIVE else x)
    b, f = single(op, [x], x.shape)
    check(b, f, ref.astype("float32"))


@pytest.mark.parametrize("approx", [False, True])
def test_gelu(approx):
    x = rand(2, 7, lo=-3, hi=3)
    if approx:
        ref = 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))
    else:
        ref = 0.5 * x * (1 + _erf(x / np.sqrt(2)))
    b, f = single("GELU", [x], x.shape, "GeluOptions", Approximate=approx)
    check(b, f, ref.astype("float32"))


def test_leaky_relu_prelu():
    x = rand(1, 3, 3, 4)
    b, f = single("LEAKY_RELU", [x], x.shape, "LeakyReluOptions", Alpha=0.2)
    check(b, f, np.where(x > 0, x, 0.2 * x))
    alpha = rand(1, 1, 4, lo=0, hi=0.5)
    b, f = single("PRELU", [x, ("c", alpha)], x.shape)
    check(b, f, np.where(x > 0, x, alpha * x))


@pytest.mark.parametrize("beta", [1.0, 0.5])
def test_softmax(beta):
    x = rand(2, 3, 6, lo=-3, hi=3)
    e = np.exp(beta * x - np.max(beta * x, -1, keepdims=True))
    b, f = single("SOFTMAX", [x], x.shape, "SoftmaxOptions", Beta=beta)
    check(b, f, e / e.sum(-1, keepdims=True))


def test_log_softmax():
    x = rand(2, 6, lo=-3, hi=3)
    ref = x - np.max(x, -1, keepdims=True)
    ref = ref - np.log(np.exp(ref).sum(-1, keepdims=True))
    b, f = single("LOG_SOFTMAX", [x], x.shape)
    check(b, f, ref)


# ------------------------------------------------------------------ shape manipulation
@pytest.mark.parametrize("how", ["attr", "input", "both", "neither"])
def test_reshape(how):
    x = rand(2, 3, 4)
    new = [4, -1, 2]
    args = [x] if how in ("attr", "neither") else [x, ("c", np.array(new, "int32"))]
    if how == "neither":
        b, f = single("RESHAPE", args, (4, 3, 2))
        check(b, f, x.reshape(4, 3, 2))
        return
    fields = {"NewShape": new} if how != "input" else {}
    b, f = single("RESHAPE", args, (4, 3, 2), "ReshapeOptions" if fields else None, **fields)
    check(b, f, x.reshape(4, 3, 2))


def test_squeeze_expand_transpose():
    x = rand(1, 3, 1, 4)
    b, f = single("SQUEEZE", [x], (3, 1, 4), "SqueezeOptions", SqueezeDims=[0])
    check(b, f, x.reshape(3, 1, 4))
    b, f = single("SQUEEZE", [x], (1, 3, 4), "SqueezeOptions", SqueezeDims=[-2])
    check(b, f, x.reshape(1, 3, 4))
    b, f = single("SQUEEZE", [x], (3, 4))
    check(b, f, x.reshape(3, 4))
    b, f = single("EXPAND_DIMS", [x, ("c", np.array([-1], "int32"))], (1, 3, 1, 4, 1))
    check(b, f, x[..., None])
    b, f = single("TRANSPOSE", [x, ("c", np.array([3, 0, 2, 1], "int32"))], (4, 1, 1, 3))
    check(b, f, x.transpose(3, 0, 2, 1))


def test_concat_pack_unpack():
    x, y = rand(2, 3, 4), rand(2, 1, 4)
    b, f = single("CONCATENATION", [x, y], (2, 4, 4), "ConcatenationOptions", Axis=-2,
                  FusedActivationFunction=1)
    check(b, f, np.maximum(np.concatenate([x, y], 1), 0))
    z = rand(2, 3, 4)
    b, f = single("PACK", [x, z], (2, 3, 2, 4), "PackOptions", Axis=2, ValuesCount=2)
    check(b, f, np.stack([x, z], 2))
    b, f = single("UNPACK", [x], [(2, 4)] * 3, "UnpackOptions", Axis=1, Num=3)
    check(b, f, [x[:, i] for i in range(3)])


def test_split_splitv():
    x = rand(2, 6, 4)
    b, f = single("SPLIT", [("c", np.array(1, "int32")), x], [(2, 2, 4)] * 3, "SplitOptions",
                  NumSplits=3)
    check(b, f, np.split(x, 3, 1))
    b, f = single("SPLIT_V", [x, ("c", np.array([1, -1, 2], "int32")),
                              ("c", np.array(1, "int32"))], [(2, 1, 4), (2, 3, 4), (2, 2, 4)],
                  "SplitVOptions", NumSplits=3)
    check(b, f, np.split(x, [1, 4], 1))


def test_slice():
    x = rand(3, 5, 4)
    b, f = single("SLICE", [x, ("c", np.array([1, 0, 1], "int32")),
                            ("c", np.array([2, -1, 2], "int32"))], (2, 5, 2))
    check(b, f, x[1:3, :, 1:3])


SS_CASES = [  # begin, end, strides, masks(begin, end, ellipsis, new_axis, shrink), numpy index
    ([1, 0, 0], [3, 4, 4], [1, 2, 1], (0, 0, 0, 0, 0), (slice(1, 3), slice(0, 4, 2))),
    ([1, 0, 3], [0, 4, 0], [1, 1, -1], (1, 5, 0, 0, 0), (slice(None), slice(0, 4),
                                                         slice(3, None, -1))),
    ([1, 0, 0], [2, 5, 4], [1, 1, 1], (0, 0, 0, 0, 1), (1,)),
    ([0, 2], [0, 3], [1, 1], (0, 0, 1, 0, 2), (Ellipsis, 2)),
    ([0, 0, 1], [0, 0, 3], [1, 1, 1], (1, 1, 0, 2, 0), (slice(None), None, slice(1, 3))),
    ([-2, 0, 0], [-1, 0, 0], [1, 1, 1], (6, 6, 0, 0, 0), (slice(-2, -1),)),
]


@pytest.mark.parametrize("case", range(len(SS_CASES)))
def test_strided_slice(case):
    begin, end, strides, (bm, em, elm, nm, sm), index = SS_CASES[case]
    x = rand(4, 5, 4)
    ref = x[index]
    b, f = single("STRIDED_SLICE", [x, ("c", np.array(begin, "int32")),
                                    ("c", np.array(end, "int32")),
                                    ("c", np.array(strides, "int32"))], ref.shape,
                  "StridedSliceOptions", BeginMask=bm, EndMask=em, EllipsisMask=elm,
                  NewAxisMask=nm, ShrinkAxisMask=sm)
    check(b, f, ref)


def test_pads():
    x = rand(1, 3, 4, 2)
    p = np.array([[0, 0], [1, 2], [2, 1], [0, 0]], "int32")
    b, f = single("PAD", [x, ("c", p)], (1, 6, 7, 2))
    check(b, f, np.pad(x, p))
    b, f = single("PADV2", [x, ("c", p), ("c", np.array([1.5], "float32"))], (1, 6, 7, 2))
    check(b, f, np.pad(x, p, constant_values=1.5))
    p1 = np.array([[0, 0], [1, 2], [2, 1], [0, 0]], "int32")
    for mode, np_mode in ((0, "reflect"), (1, "symmetric")):
        b, f = single("MIRROR_PAD", [x, ("c", p1)], (1, 6, 7, 2), "MirrorPadOptions", Mode=mode)
        check(b, f, np.pad(x, p1, mode=np_mode))


def test_gather_tile_broadcast():
    x = rand(4, 5, 3)
    idx = np.array([[3, 0], [1, 1]], "int32")
    b, f = single("GATHER", [x, ("c", idx)], (4, 2, 2, 3), "GatherOptions", Axis=1)
    check(b, f, np.take(x, idx, 1))
    ind = np.array([[1, 2], [3, 0], [0, 4]], "int32")
    b, f = single("GATHER_ND", [x, ("c", ind)], (3, 3))
    check(b, f, x[ind[:, 0], ind[:, 1]])
    b, f = single("TILE", [x, ("c", np.array([1, 2, 3], "int32"))], (4, 10, 9))
    check(b, f, np.tile(x, (1, 2, 3)))
    y = rand(5, 1)
    b, f = single("BROADCAST_TO", [y, ("c", np.array([2, 5, 3], "int32"))], (2, 5, 3))
    check(b, f, np.broadcast_to(y, (2, 5, 3)))


@pytest.mark.parametrize("op,opts", [("RESIZE_BILINEAR", "ResizeBilinearOptions"),
                                     ("RESIZE_NEAREST_NEIGHBOR",
                                      "ResizeNearestNeighborOptions")])
@pytest.mark.parametrize("align,half", [(False, False), (True, False), (False, True)])
def test_resize(op, opts, align, half):
    x = rand(1, 3, 4, 2)
    oh, ow = 6, 7

    def src(o, n_in, n_out):
        if align and n_out > 1:
            return o * (n_in - 1) / (n_out - 1)
        if half:
            return (o + 0.5) * n_in / n_out - (0.5 if op == "RESIZE_BILINEAR" else 0.0)
        return o * n_in / n_out

    if op == "RESIZE_NEAREST_NEIGHBOR":
        def near(o, n_in, n_out):
            s = src(o, n_in, n_out)
            v = int(np.floor(s + 0.5)) if align else int(np.floor(s))  # std::round
            return min(max(v, 0), n_in - 1)
        ri = [near(i, 3, oh) for i in range(oh)]
        ci = [near(j, 4, ow) for j in range(ow)]
        ref = x[:, ri][:, :, ci]
    else:
        ref = np.zeros((1, oh, ow, 2), "float64")
        for i in range(oh):
            sy = max(src(i, 3, oh), 0.0)
            y0 = min(int(np.floor(sy)), 2)
            y1, dy = min(y0 + 1, 2), sy - y0
            for j in range(ow):
                sx = max(src(j, 4, ow), 0.0)
                x0 = min(int(np.floor(sx)), 3)
                x1, dx = min(x0 + 1, 3), sx - x0
                ref[:, i, j] = (x[:, y0, x0] * (1 - dy) * (1 - dx) + x[:, y0, x1] * (1 - dy) * dx
                                + x[:, y1, x0] * dy * (1 - dx) + x[:, y1, x1] * dy * dx)
    b, f = single(op, [x, ("c", np.array([oh, ow], "int32"))], (1, oh, ow, 2), opts,
                  AlignCorners=align, HalfPixelCenters=half)
    check(b, f, ref.astype("float32"))


def test_space_depth():
    x = rand(1, 4, 6, 3)
    ref = x.reshape(1, 2, 2, 3, 2, 3).transpose(0, 1, 3, 2, 4, 5).reshape(1, 2, 3, 12)
    b, f = single("SPACE_TO_DEPTH", [x], ref.shape, "SpaceToDepthOptions", BlockSize=2)
    check(b, f, ref)
    b, f = single("DEPTH_TO_SPACE", [ref], x.shape, "DepthToSpaceOptions", BlockSize=2)
    check(b, f, x)


@pytest.mark.parametrize("adj_x,adj_y", [(False, False), (True, False), (False, True),
                                         (True, True)])
def test_batch_matmul(adj_x, adj_y):
    a, bb = rand(2, 3, 4, 5), rand(2, 3, 5, 6)
    a_in = np.swapaxes(a, -1, -2).copy() if adj_x else a
    b_in = np.swapaxes(bb, -1, -2).copy() if adj_y else bb
    b, f = single("BATCH_MATMUL", [a_in, b_in], (2, 3, 4, 6), "BatchMatMulOptions", AdjX=adj_x,
                  AdjY=adj_y)
    check(b, f, a @ bb)


def test_batch_matmul_broadcast():
    a, bb = rand(2, 3, 4, 5), rand(5, 6)
    b, f = single("BATCH_MATMUL", [a, ("c", bb)], (2, 3, 4, 6), "BatchMatMulOptions")
    check(b, f, a @ bb)


def test_l2norm_lrn():
    x = rand(1, 3, 3, 8)
    b, f = single("L2_NORMALIZATION", [x], x.shape, "L2NormOptions")
    check(b, f, x / np.sqrt(np.maximum((x * x).sum(-1, keepdims=True), 1e-12)))
    r, bias, alpha, beta = 2, 1.0, 0.5, 0.75
    sq = np.pad(x * x, ((0, 0), (0, 0), (0, 0), (r, r)))
    s = np.stack([sq[..., c:c + 2 * r + 1].sum(-1) for c in range(8)], -1)
    b, f = single("LOCAL_RESPONSE_NORMALIZATION", [x], x.shape,
                  "LocalResponseNormalizationOptions", Radius=r, Bias=bias, Alpha=alpha,
                  Beta=beta)
    check(b, f, x / (bias + alpha * s) ** beta)


def test_arg_cast_shape_fill():
    x = rand(2, 5, 3)
    b, f = single("ARG_MAX", [x, ("c", np.array([1], "int32"))], (2, 3), "ArgMaxOptions",
                  out_dtype="int64", OutputType=4)
    check(b, f, np.argmax(x, 1))
    b, f = single("ARG_MIN", [x, ("c", np.array(-1, "int32"))], (2, 5), "ArgMinOptions",
                  out_dtype="int32", OutputType=2)
    check(b, f, np.argmin(x, -1).astype("int32"))
    b, f = single("CAST", [x * 5], (2, 5, 3), out_dtype="int32")
    check(b, f, (x * 5).astype("int32"))
    b, f = single("SHAPE", [x], (3,), "ShapeOptions", out_dtype="int32", OutType=2)
    check(b, f, np.array([2, 5, 3], "int32"))
    b, f = single("FILL", [("c", np.array([2, 3], "int32")), ("c", np.array(2.5, "float32"))],
                  (2, 3))
    mod, _ = relay.frontend.from_tflite(b.finish())
    out = build_and_run(mod, {}, {})[0]
    np.testing.assert_allclose(out, np.full((2, 3), 2.5, "float32"))
    b, f = single("ZEROS_LIKE", [x], x.shape)
    check(b, f, np.zeros_like(x))


@pytest.mark.parametrize("op", ["SELECT", "SELECT_V2"])
def test_select(op):
    c = RNG.integers(0, 2, (2, 4)).astype("bool")
    x, y = rand(2, 4), rand(2, 4) if op == "SELECT" else rand(1, 4)
    b, f = single(op, [c, x, y], (2, 4))
    check(b, f, np.where(c, x, y))


def test_logical():
    a = RNG.integers(0, 2, (3, 4)).astype("bool")
    c = RNG.integers(0, 2, (3, 4)).astype("bool")
    for op, fn in (("LOGICAL_AND", np.logical_and), ("LOGICAL_OR", np.logical_or)):
        b, f = single(op, [a, c], (3, 4), out_dtype="bool")
        check(b, f, fn(a, c))
    b, f = single("LOGICAL_NOT", [a], (3, 4), out_dtype="bool")
    check(b, f, ~a)


def test_float16_weights_dequantize():
    """The common mobile pattern: float16 weights, DEQUANTIZE to float32, then CONV_2D."""
    b = ModelBuilder()
    x = b.input("x", (1, 5, 5, 2))
    w16 = rand(3, 3, 3, 2).astype("float16")
    wq = b.constant("w16", w16)
    w = b.tensor("w", (3, 3, 3, 2))
    b.operator("DEQUANTIZE", [wq], [w])
    y = b.tensor("y", (1, 5, 5, 3))
    b.operator("CONV_2D", [x, w, -1], [y], "Conv2DOptions", Padding=0, StrideH=1, StrideW=1,
               DilationHFactor=1, DilationWFactor=1, FusedActivationFunction=0)
    b.output(y)
    xv = rand(1, 5, 5, 2)
    ref = np_conv(xv, w16.astype("float32").transpose(1, 2, 3, 0), (1, 1), (1, 1), "SAME")
    check(b, {"x": xv}, ref)


def test_multiple_outputs():
    b = ModelBuilder()
    x = b.input("x", (2, 3))
    y, z = b.tensor("y", (2, 3)), b.tensor("z", (2, 3))
    b.operator("RELU", [x], [y])
    b.operator("TANH", [y], [z])
    b.output(z)
    b.output(y)
    xv = rand(2, 3)
    check(b, {"x": xv}, [np.tanh(np.maximum(xv, 0)), np.maximum(xv, 0)])


def test_errors():
    b, _ = single("HASHTABLE_LOOKUP", [rand(2, 3), ("c", np.array(0, "int32"))], (2, 3))
    b.operator("WHILE", [0], [1])
    b.operator("RFFT2D", [1], [0])
    with pytest.raises(OpNotImplemented, match="HASHTABLE_LOOKUP, RFFT2D, WHILE"):
        relay.frontend.from_tflite(b.finish())
    with pytest.raises(ImportError_, match="TFL3"):
        relay.frontend.from_tflite(b"\x10\x00\x00\x00TFL" + b"\x00" * 30)


def test_int8_weights_dequantize_per_channel():
    """int8 per-channel weights behind DEQUANTIZE feeding a float FULLY_CONNECTED."""
    b = ModelBuilder()
    x = b.input("x", (2, 6))
    wq = RNG.integers(-127, 128, (4, 6)).astype("int8")
    scale, zp = np.array([0.01, 0.02, 0.005, 0.03], "float32"), np.array([0, 1, -2, 3])
    wc = b.constant("wq", wq, quant=(scale, zp, 0))
    w = b.tensor("w", (4, 6))
    b.operator("DEQUANTIZE", [wc], [w])
    y = b.tensor("y", (2, 4))
    b.operator("FULLY_CONNECTED", [x, w, -1], [y], "FullyConnectedOptions",
               FusedActivationFunction=0)
    b.output(y)
    xv = rand(2, 6)
    wf = (wq.astype("float32") - zp[:, None]) * scale[:, None]
    check(b, {"x": xv}, xv @ wf.T)


def test_quantize_dequantize_pair():
    b = ModelBuilder()
    x = b.input("x", (3, 5))
    q = b.tensor("q", (3, 5), "uint8", quant=(0.05, 128))
    y = b.tensor("y", (3, 5))
    b.operator("QUANTIZE", [x], [q])
    b.operator("DEQUANTIZE", [q], [y])
    b.output(y)
    xv = rand(3, 5, lo=-8, hi=8)
    qv = np.clip(np.round(xv / 0.05) + 128, 0, 255)
    check(b, {"x": xv}, ((qv - 128) * 0.05).astype("float32"))


def test_quantized_operator_without_input_parameters_is_a_clear_error():
    b = ModelBuilder()
    x = b.input("x", (1, 4, 4, 2), "int8")
    w = b.constant("w", np.ones((3, 1, 1, 2), "int8"), quant=(0.1, 0))
    y = b.tensor("y", (1, 4, 4, 3), "int8", quant=(0.2, 0))
    b.operator("CONV_2D", [x, w, -1], [y], "Conv2DOptions", Padding=0, StrideH=1, StrideW=1,
               DilationHFactor=1, DilationWFactor=1)
    b.output(y)
    with pytest.raises(ImportError_, match="CONV_2D: input tensor 'x' of an operator on "
                                           "quantized tensors has no quantization parameters"):
        relay.frontend.from_tflite(b.finish())


def test_space_batch_nd():
    x = rand(1, 4, 6, 2)
    bs, pads = np.array([2, 2], "int32"), np.array([[0, 0], [1, 1]], "int32")
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (0, 0)))  # (1, 4, 8, 2)
    s2b = xp.reshape(1, 2, 2, 4, 2, 2).transpose(2, 4, 0, 1, 3, 5).reshape(4, 2, 4, 2)
    b, f = single("SPACE_TO_BATCH_ND", [x, ("c", bs), ("c", pads)], s2b.shape)
    check(b, f, s2b)
    b, f = single("BATCH_TO_SPACE_ND", [s2b, ("c", bs), ("c", pads)], x.shape)
    check(b, f, x)


def test_reverse_addn_cumsum_onehot():
    x, y, z = rand(2, 3, 4), rand(2, 3, 4), rand(2, 3, 4)
    b, f = single("REVERSE_V2", [x, ("c", np.array([1], "int32"))], x.shape)
    check(b, f, x[:, ::-1])
    b, f = single("ADD_N", [x, y, z], x.shape)
    check(b, f, x + y + z)
    for excl, rev in ((False, False), (True, False), (False, True)):
        ref = np.flip(x, 2) if rev else x
        ref = np.cumsum(ref, 2) - (ref if excl else 0)
        ref = np.flip(ref, 2) if rev else ref
        b, f = single("CUMSUM", [x, ("c", np.array(-1, "int32"))], x.shape, "CumsumOptions",
                      Exclusive=excl, Reverse=rev)
        check(b, f, ref)
    idx = np.array([[0, 2], [1, 3]], "int32")
    b, f = single("ONE_HOT", [idx, ("c", np.array(4, "int32")), ("c", np.array(2.0, "float32")),
                              ("c", np.array(-1.0, "float32"))], (2, 2, 4), "OneHotOptions",
                  Axis=-1)
    check(b, f, np.where(np.eye(4)[idx] > 0, 2.0, -1.0).astype("float32"))


def test_topk_embedding_scatter_range_rank():
    x = rand(3, 7)
    b, f = single("TOPK_V2", [x, ("c", np.array(3, "int32"))], [(3, 3), (3, 3)],
                  out_dtype=["float32", "int32"])
    order = np.argsort(-x, -1)[:, :3].astype("int32")
    check(b, f, [np.take_along_axis(x, order, -1), order])
    table, ids = rand(10, 4), np.array([[3, 9], [0, 3]], "int32")
    b, f = single("EMBEDDING_LOOKUP", [ids, ("c", table)], (2, 2, 4))
    check(b, f, table[ids])
    ind = np.array([[1], [3], [1]], "int32")
    upd = rand(3, 4)
    ref = np.zeros((5, 4), "float32")
    np.add.at(ref, ind[:, 0], upd)
    b, f = single("SCATTER_ND", [("c", ind), upd, ("c", np.array([5, 4], "int32"))], (5, 4))
    check(b, f, ref)
    b, f = single("RANGE", [("c", np.array(1, "int32")), ("c", np.array(10, "int32")),
                            ("c", np.array(3, "int32"))], (3,), out_dtype="int32")
    mod, _ = relay.frontend.from_tflite(b.finish())
    np.testing.assert_array_equal(build_and_run(mod, {}, {})[0], np.array([1, 4, 7], "int32"))


def test_mobile_block_layout_conversion():
    """A mobile-style chain (conv, pad, depthwise, squeeze-excite mean/mul, resize, transpose
    conv, concat, depth_to_space, hard-swish, pool, FC): NCHW after ConvertLayout matches the
    imported NHWC program, and every conv ends up NCHW."""
    b = ModelBuilder()
    x = b.input("x", (1, 8, 8, 3))

    def t(name, shape):
        return b.tensor(name, shape)

    c1 = t("c1", (1, 8, 8, 8))
    b.operator("CONV_2D", [x, b.constant("w1", rand(8, 3, 3, 3)), b.constant("b1", rand(8))],
               [c1], "Conv2DOptions", Padding=0, StrideH=1, StrideW=1, DilationHFactor=1,
               DilationWFactor=1, FusedActivationFunction=3)
    p1 = t("p1", (1, 10, 10, 8))
    b.operator("PAD", [c1, b.constant("pads", np.array([[0, 0], [1, 1], [1, 1], [0, 0]],
                                                       "int32"))], [p1])
    d1 = t("d1", (1, 4, 4, 8))
    b.operator("DEPTHWISE_CONV_2D", [p1, b.constant("dw", rand(1, 3, 3, 8)), -1], [d1],
               "DepthwiseConv2DOptions", Padding=1, StrideH=2, StrideW=2, DepthMultiplier=1,
               DilationHFactor=1, DilationWFactor=1, FusedActivationFunction=0)
    m1 = t("m1", (1, 1, 1, 8))
    b.operator("MEAN", [d1, b.constant("ax", np.array([1, 2], "int32"))], [m1],
               "ReducerOptions", KeepDims=True)
    s1 = t("s1", (1, 1, 1, 8))
    b.operator("LOGISTIC", [m1], [s1])
    e1 = t("e1", (1, 4, 4, 8))
    b.operator("MUL", [d1, s1], [e1], "MulOptions", FusedActivationFunction=0)
    r1 = t("r1", (1, 8, 8, 8))
    b.operator("RESIZE_BILINEAR", [e1, b.constant("sz", np.array([8, 8], "int32"))], [r1],
               "ResizeBilinearOptions", AlignCorners=False, HalfPixelCenters=True)
    u1 = t("u1", (1, 8, 8, 4))
    b.operator("TRANSPOSE_CONV", [b.constant("os", np.array([1, 8, 8, 4], "int32")),
                                  b.constant("tw", rand(4, 3, 3, 8)), r1], [u1],
               "TransposeConvOptions", Padding=0, StrideH=1, StrideW=1)
    k1 = t("k1", (1, 8, 8, 12))
    b.operator("CONCATENATION", [u1, c1], [k1], "ConcatenationOptions", Axis=3,
               FusedActivationFunction=0)
    h1 = t("h1", (1, 8, 8, 12))
    b.operator("HARD_SWISH", [k1], [h1])
    q1 = t("q1", (1, 4, 4, 12))
    b.operator("AVERAGE_POOL_2D", [h1], [q1], "Pool2DOptions", Padding=0, StrideH=2,
               StrideW=2, FilterHeight=2, FilterWidth=2, FusedActivationFunction=0)
    z1 = t("z1", (1, 8, 8, 3))
    b.operator("DEPTH_TO_SPACE", [q1], [z1], "DepthToSpaceOptions", BlockSize=2)
    f1 = t("f1", (1, 5))
    b.operator("FULLY_CONNECTED", [z1, b.constant("fw", rand(5, 192)), -1], [f1],
               "FullyConnectedOptions", FusedActivationFunction=0)
    b.output(f1)
    mod, params = relay.frontend.from_tflite(b.finish())
    conv = to_nchw(mod)
    text = conv.astext()
    assert 'data_layout="NHWC"' not in text
    xv = {"x": rand(1, 8, 8, 3)}
    a = build_and_run(mod, params, xv)[0]
    c = build_and_run(conv, params, xv)[0]
    assert a.shape == (1, 5)
    np.testing.assert_allclose(c, a, rtol=1e-4, atol=1e-4)


def test_dynamic_range_int8_weights():
    """Dynamic-range quantized models keep int8 weights (per channel) inside float ops."""
    b = ModelBuilder()
    x = b.input("x", (1, 5, 5, 2))
    wq = RNG.integers(-127, 128, (3, 3, 3, 2)).astype("int8")
    scale = np.array([0.01, 0.02, 0.015], "float32")
    w = b.constant("wq", wq, quant=(scale, np.zeros(3, "int64"), 0))
    y = b.tensor("y", (1, 5, 5, 3))
    bias = rand(3)
    b.operator("CONV_2D", [x, w, b.constant("bias", bias)], [y], "Conv2DOptions", Padding=0,
               StrideH=1, StrideW=1, DilationHFactor=1, DilationWFactor=1,
               FusedActivationFunction=0)
    b.output(y)
    xv = rand(1, 5, 5, 2)
    wf = wq.astype("float32") * scale[:, None, None, None]
    check(b, {"x": xv}, np_conv(xv, wf.transpose(1, 2, 3, 0), (1, 1), (1, 1), "SAME") + bias)


def test_reshape_computed_shape_and_constant_output():
    """SHAPE -> STRIDED_SLICE -> PACK -> RESHAPE folds to a constant shape; a model output that
    is a constant tensor is returned as such."""
    b = ModelBuilder()
    x = b.input("x", (2, 3, 4))
    sh = b.tensor("sh", (3,), "int32")
    b.operator("SHAPE", [x], [sh], "ShapeOptions", OutType=2)
    n = b.tensor("n", (), "int32")
    b.operator("STRIDED_SLICE", [sh, b.constant("b0", np.array([0], "int32")),
                                 b.constant("e0", np.array([1], "int32")),
                                 b.constant("s0", np.array([1], "int32"))], [n],
               "StridedSliceOptions", BeginMask=0, EndMask=0, EllipsisMask=0, NewAxisMask=0,
               ShrinkAxisMask=1)
    shp = b.tensor("shp", (2,), "int32")
    b.operator("PACK", [n, b.constant("m1", np.array(-1, "int32"))], [shp], "PackOptions",
               Axis=0, ValuesCount=2)
    y = b.tensor("y", (2, 12))
    b.operator("RESHAPE", [x, shp], [y])
    b.output(y)
    b.output(b.constant("k", np.array([1.0, 2.0], "float32")))
    xv = rand(2, 3, 4)
    check(b, {"x": xv}, [xv.reshape(2, 12), np.array([1.0, 2.0], "float32")])


def test_grouped_conv2d():
    x, w = rand(1, 6, 6, 4), rand(6, 3, 3, 2)  # 2 groups of 2 input channels
    ref = np_conv(x, w.transpose(1, 2, 3, 0), (1, 1), (1, 1), "SAME", groups=2)
    b, f = single("CONV_2D", [x, ("c", w), None], ref.shape, "Conv2DOptions", Padding=0,
                  StrideH=1, StrideW=1, DilationHFactor=1, DilationWFactor=1,
                  FusedActivationFunction=0)
    check(b, f, ref)


def test_atan2_any_all():
    x, y = rand(3, 4), rand(3, 4)
    b, f = single("ATAN2", [x, y], (3, 4))
    check(b, f, np.arctan2(x, y))
    m = RNG.integers(0, 2, (3, 4)).astype("bool")
    for op, fn in (("REDUCE_ANY", np.any), ("REDUCE_ALL", np.all)):
        b, f = single(op, [m, ("c", np.array([1], "int32"))], (3,), "ReducerOptions",
                      out_dtype="bool", KeepDims=False)
        check(b, f, fn(m, 1))


def test_multiple_subgraphs():
    """Subgraph 0 is the model; further subgraphs (control-flow bodies) are only reached
    through ops like WHILE/IF, which are reported as unsupported."""
    b = ModelBuilder()
    x = b.input("x", (2, 3))
    y, z = b.tensor("y", (2, 3)), b.tensor("z", (2, 3))
    b.operator("EXP", [x], [y])
    b.operator("NEG", [y], [z])
    b.output(z)
    body = b.add_subgraph()
    bx = body.input("bx", (2, 3))
    by = body.tensor("by", (2, 3))
    body.operator("RELU", [bx], [by])
    body.output(by)
    data = b.finish()
    assert tflite.Model.GetRootAsModel(data, 0).SubgraphsLength() == 2
    xv = rand(2, 3)
    check(b, {"x": xv}, -np.exp(xv))
    b2 = ModelBuilder()
    c = b2.input("c", (), "bool")
    x2 = b2.input("x", (2, 3))
    o2 = b2.tensor("o", (2, 3))
    b2.operator("IF", [c, x2], [o2], "IfOptions", ThenSubgraphIndex=1, ElseSubgraphIndex=1)
    b2.output(o2)
    sub = b2.add_subgraph()
    sx = sub.input("sx", (2, 3))
    sub.output(sx)
    with pytest.raises(OpNotImplemented, match="IF"):
        relay.frontend.from_tflite(b2.finish())


def test_shape_dict_overrides_batch():
    """The model declares batch 1; shape_dict asks for 3 (intermediate shapes follow)."""
    b = ModelBuilder()
    x = b.input("x", (1, 6, 6, 2))
    w = rand(4, 3, 3, 2)
    c = b.tensor("c", (1, 3, 3, 4))
    b.operator("CONV_2D", [x, b.constant("w", w), -1], [c], "Conv2DOptions", Padding=0,
               StrideH=2, StrideW=2, DilationHFactor=1, DilationWFactor=1,
               FusedActivationFunction=1)
    m = b.tensor("m", (1, 4))
    b.operator("MEAN", [c, b.constant("ax", np.array([1, 2], "int32"))], [m], "ReducerOptions",
               KeepDims=False)
    s = b.tensor("s", (1, 4))
    b.operator("SOFTMAX", [m], [s], "SoftmaxOptions", Beta=1.0)
    b.output(s)
    xv = rand(3, 6, 6, 2)
    ref = np.maximum(np_conv(xv, w.transpose(1, 2, 3, 0), (2, 2), (1, 1), "SAME"), 0)
    e = np.exp(ref.mean((1, 2)) - ref.mean((1, 2)).max(-1, keepdims=True))
    check(b, {"x": xv}, e / e.sum(-1, keepdims=True))

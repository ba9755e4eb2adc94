"""Builds fully-quantized TFLite models op by op while simulating TFLite's arithmetic in numpy
(dequantize, the float op in float64, round half away from zero, clamp), so each model carries
an independent reference output. No TFLite runtime and no torch needed. 8-bit CONV_2D,
DEPTHWISE_CONV_2D, FULLY_CONNECTED, BATCH_MATMUL, ADD, SUB and MUL take TFLite's integer
arithmetic itself (exact int sums, its fixed-point multiplier and roundings; checked against
LiteRT's kernels: ``tests/relay/frontend/test_tflite_exact_binary.py``)."""

from __future__ import annotations

import numpy as np

from minitvm.relay.frontend.tflite.builder import ModelBuilder

QRANGE = {"int8": (-128, 127), "uint8": (0, 255), "int16": (-32768, 32767)}
_ACT = {None: 0, "relu": 1, "relu6": 3}
_BOUNDS = {None: (None, None), "relu": (0.0, None), "relu6": (0.0, 6.0)}


def round_away(v):
    """TFLite's rounding: half away from zero."""
    return np.sign(v) * np.floor(np.abs(v) + 0.5)


def multiply_by_quantized_multiplier(x, multiplier: float) -> np.ndarray:
    """TFLite's integer rescale, step by step as its kernels compute it: QuantizeMultiplier
    (a Q31 significand and a shift), SaturatingRoundingDoublingHighMul (a nudge of +-2**30,
    division truncating toward zero) and RoundingDivideByPOT (mask, threshold)."""
    import math

    q, shift = math.frexp(float(multiplier))
    m0 = int(math.floor(q * 2**31 + 0.5))
    if m0 == 2**31:
        m0, shift = m0 // 2, shift + 1
    left, right = max(shift, 0), max(-shift, 0)
    out = []
    for v in np.asarray(x, "int64").reshape(-1).tolist():
        ab = (v << left) * m0
        nudge = 2**30 if ab >= 0 else 1 - 2**30
        num = ab + nudge
        high = abs(num) // 2**31 * (1 if num >= 0 else -1)  # (C++ division: truncation)
        mask = (1 << right) - 1
        threshold = (mask >> 1) + (1 if high < 0 else 0)
        out.append((high >> right) + (1 if (high & mask) > threshold else 0))
    return np.array(out, "int64").reshape(np.shape(x))


class QTwin:
    """A ModelBuilder plus, for every quantized tensor, its int values and (scale, zero point)."""

    def __init__(self, dtype: str = "uint8", seed: int = 0):
        self.b = ModelBuilder()
        self.dtype = dtype
        self.rng = np.random.default_rng(seed)
        self.val: dict[int, np.ndarray] = {}  # quantized values (int64)
        self.qp: dict[int, tuple[float, int]] = {}
        self.n = 0

    # ---------------------------------------------------------------- quantization helpers
    def _name(self, kind):
        self.n += 1
        return f"{kind}_{self.n}"

    def params_for(self, lo: float, hi: float) -> tuple[float, int]:
        """(scale, zero point) covering [lo, hi] (widened to hold 0) in this twin's dtype."""
        lo, hi = min(lo, 0.0), max(hi, 0.0)
        qlo, qhi = QRANGE[self.dtype]
        if self.dtype == "int16":  # symmetric, zero point 0 (TFLite's 16x8 quantization)
            return float(np.float32(max(-lo, hi, 1e-6) / qhi)), 0
        scale = max(hi - lo, 1e-6) / (qhi - qlo)
        zp = int(np.clip(round_away(qlo - lo / scale), qlo, qhi))
        return float(np.float32(scale)), zp

    def quantize(self, f, scale, zp, lo=None, hi=None):
        qlo, qhi = QRANGE[self.dtype]
        if lo is not None:  # (CalculateActivationRangeQuantized: a float32 quotient)
            qlo = max(qlo, zp + int(round_away(np.float32(lo) / np.float32(scale))))
        if hi is not None:
            qhi = min(qhi, zp + int(round_away(np.float32(hi) / np.float32(scale))))
        return np.clip(round_away(np.asarray(f, "float64") / scale) + zp, qlo, qhi).astype(
            "int64")

    def _act_range(self, t, act) -> tuple[int, int]:
        """The quantized range of tensor ``t`` under fused activation ``act`` (as
        ``quantize`` clamps)."""
        (s, z), (qlo, qhi) = self.qp[t], QRANGE[self.dtype]
        lo, hi = _BOUNDS[act]
        if lo is not None:
            qlo = max(qlo, z + int(round_away(np.float32(lo) / np.float32(s))))
        if hi is not None:
            qhi = min(qhi, z + int(round_away(np.float32(hi) / np.float32(s))))
        return qlo, qhi

    def _integer_result(self, y, acc, mult, act=None, ties_away=False, axis=-1):
        """8-bit models: tensor ``y``'s values as TFLite's integer kernels compute them from the
        exact int sums ``acc``: TFLite's multiplier ``mult`` (per channel along ``axis``) with
        its two roundings (ruy's: both half up; ``ties_away``: gemmlowp's, the second half away
        from zero), + zero point, clamped to the fused activation's range."""
        if self.dtype not in ("int8", "uint8"):
            return
        mult = np.atleast_1d(np.asarray(mult, "float64"))
        shape = [1] * np.ndim(acc)
        if mult.size > 1:
            shape[axis] = -1
        out = np.empty(np.shape(acc), "int64")
        acc = np.asarray(acc, "int64")
        cols = np.broadcast_to(np.arange(mult.size).reshape(shape), acc.shape)
        for c, m in enumerate(mult):
            q, shift = np.frexp(m)
            m0 = int(np.floor(q * 2.0**31 + 0.5))
            if m0 == 2**31:
                m0, shift = m0 // 2, shift + 1
            sel = cols == c
            h = (acc[sel] * (1 << max(int(shift), 0)) * m0 + 2**30) >> 31
            r = max(-int(shift), 0)
            if r:
                h = (h + (1 << (r - 1)) - ((h < 0) if ties_away else 0)) >> r
            out[sel] = h
        qlo, qhi = self._act_range(y, act)
        self.val[y] = np.clip(out + self.qp[y][1], qlo, qhi)

    def deq(self, t) -> np.ndarray:
        s, z = self.qp[t]
        return (self.val[t] - z) * np.float64(s)

    def _emit(self, f, kind, params=None, act=None) -> int:
        """A new quantized tensor holding the float value ``f`` (its parameters from its range
        unless given), clamped to the fused activation ``act``."""
        lo, hi = _BOUNDS[act]
        top = float(np.max(f)) if hi is None else min(float(np.max(f)), hi)
        s, z = params or self.params_for(float(np.min(f)), top)
        t = self.b.tensor(self._name(kind), np.shape(f), self.dtype, quant=(s, z))
        self.val[t], self.qp[t] = self.quantize(f, s, z, lo, hi), (s, z)
        return t

    @property
    def _bias_dtype(self) -> str:
        return "int64" if self.dtype == "int16" else "int32"  # (16x8 models: int64 biases)

    def _i32(self, arr) -> int:
        return self.b.constant(self._name("const"), np.asarray(arr, "int32"))

    # ---------------------------------------------------------------- model pieces
    def input(self, name, shape, scale=0.05):
        qlo, qhi = QRANGE[self.dtype]
        zp = 128 if self.dtype == "uint8" else 0  # (int16: 0, symmetric)
        t = self.b.input(name, shape, self.dtype, quant=(scale, zp))
        self.val[t] = self.rng.integers(qlo, qhi + 1, size=shape).astype("int64")
        self.qp[t] = (scale, zp)
        return t

    def float_input(self, name, shape):
        t = self.b.input(name, shape, "float32")
        self.val[t] = self.rng.standard_normal(shape)
        return t

    def conv(self, x, cout, k, stride=1, act=None, depthwise=False, per_channel=True,
             padding="SAME", w_dtype="int8", w_zp=0):
        xf = self.deq(x)
        n, h, wd, cin = xf.shape
        co = cin if depthwise else cout
        q = self.rng.integers(-127, 128, size=(1, k, k, co) if depthwise else (co, k, k, cin))
        if w_dtype == "uint8":
            q = np.clip(q + w_zp, 0, 255)
        w_scale = (self.rng.uniform(0.5, 1.5, co) if per_channel else np.ones(1)) * \
            (2.5 / (127 * np.sqrt(k * k * (1 if depthwise else cin))))  # (keeps the scale)
        w_scale = w_scale.astype("float32")
        wf = (q - w_zp) * w_scale.astype("float64").reshape(
            (1, 1, 1, -1) if depthwise else (-1, 1, 1, 1))
        in_s = self.qp[x][0]
        b_scale = (np.float32(in_s) * w_scale).astype("float32")
        bias = self.rng.integers(-2000, 2000, size=co).astype(self._bias_dtype)
        if padding == "SAME":
            pads = [_same(h, k, stride), _same(wd, k, stride)]
        else:
            pads = [(0, 0), (0, 0)]
        xp = np.pad(xf, ((0, 0), pads[0], pads[1], (0, 0)))
        oh = (xp.shape[1] - k) // stride + 1
        ow = (xp.shape[2] - k) // stride + 1
        out = np.zeros((n, oh, ow, co))
        for i in range(k):
            for j in range(k):
                patch = xp[:, i:i + stride * oh:stride, j:j + stride * ow:stride, :]
                if depthwise:
                    out += patch * wf[0, i, j]
                else:
                    out += patch @ wf[:, i, j, :].T
        out += bias * b_scale.astype("float64")
        wt = self.b.constant(self._name("w"), q.astype(w_dtype),
                             quant=(w_scale, np.full(w_scale.size, w_zp), 3 if depthwise else 0))
        bt = self.b.constant(self._name("b"), bias, quant=(b_scale, np.zeros(co, "int64"), 0))
        y = self._emit(np.maximum(out, 0) if act else out, "conv", act=act)
        # the exact int sums (the float sums are exact to far below one unit)
        acc = np.round(out / (np.float64(in_s) * w_scale.astype("float64")))
        self._integer_result(y, acc, np.float64(np.float32(in_s)) * w_scale.astype("float64") /
                             np.float64(np.float32(self.qp[y][0])), act)
        opts = "DepthwiseConv2DOptions" if depthwise else "Conv2DOptions"
        extra = {"DepthMultiplier": 1} if depthwise else {}
        self.b.operator("DEPTHWISE_CONV_2D" if depthwise else "CONV_2D", [x, wt, bt], [y], opts,
                        Padding=0 if padding == "SAME" else 1, StrideH=stride, StrideW=stride,
                        DilationHFactor=1, DilationWFactor=1, FusedActivationFunction=_ACT[act],
                        **extra)
        return y

    def fully_connected(self, x, units, act=None, keep_num_dims=False):
        xf = self.deq(x)
        k = xf.shape[-1]
        q = self.rng.integers(-127, 128, size=(units, k))
        w_scale = np.float32(2.5 / (127 * np.sqrt(k)))
        b_scale = np.float32(np.float32(self.qp[x][0]) * w_scale)
        bias = self.rng.integers(-2000, 2000, size=units).astype(self._bias_dtype)
        out = xf.reshape(-1, k) @ (q * np.float64(w_scale)).T + bias * np.float64(b_scale)
        if keep_num_dims:
            out = out.reshape(xf.shape[:-1] + (units,))
        wt = self.b.constant(self._name("w"), q.astype("int8"), quant=(w_scale, 0))
        bt = self.b.constant(self._name("b"), bias, quant=(b_scale, 0))
        y = self._emit(np.maximum(out, 0) if act else out, "fc", act=act)
        in_s = np.float64(self.qp[x][0])
        self._integer_result(y, np.round(out / (in_s * np.float64(w_scale))),
                             np.float64(np.float32(in_s)) * np.float64(w_scale) /
                             np.float64(np.float32(self.qp[y][0])), act)
        self.b.operator("FULLY_CONNECTED", [x, wt, bt], [y], "FullyConnectedOptions",
                        FusedActivationFunction=_ACT[act], KeepNumDims=keep_num_dims)
        return y

    def binary(self, op, a, b, act=None):
        fa, fb = self.deq(a), self.deq(b)
        f = {"ADD": np.add, "SUB": np.subtract, "MUL": np.multiply}[op](fa, fb)
        y = self._emit(np.maximum(f, 0) if act else f, op.lower(), act=act)
        if self.dtype in ("int8", "uint8"):  # TFLite's fixed point (tflite.exact_binary)
            from minitvm.relay.frontend.tflite.exact_binary import reference

            lo = QRANGE[self.dtype][0]
            table = reference(op, self.dtype, self.qp[a], self.qp[b], self.qp[y],
                              *self._act_range(y, act))
            va, vb = np.broadcast_arrays(self.val[a], self.val[b])
            self.val[y] = table[va - lo, vb - lo]
        self.b.operator(op, [a, b], [y], f"{op.capitalize()}Options",
                        FusedActivationFunction=_ACT[act])
        return y

    def pool(self, kind, x, k, stride, padding="VALID"):
        """MAX_POOL_2D or AVERAGE_POOL_2D, the output with the input's parameters (as TFLite's
        converter writes them); 8-bit average pools as TFLite's integer kernel: the window's
        sum of raw values over its in-bounds taps divided rounding half away from zero."""
        xf = self.deq(x)
        n, h, w, c = xf.shape
        if padding == "SAME":
            ph, pw = _same(h, k, stride), _same(w, k, stride)
        else:
            ph = pw = (0, 0)
        fill = -np.inf if kind == "max" else np.nan
        xp = np.pad(xf, ((0, 0), ph, pw, (0, 0)), constant_values=fill)
        oh, ow = (xp.shape[1] - k) // stride + 1, (xp.shape[2] - k) // stride + 1
        win = np.stack([xp[:, i:i + stride * oh:stride, j:j + stride * ow:stride, :]
                        for i in range(k) for j in range(k)])
        f = win.max(axis=0) if kind == "max" else np.nanmean(win, axis=0)
        params = self.qp[x] if kind == "max" or self.dtype != "int16" else None
        y = self._emit(f, kind + "pool", params)
        if kind == "avg" and self.dtype != "int16":
            raw = np.pad(self.val[x].astype("float64"), ((0, 0), ph, pw, (0, 0)),
                         constant_values=np.nan)
            win = np.stack([raw[:, i:i + stride * oh:stride, j:j + stride * ow:stride, :]
                            for i in range(k) for j in range(k)])
            acc = np.nansum(win, axis=0).astype("int64")
            cnt = np.sum(~np.isnan(win), axis=0)
            self.val[y] = np.where(acc > 0, (acc + cnt // 2) // cnt,
                                   -((-acc + cnt // 2) // cnt))
        self.b.operator("MAX_POOL_2D" if kind == "max" else "AVERAGE_POOL_2D", [x], [y],
                        "Pool2DOptions", Padding=0 if padding == "SAME" else 1, StrideH=stride,
                        StrideW=stride, FilterHeight=k, FilterWidth=k, FusedActivationFunction=0)
        return y

    def mean(self, x, axes, keep):
        """MEAN; 8-bit values as LiteRT's kernels compute them: over H and W of a 4-D tensor
        with kept dims the raw sum times a multiplier for in / (count * out) scale plus a
        rounded bias (blocks of 16 channels rounding the last shift half up: its NEON path),
        else the sum less count * zero point times in / out scale folded with 1 / count."""
        y = self._emit(self.deq(x).mean(axis=tuple(axes), keepdims=keep), "mean")
        self.b.operator("MEAN", [x, self._i32(axes)], [y], "ReducerOptions", KeepDims=keep)
        if self.dtype not in ("int8", "uint8"):
            return y
        f32 = np.float32
        (si, zi), (so, zo) = self.qp[x], self.qp[y]
        shape = self.val[x].shape
        axes = sorted({a % len(shape) for a in axes})
        count = int(np.prod([shape[a] for a in axes]))
        acc = self.val[x].sum(axis=tuple(axes), keepdims=keep)
        if keep and len(shape) == 4 and axes == [1, 2]:
            t = f32(f32(f32(zi) * f32(si)) / f32(so))
            bias = zo - int(t + f32(0.5) if t > 0 else t - f32(0.5))
            m0, shift = _quantize_multiplier(float(f32(si) / (f32(count) * f32(so))))
            neon = np.arange(shape[3]) < shape[3] // 16 * 16
            v = np.where(neon, _rescale(acc, m0, shift, True), _rescale(acc, m0, shift)) + bias
        else:
            m0, shift = _quantize_multiplier(np.float64(f32(si)) / np.float64(f32(so)))
            k = min(count.bit_length() - 1, 32, 31 + shift)
            v = _rescale(acc - zi * count, (m0 << k) // count, shift - k) + zo
        self.val[y] = np.clip(v, *QRANGE[self.dtype])
        return y

    def _same_params(self, x, f, kind):
        y = self.b.tensor(self._name(kind), f.shape, self.dtype, quant=self.qp[x])
        self.val[y], self.qp[y] = f, self.qp[x]
        return y

    def reshape(self, x, shape):
        y = self._same_params(x, self.val[x].reshape(shape), "reshape")
        self.b.operator("RESHAPE", [x, self._i32(shape)], [y], "ReshapeOptions",
                        NewShape=list(shape))
        return y

    def squeeze(self, x, dims):
        y = self._same_params(x, np.squeeze(self.val[x], tuple(dims)), "squeeze")
        self.b.operator("SQUEEZE", [x], [y], "SqueezeOptions", SqueezeDims=list(dims))
        return y

    def transpose(self, x, perm):
        y = self._same_params(x, self.val[x].transpose(perm), "transpose")
        self.b.operator("TRANSPOSE", [x, self._i32(perm)], [y])
        return y

    def strided_slice(self, x, begin, end, strides):
        sl = tuple(slice(b, e, s) for b, e, s in zip(begin, end, strides, strict=True))
        y = self._same_params(x, self.val[x][sl], "slice")
        self.b.operator("STRIDED_SLICE", [x, self._i32(begin), self._i32(end),
                                          self._i32(strides)], [y], "StridedSliceOptions",
                        BeginMask=0, EndMask=0, EllipsisMask=0, NewAxisMask=0,
                        ShrinkAxisMask=0)
        return y

    def pad(self, x, pads):
        zp = self.qp[x][1]
        y = self._same_params(x, np.pad(self.val[x], pads, constant_values=zp), "pad")
        self.b.operator("PAD", [x, self._i32(pads)], [y])
        return y

    def concat(self, xs, axis):
        """Inputs of different scales: each requantized to the output's."""
        f = np.concatenate([self.deq(x) for x in xs], axis)
        y = self._emit(f, "concat")
        self.b.operator("CONCATENATION", list(xs), [y], "ConcatenationOptions", Axis=axis,
                        FusedActivationFunction=0)
        return y

    def unary(self, op, x):
        xf = self.deq(x)
        if op == "SOFTMAX":
            e = np.exp(xf - xf.max(axis=-1, keepdims=True))
            f = e / e.sum(axis=-1, keepdims=True)
        elif op == "LOGISTIC":
            f = 1 / (1 + np.exp(-xf))
        elif op == "HARD_SWISH":
            f = xf * np.clip(xf + 3, 0, 6) / 6
        elif op == "RELU":
            f = np.maximum(xf, 0)
        else:  # RELU6
            f = np.clip(xf, 0, 6)
        params = None
        if op in ("SOFTMAX", "LOGISTIC"):  # TFLite's fixed output parameters (int16: 2**-15)
            params = (1 / 32768, 0) if self.dtype == "int16" else \
                (1 / 256, -128 if self.dtype == "int8" else 0)
        elif op in ("RELU", "RELU6"):
            params = self.qp[x]
        y = self._emit(f, op.lower(), params)
        self.b.operator(op, [x], [y], "SoftmaxOptions" if op == "SOFTMAX" else None,
                        **({"Beta": 1.0} if op == "SOFTMAX" else {}))
        return y

    def op(self, op, inputs, f, options=None, params=None, consts=(), **fields):
        """Any operator computed through float: ``f`` (float64 of the dequantized quantized
        inputs) gives the output, quantized with ``params`` (default: its range); ``consts``
        are extra int32 inputs (axes, shapes) appended in order."""
        out = f(*[self.deq(x) for x in inputs])
        y = self._emit(out, op.lower(), params)
        extra = [self._i32(c) for c in consts]
        self.b.operator(op, [*inputs, *extra], [y], options, **fields)
        return y

    def transpose_conv(self, x, cout, k, stride, out_hw, padding="SAME", bias=True,
                       w_dtype="int8", w_zp=0):
        """TRANSPOSE_CONV (weights (O, kh, kw, I), an int32 bias): per-channel int8 weights, or
        uint8 weights of one scale and zero point ``w_zp`` (what LiteRT's uint8 kernel takes)."""
        xf = self.deq(x)
        n, h, wd, cin = xf.shape
        q = self.rng.integers(-127, 128, size=(cout, k, k, cin))
        per_channel = w_dtype == "int8"
        if not per_channel:
            q = np.clip(q + w_zp, 0, 255)
        w_scale = ((self.rng.uniform(0.5, 1.5, cout) if per_channel else np.ones(1)) * 2.5 /
                   (127 * np.sqrt(k * k * cin))).astype("float32")
        wf = (q - w_zp) * w_scale.astype("float64").reshape(-1, 1, 1, 1)
        oh, ow = out_hw
        pads = []
        for n_in, n_out in ((h, oh), (wd, ow)):
            total = max((n_in - 1) * stride + k - n_out, 0) if padding == "SAME" else 0
            pads.append(total // 2)
        full = np.zeros((n, (h - 1) * stride + k, (wd - 1) * stride + k, cout))
        for i in range(k):
            for j in range(k):  # every input pixel adds its kernel tap at i, j
                full[:, i:i + stride * h:stride, j:j + stride * wd:stride, :] += \
                    xf @ wf[:, i, j, :].T
        full = np.pad(full, ((0, 0), (0, max(oh + pads[0] - full.shape[1], 0)),
                             (0, max(ow + pads[1] - full.shape[2], 0)), (0, 0)))
        out = full[:, pads[0]:pads[0] + oh, pads[1]:pads[1] + ow, :]
        ins = [self._i32([n, oh, ow, cout]),
               self.b.constant(self._name("w"), q.astype(w_dtype),
                               quant=(w_scale, np.full(w_scale.size, w_zp), 0)), x]
        if bias:
            b_scale = (np.float32(self.qp[x][0]) * w_scale).astype("float32")
            bv = self.rng.integers(-2000, 2000, size=cout).astype(self._bias_dtype)
            out = out + bv * b_scale.astype("float64")
            ins.append(self.b.constant(self._name("b"), bv,
                                       quant=(b_scale, np.zeros(b_scale.size, "int64"), 0)))
        y = self._emit(out, "tconv")
        self.b.operator("TRANSPOSE_CONV", ins, [y], "TransposeConvOptions",
                        Padding=0 if padding == "SAME" else 1, StrideH=stride, StrideW=stride)
        return y

    def batch_matmul(self, a, b, adj_x=False, adj_y=False):
        """int8 x int8 BATCH_MATMUL of two activations."""
        def f(fa, fb):
            fa = np.swapaxes(fa, -1, -2) if adj_x else fa
            return fa @ (np.swapaxes(fb, -1, -2) if adj_y else fb)

        y = self.op("BATCH_MATMUL", [a, b], f, "BatchMatMulOptions", AdjX=adj_x, AdjY=adj_y)
        (sa, za), (sb, zb) = self.qp[a], self.qp[b]
        acc = f(self.val[a] - za, self.val[b] - zb)
        f32 = [np.float64(np.float32(v)) for v in (sa, sb, self.qp[y][0])]
        self._integer_result(y, acc, f32[0] * f32[1] / f32[2], ties_away=True)
        return y

    def resize(self, x, size, method, align=False, half=False):
        """RESIZE_NEAREST_NEIGHBOR (asymmetric) or RESIZE_BILINEAR with TensorFlow's
        coordinate modes: asymmetric, align_corners or half_pixel_centers."""
        xf = self.deq(x)
        _, h, w, _ = xf.shape
        oh, ow = size
        if method == "nearest":
            ri = np.minimum(np.floor(np.arange(oh) * h / oh).astype(int), h - 1)
            ci = np.minimum(np.floor(np.arange(ow) * w / ow).astype(int), w - 1)
            y = self._same_params(x, self.val[x][:, ri][:, :, ci], "resize")
            op, opts = "RESIZE_NEAREST_NEIGHBOR", "ResizeNearestNeighborOptions"
        elif self.dtype in ("int8", "uint8"):  # TFLite's kernels, the input's parameters
            y = self._same_params(x, _bilinear_8bit(self.val[x], size, align, half,
                                                    self.dtype), "resize")
            op, opts = "RESIZE_BILINEAR", "ResizeBilinearOptions"
        else:
            def axis(n_in, n_out):
                dst = np.arange(n_out)
                if align and n_out > 1:
                    src = dst * (n_in - 1) / (n_out - 1)
                elif half:  # (a source left of the first pixel takes the first pixel)
                    src = (dst + 0.5) * n_in / n_out - 0.5
                else:
                    src = dst * n_in / n_out
                i0 = np.floor(src).astype(int)
                return np.maximum(i0, 0), np.minimum(i0 + 1, n_in - 1), src - i0

            r0, r1, fr = axis(h, oh)
            c0, c1, fc = axis(w, ow)
            top = xf[:, r0] * (1 - fr)[None, :, None, None] + xf[:, r1] * fr[None, :, None, None]
            f = top[:, :, c0] * (1 - fc)[None, None, :, None] + \
                top[:, :, c1] * fc[None, None, :, None]
            y = self._emit(f, "resize")
            op, opts = "RESIZE_BILINEAR", "ResizeBilinearOptions"
        self.b.operator(op, [x, self._i32(size)], [y], opts, AlignCorners=align,
                        HalfPixelCenters=half)
        return y

    def quantize_float(self, x, params=None):
        """QUANTIZE of a float input, as TFLite's AffineQuantize computes it: the float32
        quotient x / scale rounded half away from zero, + zero point, saturated."""
        f = self.val[x].astype("float32")
        y = self._emit(f, "quantize", params)
        s, z = self.qp[y]
        qlo, qhi = QRANGE[self.dtype]
        self.val[y] = np.clip(round_away(f / np.float32(s)).astype("int64") + z, qlo, qhi)
        self.b.operator("QUANTIZE", [x], [y])
        return y

    def requantize(self, x, scale, zp):
        """QUANTIZE of a quantized tensor: LiteRT's Requantize, in its integer arithmetic (its
        NEON loop, 16 values at a time in flat order, rounds the final shift half up; the
        scalar tail as gemmlowp, half away from zero)."""
        y = self._emit(self.deq(x), "requantize", (scale, zp))
        s_in, z_in = self.qp[x]
        mult = np.float64(np.float32(s_in)) / np.float64(np.float32(scale))
        flat = (self.val[x] - z_in).reshape(-1)
        neon = np.arange(flat.size) < flat.size // 16 * 16
        v = np.where(neon, _rescale(flat, *_quantize_multiplier(mult), True),
                     multiply_by_quantized_multiplier(flat, mult)).reshape(self.val[x].shape)
        qlo, qhi = QRANGE[self.dtype]
        self.val[y] = np.clip(v + zp, qlo, qhi)
        self.b.operator("QUANTIZE", [x], [y])
        return y

    def dequantize(self, x):
        y = self.b.tensor(self._name("dequantize"), self.val[x].shape, "float32")
        self.val[y] = self.deq(x)
        self.b.operator("DEQUANTIZE", [x], [y])
        return y

    def finish(self, outputs):
        for o in outputs:
            self.b.output(o)
        return self.b.finish(), [self.val[o] for o in outputs]

    def inputs(self) -> dict:
        return {self.b.tensors[t][0]: self.val[t].astype(self.b.tensors[t][2])
                for t in self.b.inputs}


def _quantize_multiplier(m: float) -> tuple[int, int]:
    q, shift = np.frexp(np.float64(m))
    m0 = int(np.floor(q * 2.0**31 + 0.5))
    return (m0 // 2, int(shift) + 1) if m0 == 2**31 else (m0, int(shift))


def _rescale(x, m0: int, shift: int, half_up: bool = False) -> np.ndarray:
    """MultiplyByQuantizedMultiplier by a Q31 ``m0`` and exponent ``shift``; the final shift
    rounds half away from zero (gemmlowp) or half up (NEON's rounding shift)."""
    left, right = max(shift, 0), max(-shift, 0)
    h = ((np.asarray(x, "int64") << left) * m0 + 2**30) >> 31
    if right:
        h = (h + (1 << (right - 1)) - (0 if half_up else (h < 0))) >> right
    return h


def _bilinear_8bit(v, size, align, half, dtype):
    """TFLite's quantized RESIZE_BILINEAR of raw values ``v`` (NHWC): int8 in 10-bit fixed
    point (ResizeBilinearInteger), uint8 with float32 weights, + 0.5, truncated."""
    _, h, w, _ = v.shape
    oh, ow = size
    f32 = np.float32
    out = np.zeros((v.shape[0], oh, ow, v.shape[3]), "int64")
    if dtype == "int8":
        def taps(n_in, n_out, o):
            sc = ((1 << 10) * (n_in - 1) + (n_out - 1) // 2) // (n_out - 1) if align and \
                n_out > 1 else ((1 << 10) * n_in + n_out // 2) // n_out
            p = o * sc + sc // 2 - (1 << 9) if half else o * sc
            lo = max(int(p / 1024), 0)  # (C's truncating division)
            return p - 1024 * lo, lo, min(int((p + 1023) / 1024), n_in - 1)

        for i in range(oh):
            dy, y0, y1 = taps(h, oh, i)
            for j in range(ow):
                dx, x0, x1 = taps(w, ow, j)
                acc = (v[:, y0, x0] * (1024 - dy) * (1024 - dx) + v[:, y1, x0] * dy * (
                    1024 - dx) + v[:, y0, x1] * (1024 - dy) * dx + v[:, y1, x1] * dy * dx)
                out[:, i, j] = np.where(acc > 0, (acc + (1 << 19)) >> 20,
                                        -((-acc + (1 << 19)) >> 20))
        return out

    def ftaps(n_in, n_out, o):
        sc = f32(n_in - 1) / f32(n_out - 1) if align and n_out > 1 else f32(n_in) / f32(n_out)
        p = f32((f32(o) + f32(0.5)) * sc - f32(0.5)) if half else f32(f32(o) * sc)
        lo = max(int(np.floor(p)), 0)
        return f32(p - f32(lo)), lo, min(int(np.ceil(p)), n_in - 1)

    vf = v.astype("float32")
    for i in range(oh):
        dy, y0, y1 = ftaps(h, oh, i)
        for j in range(ow):
            dx, x0, x1 = ftaps(w, ow, j)
            one = f32(1)
            acc = vf[:, y0, x0] * f32((one - dy) * (one - dx))
            acc = acc + vf[:, y0, x1] * f32((one - dy) * dx)
            acc = acc + vf[:, y1, x0] * f32(dy * (one - dx))
            acc = acc + vf[:, y1, x1] * f32(dy * dx)
            out[:, i, j] = np.trunc(acc + f32(0.5)).astype("int64")
    return out


def _same(size, k, stride):
    out = -(-size // stride)
    total = max((out - 1) * stride + k - size, 0)
    return total // 2, total - total // 2


# (expand, output channels, stride) of MobileNetV2's first five inverted residual blocks, and
# of all seventeen (``full``: torchvision's / TFLite's mobilenet_v2_1.0_224 with ``width=32``)
BLOCKS = [(1, 16, 1), (6, 24, 2), (6, 24, 1), (6, 32, 2), (6, 32, 1)]
FULL_BLOCKS = BLOCKS + [(6, 32, 1), (6, 64, 2), (6, 64, 1), (6, 64, 1), (6, 64, 1), (6, 96, 1),
                        (6, 96, 1), (6, 96, 1), (6, 160, 2), (6, 160, 1), (6, 160, 1),
                        (6, 320, 1)]


def mobilenet_v2(dtype="uint8", size=32, width=16, classes=10, seed=1, mult=1, full=False,
                 lead=1):
    """MobileNetV2's inverted residual blocks, fully quantized (as TFLite's converter writes);
    ``mult`` widens every block; ``full``: all 17 blocks and the 1280-channel head (with
    ``width=32``, ``mult=1``: MobileNetV2 1.0), else the first 5 and a 64-channel head.
    ``lead``: the batch its RESHAPE target writes (1, the stored batch; -1: any batch, as the
    converter writes a dynamic batch)."""
    t = QTwin(dtype, seed)
    x = t.input("input", (1, size, size, 3), scale=1 / 128)
    y = t.conv(x, width * mult, 3, 2, "relu6")
    cin = width * mult
    for expand, cout, stride in FULL_BLOCKS if full else BLOCKS:
        cout *= mult
        h = t.conv(y, cin * expand, 1, 1, "relu6") if expand != 1 else y
        h = t.conv(h, 0, 3, stride, "relu6", depthwise=True)
        h = t.conv(h, cout, 1, 1, None)
        y = t.binary("ADD", y, h) if stride == 1 and cin == cout else h
        cin = cout
    head = (1280 if full else 64) * mult
    y = t.conv(y, head, 1, 1, "relu6")
    y = t.reshape(t.pool("avg", y, t.val[y].shape[1], 1), (lead, head))
    logits = t.fully_connected(y, classes)
    return t, t.finish([logits, t.unary("SOFTMAX", logits)])


def _softmax(v, beta=1.0):
    e = np.exp(beta * (v - v.max(axis=-1, keepdims=True)))
    return e / e.sum(axis=-1, keepdims=True)


def _erf_gelu(v):
    from math import erf

    return 0.5 * v * (1 + np.vectorize(erf)(v / np.sqrt(2)))


def transformer_encoder(dtype="int8", tokens=64, dim=128, heads=2, ffn=256, layers=2, seed=3,
                        lead=1, open_tokens=False):
    """A BERT-like encoder as TFLite's converter writes it, fully quantized: FULLY_CONNECTED
    (keep_num_dims) projections, RESHAPE / TRANSPOSE into heads, BATCH_MATMUL of two
    activations, SOFTMAX (the 1/sqrt(d) scale as its beta), GELU, residual ADDs and LayerNorm
    decomposed into MEAN / SQUARED_DIFFERENCE / ADD / RSQRT / SUB / MUL. ``lead``: the batch
    its RESHAPE targets write (1, the stored batch; -1: any batch); ``open_tokens``: they
    write -1 for the token count instead (a model for any sequence length; ``lead`` 1)."""
    t = QTwin(dtype, seed)
    seq = -1 if open_tokens else tokens
    dh = dim // heads
    x = t.input("input", (1, tokens, dim), scale=0.05)
    eps = t.b.constant("eps", np.array([1], dtype), quant=(1e-3, 0))
    t.val[eps], t.qp[eps] = np.array([1]), (1e-3, 0)
    soft_q = (1 / 256, -128 if dtype == "int8" else 0)

    def heads_of(h):  # (1, T, D) -> (1, H, T, dh)
        return t.transpose(t.reshape(h, (lead, seq, heads, dh)), (0, 2, 1, 3))

    def mean(v):
        return t.mean(v, [-1], True)

    def layer_norm(v):
        m = mean(v)
        var = mean(t.op("SQUARED_DIFFERENCE", [v, m], lambda a, b: (a - b) ** 2))
        r = t.op("RSQRT", [t.binary("ADD", var, eps)], lambda a: 1 / np.sqrt(a))
        c = t.op("SUB", [v, m], np.subtract, "SubOptions", FusedActivationFunction=0)
        return t.op("MUL", [c, r], np.multiply, "MulOptions", FusedActivationFunction=0)

    beta = float(np.float32(1 / np.sqrt(dh)))
    for _ in range(layers):
        q, k, v = (heads_of(t.fully_connected(x, dim, keep_num_dims=True)) for _ in range(3))
        s = t.batch_matmul(q, k, adj_y=True)  # (1, H, T, T)
        p = t.op("SOFTMAX", [s], lambda a: _softmax(a, beta), "SoftmaxOptions", params=soft_q,
                 Beta=beta)
        a = t.batch_matmul(p, v)  # (1, H, T, dh)
        a = t.reshape(t.transpose(a, (0, 2, 1, 3)), (lead, seq, dim))
        x = layer_norm(t.binary("ADD", x, t.fully_connected(a, dim, keep_num_dims=True)))
        h = t.op("GELU", [t.fully_connected(x, ffn, keep_num_dims=True)], _erf_gelu,
                 "GeluOptions", Approximate=False)
        x = layer_norm(t.binary("ADD", x, t.fully_connected(h, dim, keep_num_dims=True)))
    return t, t.finish([x])

"""Builds TFLite models op by op while computing the same network with PyTorch functional ops,
so each test model carries an independent reference output (no TFLite runtime needed)."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from minitvm.relay.frontend.tflite.builder import ModelBuilder

_ACT = {None: 0, "relu": 1, "relu6": 3}


class Twin:
    """A TFLite ModelBuilder plus a torch value (NHWC) for every tensor it defines."""

    def __init__(self, seed: int = 0):
        self.b = ModelBuilder()
        self.rng = np.random.default_rng(seed)
        self.val: dict[int, torch.Tensor] = {}
        self.n = 0

    def _name(self, kind):
        self.n += 1
        return f"{kind}_{self.n}"

    def _out(self, value: torch.Tensor, kind: str) -> int:
        t = self.b.tensor(self._name(kind), tuple(value.shape))
        self.val[t] = value
        return t

    def _const(self, arr) -> int:
        arr = np.asarray(arr, dtype=np.float32) if np.asarray(arr).dtype.kind == "f" else arr
        return self.b.constant(self._name("const"), arr)

    def input(self, name, shape):
        t = self.b.input(name, shape)
        self.val[t] = torch.from_numpy(self.rng.standard_normal(shape).astype("float32"))
        return t

    @staticmethod
    def _act(y, act):
        if act == "relu":
            return torch.relu(y)
        if act == "relu6":
            return torch.clamp(y, 0, 6)
        return y

    def conv(self, x, cout, k, stride=1, act=None, depthwise=False):
        xv = self.val[x]
        cin = xv.shape[3]
        scale = 1.0 / np.sqrt(k * k * (1 if depthwise else cin))
        if depthwise:
            w = (self.rng.standard_normal((1, k, k, cin)) * scale).astype("float32")
            wt = torch.from_numpy(w).permute(3, 0, 1, 2)  # (C, 1, k, k)
            groups, cout = cin, cin
        else:
            w = (self.rng.standard_normal((cout, k, k, cin)) * scale).astype("float32")
            wt = torch.from_numpy(w).permute(0, 3, 1, 2)
            groups = 1
        bias = (self.rng.standard_normal(cout) * 0.1).astype("float32")
        h, wd = xv.shape[1], xv.shape[2]
        pads = []
        for size in (h, wd):
            out = -(-size // stride)
            total = max((out - 1) * stride + k - size, 0)
            pads.append((total // 2, total - total // 2))
        xn = F.pad(xv.permute(0, 3, 1, 2), (pads[1][0], pads[1][1], pads[0][0], pads[0][1]))
        y = F.conv2d(xn, wt, torch.from_numpy(bias), stride=stride, groups=groups)
        y = self._act(y, act).permute(0, 2, 3, 1).contiguous()
        out = self._out(y, "conv")
        opts = "DepthwiseConv2DOptions" if depthwise else "Conv2DOptions"
        extra = {"DepthMultiplier": 1} if depthwise else {}
        self.b.operator("DEPTHWISE_CONV_2D" if depthwise else "CONV_2D",
                        [x, self._const(w), self._const(bias)], [out], opts, Padding=0,
                        StrideH=stride, StrideW=stride, DilationHFactor=1, DilationWFactor=1,
                        FusedActivationFunction=_ACT[act], **extra)
        return out

    def binary(self, op, a, b, act=None):
        fn = {"ADD": torch.add, "SUB": torch.sub, "MUL": torch.mul,
              "SQUARED_DIFFERENCE": lambda p, q: (p - q) ** 2}[op]
        y = self._act(fn(self.val[a], self.val[b]), act)
        out = self._out(y, op.lower())
        opts = {"ADD": "AddOptions", "SUB": "SubOptions", "MUL": "MulOptions"}.get(op)
        fields = {"FusedActivationFunction": _ACT[act]} if opts else {}
        self.b.operator(op, [a, b], [out], opts, **fields)
        return out

    def const(self, arr):
        t = self._const(arr)
        self.val[t] = torch.from_numpy(np.asarray(arr, dtype="float32"))
        return t

    def unary(self, op, x):
        fn = {"RSQRT": torch.rsqrt, "GELU": lambda v: F.gelu(v), "LOGISTIC": torch.sigmoid,
              "RELU": torch.relu, "HARD_SWISH": F.hardswish}[op]
        out = self._out(fn(self.val[x]), op.lower())
        self.b.operator(op, [x], [out], "GeluOptions" if op == "GELU" else None,
                        **({"Approximate": False} if op == "GELU" else {}))
        return out

    def max_pool(self, x, k, stride):
        xv = self.val[x].permute(0, 3, 1, 2)
        h = xv.shape[2]
        out_h = -(-h // stride)
        total = max((out_h - 1) * stride + k - h, 0)
        lo, hi = total // 2, total - total // 2
        xp = F.pad(xv, (lo, hi, lo, hi), value=-np.inf)
        y = F.max_pool2d(xp, k, stride).permute(0, 2, 3, 1).contiguous()
        out = self._out(y, "maxpool")
        self.b.operator("MAX_POOL_2D", [x], [out], "Pool2DOptions", Padding=0, StrideH=stride,
                        StrideW=stride, FilterHeight=k, FilterWidth=k,
                        FusedActivationFunction=0)
        return out

    def mean(self, x, axes, keep):
        y = self.val[x].mean(dim=axes, keepdim=keep)
        out = self._out(y, "mean")
        self.b.operator("MEAN", [x, self._const(np.array(axes, "int32"))], [out],
                        "ReducerOptions", KeepDims=keep)
        return out

    def fully_connected(self, x, units, act=None, keep_dims=False):
        xv = self.val[x]
        k = xv.shape[-1]
        w = (self.rng.standard_normal((units, k)) / np.sqrt(k)).astype("float32")
        bias = (self.rng.standard_normal(units) * 0.1).astype("float32")
        y = self._act(xv @ torch.from_numpy(w).T + torch.from_numpy(bias), act)
        if not keep_dims:
            y = y.reshape(-1, units)
        out = self._out(y, "fc")
        self.b.operator("FULLY_CONNECTED", [x, self._const(w), self._const(bias)], [out],
                        "FullyConnectedOptions", FusedActivationFunction=_ACT[act],
                        KeepNumDims=keep_dims)
        return out

    def reshape(self, x, shape):
        y = self.val[x].reshape(shape)
        out = self._out(y, "reshape")
        self.b.operator("RESHAPE", [x, self._const(np.array(shape, "int32"))], [out],
                        "ReshapeOptions", NewShape=list(shape))
        return out

    def transpose(self, x, perm):
        out = self._out(self.val[x].permute(*perm).contiguous(), "transpose")
        self.b.operator("TRANSPOSE", [x, self._const(np.array(perm, "int32"))], [out])
        return out

    def batch_matmul(self, a, b, adj_y=False):
        bv = self.val[b].transpose(-1, -2) if adj_y else self.val[b]
        out = self._out(self.val[a] @ bv, "bmm")
        self.b.operator("BATCH_MATMUL", [a, b], [out], "BatchMatMulOptions", AdjX=False,
                        AdjY=adj_y)
        return out

    def softmax(self, x):
        out = self._out(torch.softmax(self.val[x], dim=-1), "softmax")
        self.b.operator("SOFTMAX", [x], [out], "SoftmaxOptions", Beta=1.0)
        return out

    def finish(self, outputs):
        for o in outputs:
            self.b.output(o)
        return self.b.finish(), [self.val[o].numpy() for o in outputs]

    def inputs(self):
        return {self.b.tensors[t][0]: self.val[t].numpy() for t in self.b.inputs}


def mobilenet_v2(size=32, width=8, classes=10):
    """MobileNetV2's inverted residual blocks written as TFLite ops."""
    t = Twin(1)
    x = t.input("input", (1, size, size, 3))
    y = t.conv(x, width, 3, 2, "relu6")
    cin = width
    for expand, cout, stride in [(1, 8, 1), (6, 12, 2), (6, 12, 1), (6, 16, 2), (6, 16, 1)]:
        h = t.conv(y, cin * expand, 1, 1, "relu6") if expand != 1 else y
        h = t.conv(h, 0, 3, stride, "relu6", depthwise=True)
        h = t.conv(h, cout, 1, 1, None)
        y = t.binary("ADD", y, h) if stride == 1 and cin == cout else h
        cin = cout
    y = t.conv(y, 32, 1, 1, "relu6")
    y = t.mean(y, [1, 2], False)
    return t, t.finish([t.fully_connected(y, classes)])


def resnet18(size=32, width=8, classes=10):
    """ResNet-18's stem and four stages of two basic blocks, as TFLite ops."""
    t = Twin(2)
    x = t.input("input", (1, size, size, 3))
    y = t.max_pool(t.conv(x, width, 7, 2, "relu"), 3, 2)
    cin = width
    for stage, cout in enumerate([width, 2 * width, 4 * width, 8 * width]):
        for block in range(2):
            stride = 2 if stage > 0 and block == 0 else 1
            h = t.conv(y, cout, 3, stride, "relu")
            h = t.conv(h, cout, 3, 1, None)
            short = t.conv(y, cout, 1, stride, None) if stride != 1 or cin != cout else y
            y = t.binary("ADD", h, short, "relu")
            cin = cout
    y = t.mean(y, [1, 2], False)
    return t, t.finish([t.fully_connected(y, classes)])


def _layer_norm(t, x, hidden):
    mu = t.mean(x, [2], True)
    var = t.mean(t.binary("SQUARED_DIFFERENCE", x, mu), [2], True)
    inv = t.unary("RSQRT", t.binary("ADD", var, t.const(np.array([1e-6], "float32"))))
    y = t.binary("MUL", t.binary("SUB", x, mu), inv)
    gamma = t.const(np.linspace(0.5, 1.5, hidden).astype("float32"))
    return t.binary("ADD", t.binary("MUL", y, gamma),
                    t.const(np.linspace(-0.1, 0.1, hidden).astype("float32")))


def bert_layer(seq=8, hidden=32, heads=4, ffn=64):
    """One BERT encoder layer (attention, LayerNorm from MEAN/RSQRT, GELU FFN) as TFLite ops."""
    t = Twin(3)
    x = t.input("x", (1, seq, hidden))
    d = hidden // heads

    def heads_of(v):
        return t.transpose(t.reshape(v, (seq, heads, d)), (1, 0, 2))

    q = heads_of(t.fully_connected(x, hidden, keep_dims=True))
    k = heads_of(t.fully_connected(x, hidden, keep_dims=True))
    v = heads_of(t.fully_connected(x, hidden, keep_dims=True))
    scores = t.binary("MUL", t.batch_matmul(q, k, adj_y=True),
                      t.const(np.array([1 / np.sqrt(d)], "float32")))
    ctx = t.batch_matmul(t.softmax(scores), v)
    ctx = t.reshape(t.transpose(ctx, (1, 0, 2)), (1, seq, hidden))
    x = _layer_norm(t, t.binary("ADD", x, t.fully_connected(ctx, hidden, keep_dims=True)),
                    hidden)
    h = t.unary("GELU", t.fully_connected(x, ffn, keep_dims=True))
    y = _layer_norm(t, t.binary("ADD", x, t.fully_connected(h, hidden, keep_dims=True)),
                    hidden)
    return t, t.finish([y])

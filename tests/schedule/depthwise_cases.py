"""Depthwise conv cases shared by the depthwise schedule tests: the fused Relay function (conv,
bias, an epilogue), its lowered PrimFunc, a float64 numpy reference, and one run of the built
kernel against it."""

import math

import numpy as np

import minitvm as tvm
from minitvm import codegen, relay
from minitvm.relay.backend import te_compiler
from minitvm.schedule import lower_te
from minitvm.tir.stmt_functor import post_order_visit

_erf = np.vectorize(math.erf)


def relay_te(params, body):
    """``relay.Function(params, body)`` type-inferred and turned into TE: (inputs, _, outputs)."""
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function(params, body)))
    return te_compiler.build_te(mod["main"])


def depthwise_conv(shape, k=3, stride=1, pad=1, dilation=1, mult=1, epilogue="none", bias=None):
    """A fused depthwise ``k x k`` conv of ``shape`` (channel multiplier ``mult``), a bias added
    (``bias``; by default when there is an epilogue), then ``epilogue``: none, relu, relu6,
    hardswish (reads the conv twice), silu, gelu, or mixer (``x + (gelu(conv) * s + t)``,
    ConvMixer's residual block with its batch norm folded). (TE inputs, outputs, Relay params)."""
    c = shape[1]
    x = relay.var("x", shape=shape)
    w = relay.var("w", shape=(c * mult, 1, k, k))
    y = relay.nn.conv2d(x, w, strides=(stride, stride), padding=(pad, pad),
                        dilation=(dilation, dilation), groups=c)
    params = [x, w]
    if epilogue != "none" if bias is None else bias:
        b = relay.var("b", shape=(1, c * mult, 1, 1))
        params.append(b)
        y = y + b
    if epilogue == "relu":
        y = relay.nn.relu(y)
    elif epilogue == "relu6":
        y = relay.clip(y, 0.0, 6.0)
    elif epilogue == "hardswish":
        y = y * relay.clip(y + relay.const(3.0), 0.0, 6.0) / relay.const(6.0)
    elif epilogue == "silu":
        y = y * relay.sigmoid(y)
    elif epilogue in ("gelu", "mixer"):
        y = y * relay.const(0.5) * (relay.const(1.0) + relay.erf(y * relay.const(0.5 ** 0.5)))
    if epilogue == "mixer":
        s, t = relay.var("s", shape=(1, c, 1, 1)), relay.var("t", shape=(1, c, 1, 1))
        params += [s, t]
        y = x + (y * s + t)
    ins, _, outs = relay_te(params, y)
    return ins, outs, params


def lower(shape, **kw):
    """``depthwise_conv(shape, **kw)`` lowered: (PrimFunc, workspace bytes)."""
    ins, outs, _ = depthwise_conv(shape, **kw)
    return lower_te(ins, outs, "f")


def reference(x, w, stride, pad, dilation, mult, bias=None, epilogue="none", s=None, t=None):
    """``depthwise_conv``'s result in float64."""
    n, c, h, wd = x.shape
    k = w.shape[2]
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    xp = np.repeat(xp, mult, axis=1)  # output channel o reads input channel o // mult
    span = dilation * (k - 1) + 1
    oh = (h + 2 * pad - span) // stride + 1
    ow = (wd + 2 * pad - span) // stride + 1
    y = np.zeros((n, c * mult, oh, ow))
    for ky in range(k):
        for kx in range(k):
            y0, x0 = ky * dilation, kx * dilation
            win = xp[:, :, y0:y0 + stride * (oh - 1) + 1:stride, x0:x0 + stride * (ow - 1) + 1:stride]
            y += win * w[None, :, 0, ky, kx, None, None]
    if bias is not None:
        y = y + bias
    if epilogue == "relu":
        y = np.maximum(y, 0)
    elif epilogue == "relu6":
        y = np.clip(y, 0, 6)
    elif epilogue == "hardswish":
        y = y * np.clip(y + 3, 0, 6) / 6
    elif epilogue == "silu":
        y = y / (1 + np.exp(-y))
    elif epilogue in ("gelu", "mixer"):
        y = 0.5 * y * (1 + _erf(y / math.sqrt(2)))
    if epilogue == "mixer":
        y = x + (y * s + t)
    return y


def nodes(root) -> list:
    """Every statement and expression under ``root``, children first."""
    out = []
    post_order_visit(root, out.append)
    return out


def run(shape, rng, k=3, stride=1, pad=1, dilation=1, mult=1, epilogue="none", bias=None,
        wscale=1.0):
    """Build ``depthwise_conv`` and run it on random inputs (weights scaled by ``wscale``):
    (its output, the reference, the PrimFunc)."""
    prim, ws = lower(shape, k=k, stride=stride, pad=pad, dilation=dilation, mult=mult,
                     epilogue=epilogue, bias=bias)
    f = codegen.build(prim)["f"]
    c = shape[1]
    x = rng.standard_normal(shape, dtype=np.float32)
    w = rng.standard_normal((c * mult, 1, k, k), dtype=np.float32) * np.float32(wscale)
    args = [x, w]
    b = None
    if epilogue != "none" if bias is None else bias:
        b = rng.standard_normal((1, c * mult, 1, 1), dtype=np.float32)
        args.append(b)
    extra = [rng.standard_normal((1, c, 1, 1), dtype=np.float32) for _ in range(2)] \
        if epilogue == "mixer" else []
    want = reference(x, w, stride, pad, dilation, mult, b, epilogue, *extra)
    out = np.full(want.shape, np.nan, np.float32)
    f(*args, *extra, out, *([np.zeros(max(ws, 64), np.uint8)] if ws else []))
    return out, want, prim

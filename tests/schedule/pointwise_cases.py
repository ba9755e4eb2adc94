"""What the 1x1 conv schedule tests share: a 1x1 conv with one of several epilogues, built at
opt_level 3 beside its float64 numpy result (``schedule/conv_pointwise.py`` takes it on AVX2
and AVX-512 machines)."""

import numpy as np
from conv_reference import conv_ref

import minitvm as tvm
from minitvm import relay


def _sigmoid(v):
    return 1.0 / (1.0 + np.exp(-v))


def _silu(z):
    return z * relay.sigmoid(z)


def _bias(y, b):
    return y + b.reshape(1, -1, 1, 1)


EPILOGUES = {
    # name: (relay (conv, bias, residual) -> out, numpy (conv, bias, residual) -> out)
    "none": (lambda y, b, r: y, lambda y, b, r: y),
    "bias": (lambda y, b, r: relay.nn.bias_add(y, b), lambda y, b, r: _bias(y, b)),
    "relu": (lambda y, b, r: relay.nn.relu(relay.nn.bias_add(y, b)),
             lambda y, b, r: np.maximum(_bias(y, b), 0)),
    "bias_relu": (lambda y, b, r: relay.nn.relu(relay.nn.bias_add(y, b)),
                  lambda y, b, r: np.maximum(_bias(y, b), 0)),
    "bias_clip": (lambda y, b, r: relay.clip(relay.nn.bias_add(y, b), 0.0, 6.0),
                  lambda y, b, r: np.clip(_bias(y, b), 0, 6)),
    "silu": (lambda y, b, r: _silu(relay.nn.bias_add(y, b)),
             lambda y, b, r: _bias(y, b) * _sigmoid(_bias(y, b))),
    "residual": (lambda y, b, r: relay.nn.bias_add(y, b) + r, lambda y, b, r: _bias(y, b) + r),
    "residual_relu": (lambda y, b, r: relay.nn.relu(relay.nn.bias_add(y, b) + r),
                      lambda y, b, r: np.maximum(_bias(y, b) + r, 0)),
    "swish": (lambda y, b, r: y * relay.sigmoid(y), lambda y, b, r: y * _sigmoid(y)),
    "reversed": (lambda y, b, r: relay.nn.relu(relay.reverse(y, axis=3)),  # other position
                 lambda y, b, r: np.maximum(y[..., ::-1], 0)),
}


def build_pointwise(shape, o, epi, strides=(1, 1), pad=0, const_weight=True, seed=0):
    """A Relay 1x1 conv (+ epilogue ``epi``, a name of ``EPILOGUES``) built at opt_level 3:
    (lib, feeds, expected output). Weights are scaled by 1/sqrt(C) so that the sums stay near
    unit size whatever the channel count; a residual epilogue adds an input ``r``, weights that
    are not ``const_weight`` an input ``w``."""
    rng = np.random.default_rng(seed)
    wv = (rng.standard_normal((o, shape[1], 1, 1)) / np.sqrt(shape[1])).astype("float32")
    bv = rng.standard_normal(o).astype("float32")
    xv = rng.standard_normal(shape).astype("float32")
    oh = (shape[2] + 2 * pad - 1) // strides[0] + 1
    ow = (shape[3] + 2 * pad - 1) // strides[1] + 1
    rv = rng.standard_normal((shape[0], o, oh, ow)).astype("float32")
    x, r, wvar = (relay.var("x", shape=shape), relay.var("r", shape=rv.shape),
                  relay.var("w", shape=wv.shape))
    y = relay.nn.conv2d(x, relay.const(wv) if const_weight else wvar, kernel_size=(1, 1),
                        channels=o, strides=strides, padding=(pad, pad))
    build, ref = EPILOGUES[epi]
    args, feeds = [x], {"x": xv}
    if epi.startswith("residual"):
        args.append(r)
        feeds["r"] = rv
    if not const_weight:
        args.append(wvar)
        feeds["w"] = wv
    body = build(y, relay.const(bv), r)
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(tvm.IRModule.from_expr(relay.Function(args, body)), target="llvm")
    want = conv_ref(xv, wv, strides, (pad, pad, pad, pad))
    return lib, feeds, ref(want, bv, rv)

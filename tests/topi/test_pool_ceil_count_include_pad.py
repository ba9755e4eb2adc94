"""Average pooling whose ceil-mode windows hang over the padded border, with dilation: the
divisor counts the padding (count_include_pad) but never the overhang, the same in Relay's
interpreter, Relay's compiled kernels and Relax's legalized kernels (1-D, 2-D, 3-D). Compiled
Relay once divided by the undilated window and Relax by the whole window."""

import itertools

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, relay


def brute_avg_pool(x, k, s, d, pads, ceil, include_pad):
    """NC + spatial dims; ``pads`` = (before..., after...)."""
    nd = len(k)
    before, after = pads[:nd], pads[nd:]
    sizes = x.shape[2:]
    outs = []
    for q in range(nd):
        span = (k[q] - 1) * d[q] + 1
        num = sizes[q] + before[q] + after[q] - span
        o = (-(-num // s[q]) if ceil else num // s[q]) + 1
        if ceil and (o - 1) * s[q] >= sizes[q] + before[q]:
            o -= 1  # the last window must start inside the input or its leading padding
        outs.append(o)
    out = np.zeros(x.shape[:2] + tuple(outs), x.dtype)
    for idx in itertools.product(*(range(o) for o in outs)):
        total, count = np.zeros(x.shape[:2], np.float64), 1
        taps_per_axis = []
        for q in range(nd):
            pos = [idx[q] * s[q] - before[q] + t * d[q] for t in range(k[q])]
            inside = [p for p in pos if 0 <= p < sizes[q]]
            padded = [p for p in pos if -before[q] <= p < sizes[q] + after[q]]
            taps_per_axis.append(inside)
            count *= len(padded) if include_pad else max(len(inside), 1)
        for p in itertools.product(*taps_per_axis):
            total += x[(slice(None), slice(None)) + p]
        out[(slice(None), slice(None)) + idx] = total / count
    return out


CASES = [  # spatial shape, kernel, stride, dilation, padding (before..., after...)
    ((11,), (3,), (2,), (2,), (1, 1)),
    ((13, 12), (5, 5), (3, 3), (2, 2), (0, 0, 0, 0)),
    ((10, 9), (3, 3), (2, 2), (1, 1), (1, 1, 1, 1)),
    ((9, 10), (3, 2), (2, 3), (1, 2), (1, 0, 0, 1)),
    ((7, 8, 9), (3, 3, 3), (2, 2, 2), (2, 1, 1), (1, 0, 1, 1, 0, 1)),
]
OPS = {1: "avg_pool1d", 2: "avg_pool2d", 3: "avg_pool3d"}


@pytest.mark.parametrize("include_pad", [True, False])
@pytest.mark.parametrize("shape,k,s,d,pads", CASES)
def test_ceil_mode_divisors_agree(shape, k, s, d, pads, include_pad):
    nd = len(shape)
    x_np = np.random.default_rng(nd).standard_normal((1, 2) + shape).astype("float32")
    want = brute_avg_pool(x_np, k, s, d, pads, True, include_pad)
    kw = dict(pool_size=k, strides=s, dilation=d, padding=pads, ceil_mode=True,
              count_include_pad=include_pad)

    x = relay.var("x", shape=x_np.shape)
    mod = tvm.IRModule.from_expr(relay.Function([x], getattr(relay.nn, OPS[nd])(x, **kw)))
    for kind in ("debug", "graph"):
        got = relay.create_executor(kind, mod=mod, target="llvm").evaluate()(x_np).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=f"relay {kind}")

    bb = relax.BlockBuilder()
    xv = relax.Var("x", relax.TensorStructInfo(x_np.shape, "float32"))
    with bb.function("main", [xv]):
        with bb.dataflow():
            y = bb.emit_output(getattr(relax.op.nn, OPS[nd])(xv, **kw))
        bb.emit_func_output(y)
    vm = relax.VirtualMachine(relax.build(bb.get(), "llvm"), tvm.cpu())
    got = vm["main"](tvm.nd.array(x_np)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg="relax")

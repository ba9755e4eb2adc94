"""uint8 x int8 products at their extremes (255 x 127, 255 x -128: pairs past int16, where a
``vpmaddubsw`` kernel saturates, as onnxruntime's do on CPUs without VNNI) through qnn.dense
and qnn.conv2d built for the host and for an AVX2 CPU (``-mcpu=haswell``: AVX2 code on any
host): the exact integer results."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay

TARGETS = ["llvm", "llvm -mcpu=haswell"]


def _c(v, dtype="float32"):
    return relay.const(np.asarray(v, dtype))


def _extremes(shape, rng):
    """Data of 255 but for a few 0s; weights of +127 / -128 (their pairs' sums pass int16)."""
    x = np.where(rng.random(shape[0]) < 0.9, 255, 0).astype("uint8")
    w = np.where(rng.random(shape[1]) < 0.5, 127, -128).astype("int8")
    return x, w


def _run(fn, target, x):
    with tvm.transform.PassContext(opt_level=3):
        return relay.create_executor("graph", mod=tvm.IRModule.from_expr(fn),
                                     target=target).evaluate()(x).numpy()


@pytest.mark.parametrize("target", TARGETS)
def test_dense_of_extreme_products_is_exact(target):
    rng = np.random.default_rng(0)
    xv, wv = _extremes(((4, 64), (24, 64)), rng)
    x = relay.var("x", shape=xv.shape, dtype="uint8")
    y = relay.qnn.op.dense(x, _c(wv, "int8"), _c(0, "int32"), _c(0, "int32"), _c(1.0),
                           _c(1.0), units=24, out_dtype="int32")
    got = _run(relay.Function([x], y), target, xv)
    np.testing.assert_array_equal(got, xv.astype(np.int64) @ wv.astype(np.int64).T)


@pytest.mark.parametrize("target", TARGETS)
def test_conv_of_extreme_products_is_exact(target):
    rng = np.random.default_rng(1)
    xv, wv = _extremes(((1, 32, 6, 6), (16, 32, 3, 3)), rng)
    x = relay.var("x", shape=xv.shape, dtype="uint8")
    y = relay.qnn.op.conv2d(x, _c(wv, "int8"), _c(0, "int32"), _c(0, "int32"), _c(1.0),
                            _c(1.0), kernel_size=(3, 3), channels=16, out_dtype="int32")
    got = _run(relay.Function([x], y), target, xv)
    xw = np.lib.stride_tricks.sliding_window_view(xv.astype(np.int64), (3, 3), axis=(2, 3))
    want = np.einsum("nchwij,ocij->nohw", xw, wv.astype(np.int64))
    np.testing.assert_array_equal(got, want)

"""A pool's fused elementwise epilogue (``lower._emit_pool``, ``pool.emit``'s ``epi``): the
direct form stores the epilogue's value (Xception's max pool + residual add in one pass, no
pooled temporary); where the direct form does not apply (the row form, adaptive bins) the
pool goes to a temporary the epilogue then reads. Values against numpy, NaN through the add."""

import numpy as np
import pytest
from relay_build import build_runner
from test_pool_direct import _buffer_names, _pool_prims, _ref

import minitvm as tvm
from minitvm import relay
from minitvm.backend import kernel_cache
from minitvm.contrib import graph_executor
from minitvm.schedule import pool
from minitvm.schedule.common import vector_isa

CASES = [  # shape, kind, pool size, strides, padding
    ((1, 8, 16, 16), "max", (3, 3), (2, 2), (1, 1, 1, 1)),   # Xception's
    ((1, 4, 13, 27), "max", (3, 3), (2, 2), (0, 0, 0, 0)),
    ((1, 5, 9, 11), "max", (3, 3), (1, 1), (1, 1, 1, 1)),
    ((1, 6, 12, 20), "avg", (2, 2), (2, 2), (0, 0, 0, 0)),
]


def _build(shape, kind, k, s, pad, residual):
    x = relay.var("x", shape=shape)
    if kind == "max":
        y = relay.nn.max_pool2d(x, k, s, padding=pad)
    else:
        y = relay.nn.avg_pool2d(x, k, s, padding=pad)
    return build_runner(x, relay.nn.relu(relay.add(y, relay.const(residual))))


def _case(shape, kind, k, s, pad, rng):
    want = _ref(np.zeros(shape), kind, k, s, (1, 1), pad)
    residual = rng.standard_normal(want.shape).astype("float32")
    xv = rng.standard_normal(shape).astype("float32")
    return xv, residual


@pytest.mark.parametrize("form", ["direct", "rows"])
@pytest.mark.parametrize("shape,kind,k,s,pad", CASES)
def test_pool_add_relu_matches_numpy(shape, kind, k, s, pad, form, rng, monkeypatch):
    if form == "rows":
        monkeypatch.setattr(pool, "DIRECT_MAX_TAPS", 0)
    kernel_cache.clear_cache()
    try:
        xv, residual = _case(shape, kind, k, s, pad, rng)
        lib, run = _build(shape, kind, k, s, pad, residual)
    finally:
        kernel_cache.clear_cache()
    want = np.maximum(_ref(xv, kind, k, s, (1, 1), pad) + residual, 0)
    np.testing.assert_allclose(run(xv), want, rtol=1e-5, atol=1e-5)
    (prim,) = _pool_prims(lib)
    # the direct form stores the epilogue's values: no pooled temporary (the row form's pool
    # goes to one)
    direct = form == "direct" and pool.DIRECT[vector_isa()]
    assert any(n.endswith("pool2d") for n in _buffer_names(prim)) == (not direct)


def test_nan_through_the_add(rng):
    shape, k, s, pad = CASES[0][0], (3, 3), (2, 2), (1, 1, 1, 1)
    kernel_cache.clear_cache()
    xv, residual = _case(shape, "max", k, s, pad, rng)
    _, run = _build(shape, "max", k, s, pad, residual)
    xv[0, 0, 5, 6] = np.nan  # in the windows of output rows 2 and 3, column 3
    got = run(xv)
    hit = np.zeros(got.shape, bool)
    hit[0, 0, 2:4, 3] = True
    np.testing.assert_array_equal(np.isnan(got), hit)


def test_adaptive_pool_epilogue_in_a_pass_of_its_own(rng):
    """Adaptive bins (``emit_bins``) take no epilogue: the pool to a temporary, then the add."""
    x = relay.var("x", shape=(1, 4, 10, 9))
    residual = rng.standard_normal((1, 4, 3, 4)).astype("float32")
    y = relay.add(relay.nn.adaptive_max_pool2d(x, (3, 4)), relay.const(residual))
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(tvm.IRModule.from_expr(relay.Function([x], y)), target="llvm")
    g = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    xv = rng.standard_normal((1, 4, 10, 9)).astype("float32")
    g.set_input("x", xv)
    g.run()
    want = np.empty((1, 4, 3, 4), "float32")
    for i in range(3):
        for j in range(4):
            ys, xs = slice(i * 10 // 3, -(-(i + 1) * 10 // 3)), slice(j * 9 // 4, -(-(j + 1) * 9 // 4))
            want[:, :, i, j] = xv[:, :, ys, xs].max(axis=(2, 3))
    np.testing.assert_array_equal(g.get_output(0).numpy(), want + residual)
    (prim,) = _pool_prims(lib)
    names = _buffer_names(prim)
    assert "pool_bin_row" in names and any(n.endswith("pool2d") for n in names)

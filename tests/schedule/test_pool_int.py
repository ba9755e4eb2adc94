"""Integer max pools on the pooling schedule (``schedule/pool.py``): the uint8 / int8 max
pools of quantized (QOperator) models, and wider integers, against numpy on the window
shapes of the float tests: the direct form and the row form, AVX2 and AVX-512 code, through
Relay and through Relax (LegalizeOps' blocks raised by ``raise_pool``). An integer average
pool stays on the generic reduction."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.backend import kernel_cache
from minitvm.contrib import graph_executor
from minitvm.schedule import pool, pool_symbolic

CASES = [
    # shape, pool size, strides, dilation, padding (top, left, bottom, right), ceil
    ((1, 16, 32, 32), (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), False),  # QOperator ResNet's
    ((2, 3, 13, 47), (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), False),
    ((1, 5, 11, 70), (2, 3), (1, 1), (1, 1), (0, 1, 0, 1), False),
    ((1, 4, 15, 23), (3, 3), (3, 3), (1, 1), (1, 0, 2, 1), True),
    ((1, 3, 10, 29), (5, 5), (4, 4), (1, 1), (2, 2, 2, 2), False),
    ((1, 2, 12, 12), (3, 3), (1, 2), (2, 2), (2, 1, 2, 1), False),     # dilated
    ((1, 3, 6, 4), (2, 2), (2, 2), (1, 1), (0, 0, 0, 0), False),
    ((1, 2, 16, 16), (7, 7), (1, 1), (1, 1), (3, 3, 3, 3), False),     # rows first
]
DTYPES = ["uint8", "int8", "int16", "int32"]


def _ref(x, k, s, d, pad, ceil):
    """numpy: the max over each window's in-bounds taps (int64)."""
    n, c, h, w = x.shape
    pt, pl, pb, pr = pad

    def size(n_, k_, s_, d_, p0, p1):
        span = n_ + p0 + p1 - (k_ - 1) * d_ - 1
        o = (-(-span // s_) if ceil else span // s_) + 1
        return o - 1 if ceil and (o - 1) * s_ >= n_ + p0 else o

    oh, ow = size(h, k[0], s[0], d[0], pt, pb), size(w, k[1], s[1], d[1], pl, pr)
    out = np.zeros((n, c, oh, ow), "int64")
    for i in range(oh):
        for j in range(ow):
            ys = [y for y in (i * s[0] + a * d[0] - pt for a in range(k[0])) if 0 <= y < h]
            xs = [v for v in (j * s[1] + b * d[1] - pl for b in range(k[1])) if 0 <= v < w]
            out[:, :, i, j] = x[:, :, ys][:, :, :, xs].astype("int64").max(axis=(2, 3))
    return out


def _data(rng, shape, dtype):
    info = np.iinfo(dtype)
    lo, hi = (info.min, info.max) if info.bits <= 16 else (-2**31, 2**31 - 1)
    x = rng.integers(lo, hi, shape, endpoint=True).astype(dtype)
    x.reshape(-1)[:3] = [info.min, info.max, 0]  # the extremes (the padding is the lowest)
    return x


def _relay_run(shape, dtype, k, s, d, pad, ceil, xv):
    x = relay.var("x", shape=shape, dtype=dtype)
    y = relay.nn.max_pool2d(x, k, s, d, pad, ceil_mode=ceil)
    kernel_cache.clear_cache()
    try:
        with tvm.transform.PassContext(opt_level=3):
            lib = relay.build(tvm.IRModule.from_expr(relay.Function([x], y)), target="llvm")
    finally:
        kernel_cache.clear_cache()
    g = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    g.set_input("x", xv)
    g.run()
    return g.get_output(0).numpy()


@pytest.fixture
def forms(monkeypatch):
    """The forms the pool schedule emitted ("flat" / "direct" / "rows"; "rows first": a large
    window on ``pool_symbolic``'s form), recorded."""
    seen = []
    flat, direct, rows, first = pool.emit_flat, pool.emit_direct, pool.emit_rows, \
        pool_symbolic.emit

    def spy_flat(*a, **kw):
        out = flat(*a, **kw)
        if out is not None:
            seen.append("flat")
        return out

    def spy_direct(*a, **kw):
        out = direct(*a, **kw)
        if out is not None:
            seen.append("direct")
        return out

    def spy_rows(*a, **kw):
        seen.append("rows")
        return rows(*a, **kw)

    def spy_first(*a, **kw):
        seen.append("rows first")
        return first(*a, **kw)

    monkeypatch.setattr(pool, "emit_flat", spy_flat)
    monkeypatch.setattr(pool, "emit_direct", spy_direct)
    monkeypatch.setattr(pool, "emit_rows", spy_rows)
    monkeypatch.setattr(pool_symbolic, "emit", spy_first)
    return seen


@pytest.mark.parametrize("isa", ["avx2", "avx512"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", CASES)
def test_integer_max_pool_matches_numpy(case, dtype, isa, forms, rng, monkeypatch):
    shape, k, s, d, pad, ceil = case
    monkeypatch.setattr(pool, "vector_isa", lambda: isa)
    xv = _data(rng, shape, dtype)
    out = _relay_run(shape, dtype, k, s, d, pad, ceil, xv)
    assert out.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(out.astype("int64"), _ref(xv, k, s, d, pad, ceil))
    # (2x2 / 2 windows tiling the 6x4 plane, rows of 2: the flat form where it is on)
    flat = pool.FLAT[isa] and k == s == (2, 2) and shape[2:] == (6, 4)
    assert forms == (["rows first"] if k == (7, 7) else ["flat"] if flat else ["direct"])


@pytest.mark.parametrize("dtype", ["uint8", "int8"])
def test_row_form_with_direct_off(dtype, forms, rng, monkeypatch):
    shape, k, s, d, pad, ceil = CASES[1]
    monkeypatch.setitem(pool.DIRECT, pool.vector_isa(), False)
    xv = _data(rng, shape, dtype)
    out = _relay_run(shape, dtype, k, s, d, pad, ceil, xv)
    np.testing.assert_array_equal(out.astype("int64"), _ref(xv, k, s, d, pad, ceil))
    assert forms == ["rows"]


def test_integer_avg_pool_stays_generic(forms, rng):
    shape = (1, 3, 9, 9)
    x = relay.var("x", shape=shape, dtype="int32")
    y = relay.nn.avg_pool2d(x, (3, 3), (2, 2), (1, 1), (1, 1, 1, 1))
    xv = rng.integers(-1000, 1000, shape).astype("int32")
    kernel_cache.clear_cache()
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(tvm.IRModule.from_expr(relay.Function([x], y)), target="llvm")
    g = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    g.set_input("x", xv)
    g.run()
    assert g.get_output(0).numpy().dtype == np.int32
    assert forms == []


@pytest.mark.parametrize("dtype", ["uint8", "int8"])
def test_relax_integer_max_pool(dtype, forms, rng):
    """Relax's LegalizeOps block of an integer max pool, raised to the tagged stage, takes the
    pool schedule too."""
    from minitvm import relax
    from minitvm.relax.frontend.onnx import from_onnx

    pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    shape, k, s, d, pad, ceil = CASES[0]
    t = TensorProto.UINT8 if dtype == "uint8" else TensorProto.INT8
    node = helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=list(k), strides=list(s),
                            pads=[pad[0], pad[1], pad[2], pad[3]])
    graph = helper.make_graph([node], "p", [helper.make_tensor_value_info("x", t, shape)],
                              [helper.make_tensor_value_info("y", t, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    xv = _data(rng, shape, dtype)
    kernel_cache.clear_cache()
    try:
        with tvm.transform.PassContext(opt_level=3):
            ex = relax.build(from_onnx(model), "llvm")
    finally:
        kernel_cache.clear_cache()
    out = relax.VirtualMachine(ex, tvm.cpu())["main"](tvm.nd.array(xv)).numpy()
    np.testing.assert_array_equal(out.astype("int64"), _ref(xv, k, s, d, pad, ceil))
    assert forms == ["direct"]


@pytest.mark.parametrize("dtype", ["uint8", "int8"])
def test_integer_adaptive_max_pool(dtype, rng):
    """An adaptive max pool by its bins (``emit_bins``) on integers."""
    shape = (1, 4, 10, 13)
    x = relay.var("x", shape=shape, dtype=dtype)
    y = relay.nn.adaptive_max_pool2d(x, (3, 4))
    xv = _data(rng, shape, dtype)
    kernel_cache.clear_cache()
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(tvm.IRModule.from_expr(relay.Function([x], y)), target="llvm")
    g = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    g.set_input("x", xv)
    g.run()
    out = g.get_output(0).numpy()
    want = np.zeros((1, 4, 3, 4), "int64")
    for i in range(3):
        for j in range(4):
            ys = slice(i * 10 // 3, -(-(i + 1) * 10 // 3))
            xs = slice(j * 13 // 4, -(-(j + 1) * 13 // 4))
            want[:, :, i, j] = xv[:, :, ys, xs].astype("int64").max(axis=(2, 3))
    assert out.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(out.astype("int64"), want)

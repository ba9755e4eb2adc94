"""Native window and adaptive pools (``topi/pooling.py``, scheduled by ``schedule/pool.py``):
nn.max_pool1d / avg_pool1d (NCW and NWC, padding, ceil mode, dilation, count_include_pad),
2-D pools in NHWC, and nn.adaptive_{max,avg}_pool{1,2}d with divisible, non-divisible and
upsampling sizes, each built through Relay against a brute-force numpy reference, with every
kernel native; which schedule they take; and clear errors for bad attributes."""

import itertools

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay, te, topi
from minitvm.backend import kernel_cache
from minitvm.contrib import graph_executor
from minitvm.ir.type import TensorType
from minitvm.relay.op.nn import attrs as A
from minitvm.relay.op.nn._pool_nd import AdaptivePool1DAttrs
from minitvm.runtime import threadpool
from minitvm.schedule import pool
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import walk_stmts

LOWEST = np.finfo("float32").min


@pytest.fixture
def rng():
    return np.random.default_rng(0)


# ------------------------------------------------------------------ references
def out_size(n, k, s, d, before, after, ceil):
    span = n + before + after - (k - 1) * d - 1
    return (-(-span // s) if ceil else span // s) + 1


def brute_window(x, kind, k, s, d, pads, ceil, include_pad):
    """Window pooling of NC + spatial ``x`` (float64): max over the in-bounds taps (lowest
    finite value where none), avg their sum over the taps inside the input (or inside the
    padded input with ``include_pad``)."""
    nd = len(k)
    before, after = pads[:nd], pads[nd:]
    sizes = x.shape[2:]
    outs = [out_size(sizes[q], k[q], s[q], d[q], before[q], after[q], ceil) for q in range(nd)]
    out = np.zeros(x.shape[:2] + tuple(outs))
    for idx in itertools.product(*(range(o) for o in outs)):
        taps, count = [], 1
        for q in range(nd):
            pos = [idx[q] * s[q] - before[q] + t * d[q] for t in range(k[q])]
            taps.append([p for p in pos if 0 <= p < sizes[q]])
            lo, hi = (-before[q], sizes[q] + after[q]) if include_pad else (0, sizes[q])
            count *= sum(lo <= p < hi for p in pos)
        vals = [x[(slice(None), slice(None)) + p] for p in itertools.product(*taps)]
        at = (slice(None), slice(None)) + idx
        if kind == "max":
            out[at] = np.max(vals, axis=0) if vals else LOWEST
        else:
            out[at] = np.sum(vals, axis=0) / max(count, 1) if vals else 0.0
    return out


def brute_adaptive(x, kind, outs):
    """Adaptive pooling of NC + spatial ``x``: cell i of o over [floor(i n/o), ceil((i+1) n/o))."""
    sizes = x.shape[2:]
    out = np.zeros(x.shape[:2] + tuple(outs))
    red = np.max if kind == "max" else np.mean
    for idx in itertools.product(*(range(o) for o in outs)):
        sl = tuple(slice(i * n // o, -(-(i + 1) * n // o)) for i, n, o in zip(idx, sizes, outs))
        axes = tuple(range(2, x.ndim))
        out[(slice(None), slice(None)) + idx] = red(x[(slice(None), slice(None)) + sl], axis=axes)
    return out


# ------------------------------------------------------------------ build and run
def _to_layout(a, layout):
    """NC + spatial ``a`` in ``layout`` (channels first, or last: NWC / NHWC)."""
    return np.ascontiguousarray(np.moveaxis(a, 1, -1)) if layout[-1] == "C" else a


def _from_layout(a, layout):
    return np.moveaxis(a, -1, 1) if layout[-1] == "C" else a


def _build(shape, make, dtype="float32"):
    x = relay.var("x", shape=shape, dtype=dtype)
    mod = tvm.IRModule.from_expr(relay.Function([x], make(x)))
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm")
    kinds = {name: k.kind for name, k in lib.get_lib().kernels.items()}
    assert set(kinds.values()) == {"native"}, kinds
    return lib


def _run(lib, xv, threads=None):
    old = threadpool.get_num_threads()
    if threads:
        threadpool.set_num_threads(threads)
    try:
        g = graph_executor.GraphModule(lib["default"](tvm.cpu()))
        g.set_input("x", xv)
        g.run()
        return g.get_output(0).numpy()
    finally:
        threadpool.set_num_threads(old)


def _buffer_names(lib) -> set:
    names = set()
    for k in lib.get_lib().kernels.values():
        names |= {
            s.buffer.name for s in walk_stmts(k.prim_func.body) if isinstance(s, S.DeclBuffer)
        }
    return names


def _pool_call(kind, x, k, s, d, pads, ceil, include_pad, layout):
    nd = len(k)
    fn = getattr(relay.nn, f"{kind}_pool{nd}d")
    kw = dict(pool_size=k, strides=s, dilation=d, padding=pads, layout=layout, ceil_mode=ceil)
    if kind == "avg":
        kw["count_include_pad"] = include_pad
    return fn(x, **kw)


def _check_window(nc_shape, kind, k, s, d, pads, ceil, include_pad, layout, rng):
    xv = rng.standard_normal(nc_shape).astype("float32")
    want = brute_window(xv.astype("float64"), kind, k, s, d, pads, ceil, include_pad)
    xin = _to_layout(xv, layout)
    lib = _build(xin.shape, lambda x: _pool_call(kind, x, k, s, d, pads, ceil, include_pad, layout))
    got = _from_layout(_run(lib, xin), layout)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    return lib


# ------------------------------------------------------------------ 1-D window pools
CASES_1D = [  # width, kernel, stride, dilation, padding (before, after), ceil
    (400, 2, 2, 1, (0, 0), False),  # a Conv1d net's MaxPool1d(2)
    (17, 3, 2, 1, (1, 1), True),
    (16, 3, 1, 2, (2, 2), False),  # dilated
    (33, 5, 3, 1, (2, 1), True),  # asymmetric padding
    (9, 1, 1, 1, (0, 0), False),  # a copy
    (30, 7, 6, 1, (3, 3), False),  # stride 6: the row form
    (12, 4, 4, 1, (0, 0), True),
    (11, 3, 2, 2, (1, 1), True),  # dilated, ceil mode
    (4, 1, 1, 1, (2, 1), False),  # windows of padding only (the generic reduction)
]
WINDOW_1D = [(c, "max", False) for c in CASES_1D] + [
    (c, "avg", cip) for c in CASES_1D for cip in (False, True)
]


@pytest.mark.parametrize("layout", ["NCW", "NWC"])
@pytest.mark.parametrize("case, kind, include_pad", WINDOW_1D)
def test_pool1d_matches_numpy(case, kind, include_pad, layout, rng):
    w, k, s, d, pads, ceil = case
    _check_window((2, 5, w), kind, (k,), (s,), (d,), pads, ceil, include_pad, layout, rng)


@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pool1d_takes_the_pool_schedule(kind, rng):
    """NCW float pools are tagged for the pool schedule: the direct form (no row
    temporaries), and an average is one stage (its sum divided in the store, no sum buffer)."""
    lib = _check_window((1, 8, 64), kind, (3,), (2,), (1,), (1, 1), False, False, "NCW", rng)
    names = _buffer_names(lib)
    assert not {"pool_vrow", "avg_pool1d_sum"} & names


def test_pool1d_two_threads(rng):
    xv = rng.standard_normal((2, 64, 1000)).astype("float32")
    lib = _build(xv.shape, lambda x: relay.nn.max_pool1d(x, (3,), (2,), padding=(1,)))
    want = brute_window(xv.astype("float64"), "max", (3,), (2,), (1,), (1, 1), False, False)
    np.testing.assert_array_equal(_run(lib, xv, threads=2), want.astype("float32"))


@pytest.mark.parametrize("dtype", ["int32", "int8"])
def test_pool1d_integers(dtype, rng):
    """Integer pools (the generic reduction): max, and avg's sum divided with truncation."""
    xv = rng.integers(-50, 50, (1, 3, 21)).astype(dtype)
    got = _run(
        _build(xv.shape, lambda x: relay.nn.max_pool1d(x, (3,), (2,), padding=(1,)), dtype), xv
    )
    ref = topi.get_reference("nn.max_pool1d")
    np.testing.assert_array_equal(
        got, ref(A.MaxPool1DAttrs(pool_size=(3,), strides=(2,), padding=(1,)), [xv], None)
    )
    if dtype == "int32":
        got = _run(
            _build(xv.shape, lambda x: relay.nn.avg_pool1d(x, (4,), (2,), padding=(1,)), dtype), xv
        )
        ref = topi.get_reference("nn.avg_pool1d")
        np.testing.assert_array_equal(
            got, ref(A.AvgPool1DAttrs(pool_size=(4,), strides=(2,), padding=(1,)), [xv], None)
        )


# ------------------------------------------------------------------ 2-D window pools
CASES_2D = [  # shape (NC + HW), kernel, stride, dilation, padding, ceil
    ((1, 4, 13, 17), (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), False),
    ((2, 3, 15, 11), (3, 2), (3, 2), (2, 1), (1, 0, 2, 1), True),
    ((1, 2, 16, 16), (6, 6), (1, 1), (1, 1), (2, 2, 3, 3), False),  # 36 taps: row form
    ((1, 3, 20, 24), (3, 3), (5, 5), (1, 1), (1, 1, 1, 1), True),  # stride 5: row form
]


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize(
    "case, kind, include_pad",
    [(c, "max", False) for c in CASES_2D]
    + [(c, "avg", cip) for c in CASES_2D for cip in (False, True)],
)
def test_pool2d_matches_numpy(case, kind, include_pad, layout, rng):
    shape, k, s, d, pads, ceil = case
    _check_window(shape, kind, k, s, d, pads, ceil, include_pad, layout, rng)


def test_avg_pool2d_is_one_stage(rng):
    """ResNet-style avg pool without the padding counted: one pass, no sum buffer."""
    lib = _check_window(
        (1, 8, 28, 28), "avg", (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), False, False, "NCHW", rng
    )
    assert "avg_pool2d_sum" not in _buffer_names(lib)


# ------------------------------------------------------------------ adaptive pools
ADAPTIVE_2D = [  # input (H, W), output (H, W)
    ((14, 14), (7, 7)),  # VGG's AdaptiveAvgPool2d((7, 7)): kernel = stride = 2
    ((7, 7), (7, 7)),  # a copy
    ((16, 16), (4, 4)),
    ((13, 13), (5, 5)),  # bins of 3 and 4, overlapping
    ((10, 7), (3, 4)),
    ((5, 6), (7, 9)),  # more outputs than inputs
    ((12, 13), (1, 1)),  # global
    ((9, 8), (1, 3)),
]


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("hw, ohw", ADAPTIVE_2D)
def test_adaptive_pool2d_matches_numpy(hw, ohw, kind, layout, rng):
    xv = rng.standard_normal((2, 6, *hw)).astype("float32")
    want = brute_adaptive(xv.astype("float64"), kind, ohw)
    xin = _to_layout(xv, layout)
    fn = getattr(relay.nn, f"adaptive_{kind}_pool2d")
    lib = _build(xin.shape, lambda x: fn(x, ohw, layout=layout))
    np.testing.assert_allclose(_from_layout(_run(lib, xin), layout), want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("layout", ["NCW", "NWC"])
@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("w, o", [(400, 10), (13, 5), (7, 9), (10, 1), (12, 12)])
def test_adaptive_pool1d_matches_numpy(w, o, kind, layout, rng):
    xv = rng.standard_normal((2, 6, w)).astype("float32")
    want = brute_adaptive(xv.astype("float64"), kind, (o,))
    xin = _to_layout(xv, layout)
    fn = getattr(relay.nn, f"adaptive_{kind}_pool1d")
    lib = _build(xin.shape, lambda x: fn(x, o, layout=layout))
    np.testing.assert_allclose(_from_layout(_run(lib, xin), layout), want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kind", ["max", "avg"])
def test_adaptive_bins_schedule_and_its_fallback(kind, rng, monkeypatch):
    """Non-divisible sizes take the bins schedule (a row temporary per output row); with it
    ruled out (``BINS_MAX_TAPS``) the masked generic reduction gives the same numbers."""
    xv = rng.standard_normal((1, 8, 13, 13)).astype("float32")
    want = brute_adaptive(xv.astype("float64"), kind, (5, 5))
    fn = getattr(relay.nn, f"adaptive_{kind}_pool2d")
    lib = _build(xv.shape, lambda x: fn(x, (5, 5)))
    assert "pool_bin_row" in _buffer_names(lib)
    np.testing.assert_allclose(_run(lib, xv), want, rtol=1e-5, atol=1e-6)
    monkeypatch.setattr(pool, "BINS_MAX_TAPS", 0)
    kernel_cache.clear_cache()
    try:
        lib = _build(xv.shape, lambda x: fn(x, (5, 5)))
    finally:
        kernel_cache.clear_cache()
    assert "pool_bin_row" not in _buffer_names(lib)
    np.testing.assert_allclose(_run(lib, xv), want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kind", ["max", "avg"])
def test_adaptive_bins_two_threads(kind, rng):
    """Enough planes for the thread pool: the same numbers on two threads."""
    xv = rng.standard_normal((1, 512, 13, 13)).astype("float32")
    fn = getattr(relay.nn, f"adaptive_{kind}_pool2d")
    lib = _build(xv.shape, lambda x: fn(x, (5, 5)))
    np.testing.assert_allclose(
        _run(lib, xv, threads=2),
        brute_adaptive(xv.astype("float64"), kind, (5, 5)),
        rtol=1e-5,
        atol=1e-6,
    )


def test_adaptive_max_keeps_infinities_and_nan(rng):
    """A bin of -inf gives -inf (no padding value enters an adaptive bin); NaN propagates."""
    xv = rng.standard_normal((1, 2, 13, 13)).astype("float32")
    xv[0, 0, :3, :3] = -np.inf
    xv[0, 1, 12, 12] = np.nan
    got = _run(_build(xv.shape, lambda x: relay.nn.adaptive_max_pool2d(x, (5, 5))), xv)
    assert got[0, 0, 0, 0] == -np.inf and np.isnan(got[0, 1, 4, 4])
    np.testing.assert_array_equal(got, brute_adaptive(xv, "max", (5, 5)).astype("float32"))


# ------------------------------------------------------------------ errors
def _compute(op_name, attrs, in_shape, out_shape):
    x = te.placeholder(in_shape, "float32", "x")
    return topi.get_compute(op_name)(attrs, [x], TensorType(out_shape, "float32"))


@pytest.mark.parametrize(
    "attrs, match",
    [
        (dict(pool_size=(0,)), "pool_size must be positive"),
        (dict(pool_size=(2,), strides=(0,)), "strides must be positive"),
        (dict(pool_size=(2,), dilation=(0,)), "dilation must be positive"),
        (dict(pool_size=(2,), padding=(-1,)), "padding must be non-negative"),
        (dict(pool_size=(2,), padding=(1, 2, 3)), "padding must have"),
        (dict(pool_size=(2, 2)), r"pool_size must have 1 value, got \[2, 2\]"),
        (dict(pool_size=(2,), layout="NCH"), "layout NCH has no W axis"),
    ],
)
def test_pool1d_compute_rejects_bad_attributes(attrs, match):
    with pytest.raises(ValueError, match=match):
        _compute("nn.max_pool1d", A.MaxPool1DAttrs(**attrs), (1, 2, 8), (1, 2, 4))


def test_adaptive_compute_rejects_bad_layout_and_size():
    with pytest.raises(ValueError, match="layout NCW has no H axis"):
        _compute(
            "nn.adaptive_avg_pool2d",
            A.AdaptivePool2DAttrs(output_size=(2, 2), layout="NCW"),
            (1, 2, 8),
            (1, 2, 2),
        )
    with pytest.raises(ValueError, match="cannot pool an axis of 8 to 0"):
        _compute(
            "nn.adaptive_max_pool1d", AdaptivePool1DAttrs(output_size=(0,)), (1, 2, 8), (1, 2, 0)
        )


def test_relay_rejects_bad_pool_attributes():
    x = relay.var("x", shape=(1, 4, 10))
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.nn.avg_pool1d(x, (3,), (0,))))
    with pytest.raises(TypeError, match="strides must be positive"):
        with tvm.transform.PassContext(opt_level=3):
            relay.build(mod, target="llvm")

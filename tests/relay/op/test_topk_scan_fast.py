"""topk (native selection), sort / argsort (numpy references on packed keys), cumsum / cumprod
(native scans) and the roll pattern (slices joined by concatenate) against numpy."""

import itertools

import numpy as np
import pytest
from relay_build import build_run

import minitvm as tvm
from minitvm import relay
from minitvm.relay.backend import te_compiler
from minitvm.schedule import lower as schedule_lower
from minitvm.schedule import pieces
from minitvm.schedule.common import PARALLEL_MIN_WORK, dims_of, is_static, outer_loops, prod_dims
from minitvm.schedule.common import lanes as vector_lanes
from minitvm.topi.reference import algorithm as ref_algorithm
from minitvm.topi.selection import MAX_K
from minitvm.topi.testing import selection_order_python


def _data(kind, shape, dtype, rng):
    if kind == "ties":
        return rng.integers(-2, 3, shape).astype(dtype)
    x = (rng.standard_normal(shape) * 10).astype(dtype)
    if kind == "nan":
        x[rng.random(shape) < 0.3] = np.nan
        x[rng.random(shape) < 0.1] = -np.inf
    return x


# ---------------------------------------------------------------------------------- topk
TOPK_CASES = [
    # shape, axis, k, is_ascend, dtype, data
    ((16, 100), -1, 5, False, "float32", "rand"),
    ((16, 100), -1, 5, True, "float32", "rand"),
    ((3, 17), 1, 3, False, "int32", "ties"),
    ((3, 17), 1, 3, True, "int32", "ties"),
    ((4, 25, 6), 1, 4, False, "float32", "ties"),  # axis not last
    ((9, 5), 0, 2, True, "float64", "rand"),  # first axis
    ((2, 30), -1, 6, False, "float32", "nan"),
    ((2, 30), -1, 6, True, "float64", "nan"),
    ((3, 7), -1, 50, False, "float32", "rand"),  # k larger than the axis
    ((3, 7), -1, 0, True, "float32", "ties"),  # k < 1: the whole axis
    ((2, 80), -1, MAX_K, False, "int8", "ties"),
    ((2, 80), -1, MAX_K + 1, False, "float32", "rand"),  # the heap
    ((2, 80), 1, 0, False, "float32", "ties"),  # the heap, full sort
]


@pytest.mark.parametrize("shape,axis,k,asc,dtype,data", TOPK_CASES)
@pytest.mark.parametrize("idx_dtype", ["int32", "int64"])
def test_topk_both(shape, axis, k, asc, dtype, data, idx_dtype):
    x = _data(data, shape, dtype, np.random.default_rng(len(shape) + k))
    (vals, idx), kinds = build_run(lambda v: relay.topk(
        v, k=k, axis=axis, ret_type="both", is_ascend=asc, dtype=idx_dtype).astuple(), x)
    n = shape[axis]
    kk = n if k < 1 else min(k, n)
    want = np.take(selection_order_python(x, axis, asc), np.arange(kk), axis=axis)
    np.testing.assert_array_equal(idx, want)
    assert idx.dtype == idx_dtype
    np.testing.assert_array_equal(vals, np.take_along_axis(x, want, axis=axis))
    assert kinds == ["native"]


@pytest.mark.parametrize("ret_type", ["values", "indices"])
def test_topk_single_output(ret_type):
    x = np.random.default_rng(1).standard_normal((8, 300)).astype("float32")
    outs, kinds = build_run(lambda v: relay.topk(v, k=7, ret_type=ret_type, dtype="int64"), x)
    assert len(outs) == 1 and kinds == ["native"]
    want = np.argsort(-x, axis=-1, kind="stable")[:, :7]
    if ret_type == "values":
        np.testing.assert_array_equal(outs[0], np.take_along_axis(x, want, axis=-1))
    else:
        np.testing.assert_array_equal(outs[0], want)
        assert outs[0].dtype == "int64"


def test_topk_sorted_input_worst_case():
    """Ascending rows make every element enter the kept set (the insertion path each time)."""
    x = np.tile(np.arange(200, dtype="float32"), (3, 1))
    (vals, idx), kinds = build_run(lambda v: relay.topk(v, k=MAX_K).astuple(), x)
    np.testing.assert_array_equal(idx, np.tile(np.arange(199, 199 - MAX_K, -1), (3, 1)))
    np.testing.assert_array_equal(vals, idx.astype("float32"))
    assert kinds == ["native"]


# ---------------------------------------------------------------------------------- sort
@pytest.mark.parametrize("asc", [True, False])
@pytest.mark.parametrize("dtype,data,axis", [("float32", "ties", -1), ("float32", "nan", 0),
                                             ("int32", "ties", 1), ("float64", "rand", -1),
                                             ("int8", "ties", 0)])
def test_sort_argsort(asc, dtype, data, axis):
    x = _data(data, (6, 40), dtype, np.random.default_rng(7))
    (order,), _ = build_run(lambda v: relay.argsort(v, axis=axis, is_ascend=asc, dtype="int64"), x)
    np.testing.assert_array_equal(order, selection_order_python(x, axis, asc))
    (vals,), _ = build_run(lambda v: relay.sort(v, axis=axis, is_ascend=asc), x)
    want = np.sort(x, axis=axis)
    np.testing.assert_array_equal(vals, want if asc else np.flip(want, axis=axis))


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int8", "int16", "int32",
                                   "int64", "uint8", "uint16", "uint32", "bool"])
def test_ranked_positions_match_stable_argsort(dtype):
    """The packed-key order (<= 32-bit dtypes) is the stable argsort's, extremes included."""
    rng = np.random.default_rng(3)
    if dtype == "bool":
        x = rng.random((5, 33)) < 0.5
    elif dtype[0] in "iu":
        info = np.iinfo(dtype)
        x = rng.integers(info.min, info.max, (5, 33), dtype=dtype, endpoint=True)
        x[:, :3] = [info.min, info.max, 0]
    else:
        x = rng.integers(-3, 4, (5, 33)).astype(dtype)
        x[0, :6] = [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0]
    for axis, asc, k in itertools.product([0, 1], [True, False], [None, 1, 4]):
        got = ref_algorithm._ranked_positions(x, axis, asc, k)
        want = selection_order_python(x, axis, asc)
        if k is not None:
            want = np.take(want, np.arange(k), axis=axis)
        np.testing.assert_array_equal(got, want)


# ---------------------------------------------------------------------------------- scans
def _scan_ref(fn, x, axis, dtype, exclusive):
    x = x.reshape(-1) if axis is None else x
    axis = 0 if axis is None else axis
    out = fn(x.astype(dtype), axis=axis).astype(dtype)
    if exclusive:
        ident = 0 if fn is np.cumsum else 1
        head = np.full_like(np.take(out, [0], axis=axis), ident)
        out = np.concatenate([head, np.take(out, np.arange(out.shape[axis] - 1), axis=axis)],
                             axis=axis)
    return out


SCAN_CASES = [
    # shape, axis, exclusive, in dtype, out dtype
    ((64, 512), -1, False, "float32", None),
    ((64, 512), 0, False, "float32", None),
    ((13, 9), 1, True, "float32", None),
    ((2, 3, 40), 1, False, "float32", "float64"),
    ((2, 3, 40), None, True, "float32", None),
    ((3, 700), None, False, "int32", "int64"),
    ((5, 1, 6), 2, True, "int32", None),
    ((7,), 0, False, "float64", None),
    ((3, 1), -1, True, "float32", None),
]


@pytest.mark.parametrize("shape,axis,exclusive,dtype,out_dtype", SCAN_CASES)
@pytest.mark.parametrize("kind", ["cumsum", "cumprod"])
def test_scan(shape, axis, exclusive, dtype, out_dtype, kind):
    rng = np.random.default_rng(5)
    if dtype.startswith("int"):
        x = rng.integers(-3, 4, shape).astype(dtype)
    else:  # products near 1 stay finite
        x = (rng.standard_normal(shape) * (1.0 if kind == "cumsum" else 0.05) +
             (0.0 if kind == "cumsum" else 1.0)).astype(dtype)
    op = getattr(relay, kind)
    (got,), kinds = build_run(lambda v: op(v, axis=axis, dtype=out_dtype, exclusive=exclusive), x)
    want = _scan_ref(getattr(np, kind), x, axis, out_dtype or dtype, exclusive)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)  # numpy's order of additions: the same rounding
    assert kinds == ["native"]


def test_cumsum_keeps_negative_zero_first():
    x = np.array([[-0.0, 1.0, -1.0]], "float32")
    (got,), _ = build_run(lambda v: relay.cumsum(v, axis=1), x)
    assert np.signbit(got[0, 0])


# ---------------------------------------------------------------------------------- roll
def _roll(v, shape, shift, axis):
    n = shape[axis]
    k = shift % n
    if not k:
        return v
    tail = relay.strided_slice(v, [n - k], [n], [1], axes=[axis])
    head = relay.strided_slice(v, [0], [n - k], [1], axes=[axis])
    return relay.concatenate([tail, head], axis=axis)


ROLL_CASES = [((1, 8, 8, 64), 3, 3), ((2, 30, 37), -5, 2), ((4, 10), -3, 1), ((70,), 69, 0),
              ((3, 5), 1, 0), ((2, 20), 4, 1)]


def _piecewise_injective_nest(ctx, t, buf, body):
    """``lower.injective_nest`` with the innermost axis split at its pieces (``pieces``'s
    proposed hook)."""
    shape = dims_of(t)
    if shape and is_static(shape) and pieces.cuts(body, t.op.axis[-1].var, shape[-1]) and \
            schedule_lower.transposed_axis(t, body) is None:
        lanes = vector_lanes(t.dtype)
        return outer_loops(ctx, list(shape[:-1]), prod_dims(shape) >= PARALLEL_MIN_WORK,
                           lambda outer: pieces.split_pieces(ctx, t, buf, body, outer, lanes))
    return _unpatched_injective_nest(ctx, t, buf, body)


_unpatched_injective_nest = schedule_lower.injective_nest


@pytest.mark.parametrize("split", [False, True])
@pytest.mark.parametrize("shape,shift,axis", ROLL_CASES)
def test_roll(shape, shift, axis, split, monkeypatch):
    if split:
        monkeypatch.setattr(schedule_lower, "injective_nest", _piecewise_injective_nest)
        te_compiler.clear_cache()
    x = np.random.default_rng(2).standard_normal(shape).astype("float32")
    (got,), kinds = build_run(lambda v: _roll(v, shape, shift, axis), x)
    np.testing.assert_array_equal(got, np.roll(x, shift, axis))
    assert kinds == ["native"]
    te_compiler.clear_cache()


@pytest.mark.parametrize("widths,dtype", [((1, 2), "float32"), ((5, 17, 40), "int8"),
                                          ((7, 1, 9), "float64"), ((16, 16), "float32")])
def test_concat_last_axis_split(widths, dtype, monkeypatch):
    monkeypatch.setattr(schedule_lower, "injective_nest", _piecewise_injective_nest)
    te_compiler.clear_cache()
    rng = np.random.default_rng(4)
    xs = [(rng.standard_normal((3, w)) * 10).astype(dtype) for w in widths]
    (got,), _ = build_run(lambda *v: relay.nn.relu(relay.concatenate(list(v), axis=-1)), *xs)
    np.testing.assert_array_equal(got, np.maximum(np.concatenate(xs, -1), 0))
    (got,), _ = build_run(lambda *v: relay.concatenate(list(v), axis=-1), *xs)
    np.testing.assert_array_equal(got, np.concatenate(xs, -1))
    te_compiler.clear_cache()


def test_pieces_resolve_concat_body():
    """Within a piece the tree of ``j < start`` tests and the loads' clamps disappear."""
    from types import SimpleNamespace

    from minitvm import te, topi
    from minitvm.ir.type import TensorType
    from minitvm.tir import expr as E
    from minitvm.tir.stmt_functor import post_order

    a, b = te.placeholder((4, 3), "float32", "a"), te.placeholder((4, 61), "float32", "b")
    concat = topi.get_compute("concatenate")
    (out,) = concat(SimpleNamespace(axis=1), [a, b], TensorType((4, 64), "float32"))
    j = out.op.axis[-1].var
    assert pieces.cuts(out.op.body, j, 64) == [3]
    for lo, hi, src in [(0, 3, a), (3, 64, b)]:
        nodes = list(post_order(pieces.resolve(out.op.body, j, lo, hi)))
        assert not any(isinstance(e, (E.Call, E.Min, E.Max)) for e in nodes)
        assert [e.producer for e in nodes if isinstance(e, E.ProducerLoad)] == [src]


# ---------------------------------------------------------------------------------- errors
@pytest.mark.parametrize("build,match", [
    (lambda v: relay.topk(v, k=2, axis=2).astuple(), "topk: axis 2 is out of range"),
    (lambda v: relay.cumsum(v, axis=-3), "cumsum: axis -3 is out of range"),
    (lambda v: relay.argsort(v, axis=5), "argsort: axis 5 is out of range"),
    (lambda v: relay.topk(v, k=2, ret_type="first"), "ret_type must be both, values or indices"),
])
def test_bad_attrs_are_type_errors(build, match):
    v = relay.var("x", shape=(3, 4))
    mod = tvm.IRModule.from_expr(relay.Function([v], build(v)))
    with pytest.raises(TypeError, match=match):
        relay.transform.InferType()(mod)


def test_topi_scan_bad_axis():
    from minitvm import te
    from minitvm.topi import scan

    x = te.placeholder((3, 4), "float32", "x")
    with pytest.raises(ValueError, match="scan: axis 2 is out of range for a 2-d input"):
        scan.cumsum(x, axis=2)

"""Reduction ops: shapes (axis, keepdims, exclude, Any) and numpy references, one sweep."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.ir.op import Op, OpPattern
from minitvm.ir.type import TensorType

RNG = np.random.default_rng(1)


def run_op(call, *arrays):
    op = call.op
    types = [TensorType(a.shape, str(a.dtype)) for a in arrays]
    out_t = op.get_attr("FTypeRelation")(types, call.attrs)
    return out_t, op.get_attr("FNumpy")(call.attrs, list(arrays), out_t)


def _np_axes(ndim, axis, exclude):
    if axis is None:
        axes = tuple(range(ndim))
    else:
        axes = tuple(a % ndim for a in ((axis,) if isinstance(axis, int) else axis))
    if exclude:
        axes = tuple(i for i in range(ndim) if i not in axes)
    return axes


REDUCE = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min, "prod": np.prod}
CASES = [(None, False, False), (1, False, False), ((0, 2), True, False), (-1, False, False),
         ((1,), False, True), ((0, -1), True, True)]


@pytest.mark.parametrize("name", sorted(REDUCE))
@pytest.mark.parametrize("axis,keepdims,exclude", CASES, ids=str)
def test_reduce_sweep(name, axis, keepdims, exclude):
    x = RNG.uniform(0.5, 1.5, size=(2, 3, 4)).astype("float32")
    call = getattr(relay, name)(relay.var("x"), axis, keepdims, exclude)
    assert call.op.get_attr("TOpPattern") == OpPattern.COMM_REDUCE
    out_t, out = run_op(call, x)
    ref = REDUCE[name](x, axis=_np_axes(3, axis, exclude), keepdims=keepdims)
    assert out_t.concrete_shape == ref.shape and out_t.dtype == "float32"
    np.testing.assert_allclose(out, ref, rtol=1e-5)


@pytest.mark.parametrize("name,fn", [("all", np.all), ("any", np.any)])
def test_all_any(name, fn):
    x = RNG.integers(0, 2, size=(3, 4)).astype(bool)
    out_t, out = run_op(getattr(relay, name)(relay.var("x"), axis=1), x)
    assert out_t.dtype == "bool" and np.array_equal(out, fn(x, axis=1))


@pytest.mark.parametrize("name,fn", [("argmax", np.argmax), ("argmin", np.argmin)])
@pytest.mark.parametrize("axis,keepdims", [(None, False), (1, False), (0, True), (-1, True)])
def test_arg_reduce(name, fn, axis, keepdims):
    x = RNG.normal(size=(3, 5)).astype("float32")
    call = getattr(relay, name)(relay.var("x"), axis=axis, keepdims=keepdims)
    assert call.op.get_attr("TOpPattern") == OpPattern.COMM_REDUCE
    out_t, out = run_op(call, x)
    ref = np.asarray(fn(x, axis=axis, keepdims=keepdims))
    assert out_t.dtype == "int32" and out_t.concrete_shape == ref.shape
    assert np.array_equal(out, ref)


def test_argmax_select_last_index():
    x = np.array([[1, 3, 3, 0]], "float32")
    _, first = run_op(relay.argmax(relay.var("x"), axis=1), x)
    _, last = run_op(relay.argmax(relay.var("x"), axis=1, select_last_index=True), x)
    assert first.tolist() == [1] and last.tolist() == [2]


@pytest.mark.parametrize("unbiased", [False, True])
def test_variance_std(unbiased):
    x = RNG.normal(size=(4, 6)).astype("float32")
    var = relay.variance(relay.var("x"), axis=1, unbiased=unbiased)
    assert var.op.name == "variance" and var.args[1].op.name == "mean"
    m = x.mean(axis=1, keepdims=True)
    out_t, out = run_op(var, x, m)
    ref = np.var(x, axis=1, ddof=1 if unbiased else 0)
    assert out_t.concrete_shape == (4,)
    np.testing.assert_allclose(out, ref, rtol=1e-5)
    std = relay.std(relay.var("x"), axis=1)
    assert std.op.name == "sqrt" and std.args[0].op.name == "variance"
    mv = relay.mean_variance(relay.var("x"), axis=0)
    assert len(mv) == 2 and mv[1].tuple_value.fields[1].op.name == "variance"


def test_logsumexp_builds_stable_graph():
    out = relay.logsumexp(relay.var("x", shape=(2, 3)), axis=1)
    assert out.op.name == "squeeze"


def test_reduce_symbolic_and_errors():
    n = tvm.tir.SizeVar("n")
    rel = Op.get("sum").get_attr("FTypeRelation")
    out = rel([TensorType((n, relay.Any(), 4))], relay.sum(relay.var("x"), axis=2).attrs)
    assert out.shape[0] is n and isinstance(out.shape[1], tvm.tir.Any) and len(out.shape) == 2
    with pytest.raises(ValueError, match="axis 3 is out of range for a tensor of rank 2"):
        rel([TensorType((2, 3))], relay.sum(relay.var("x"), axis=3).attrs)
    with pytest.raises(ValueError, match="more than once"):
        rel([TensorType((2, 3))], relay.sum(relay.var("x"), axis=(1, -1)).attrs)


def test_reduce_attrs_match_tvm():
    attrs = relay.sum(relay.var("x"), axis=1).attrs
    assert type(attrs).__name__ == "ReduceAttrs"
    assert [n for n, _ in attrs.list_field_info()] == ["axis", "keepdims", "exclude"]
    assert attrs.axis == (1,) and attrs.non_default_items() == [("axis", (1,))]
    arg = relay.argmax(relay.var("x")).attrs
    assert [n for n, _ in arg.list_field_info()] == ["axis", "keepdims", "select_last_index",
                                                     "exclude"]


def test_integer_mean_truncates():
    x = np.array([[-3, -4], [3, 4]], "int32")
    out_t, out = run_op(relay.mean(relay.var("x"), axis=1), x)
    assert out_t.dtype == "int32" and out.tolist() == [-3, 3]

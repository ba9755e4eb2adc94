"""Transform ops: reshape codes, slicing, joining, indexing, layouts; each against numpy."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.ir.op import Op, OpPattern
from minitvm.ir.type import TensorType, TupleType
from minitvm.relay.op.transform import infer_reshape

RNG = np.random.default_rng(2)


def _ty(a):
    if isinstance(a, list):
        return TupleType([_ty(x) for x in a])
    return TensorType(a.shape, str(a.dtype))


def run_op(call, *arrays):
    op = call.op
    out_t = op.get_attr("FTypeRelation")([_ty(a) for a in arrays], call.attrs)
    return out_t, op.get_attr("FNumpy")(call.attrs, list(arrays), out_t)


def check(call, arrays, expected):
    out_t, out = run_op(call, *arrays)
    expected = np.asarray(expected)
    assert out_t.concrete_shape == expected.shape, (out_t, expected.shape)
    assert out_t.dtype == str(expected.dtype)
    assert np.array_equal(out, expected)


X = RNG.normal(size=(2, 3, 4)).astype("float32")


@pytest.mark.parametrize("newshape,expected", [
    ((24,), (24,)), ((6, 4), (6, 4)), ((-1,), (24,)), ((0, -1), (2, 12)), ((-1, 4), (6, 4)),
    ((0, 0, -1), (2, 3, 4)), ((-2,), (2, 3, 4)), ((-1, -2), (2, 3, 4)), ((-3, 4), (6, 4)),
    ((0, -3), (2, 12)), ((-4, 1, 2, -2), (1, 2, 3, 4)), ((-4, -1, 1, -2), (2, 1, 3, 4)),
    ((2, -4, -1, 3, 4), (2, 1, 3, 4)), ((-1, 0), (8, 3)), ((2, 0, 0), (2, 3, 4)),
])
def test_reshape_codes(newshape, expected):
    call = relay.reshape(relay.var("x"), newshape)
    assert call.op.get_attr("TOpPattern") == OpPattern.INJECTIVE
    out_t, out = run_op(call, X)
    assert out_t.concrete_shape == expected
    assert np.array_equal(out, X.reshape(expected))


def test_reshape_errors_and_allowzero():
    with pytest.raises(ValueError, match=r"cannot reshape \(2, 3, 4\) \(24 elements\)"):
        infer_reshape((2, 3, 4), (5, 5))
    with pytest.raises(ValueError, match="only one dim can be inferred"):
        infer_reshape((2, 3, 4), (-1, -1))
    with pytest.raises(ValueError, match="not divisible"):
        infer_reshape((2, 3, 4), (-1, 5))
    assert infer_reshape((0, 3), (0, 3), allowzero=True) == (0, 3)
    attrs = relay.reshape(relay.var("x"), [2, 12]).attrs
    assert type(attrs).__name__ == "ReshapeAttrs" and attrs.newshape == (2, 12)
    assert [n for n, _ in attrs.list_field_info()] == ["newshape", "allowzero"]


def test_reshape_symbolic_dims():
    n = tvm.tir.SizeVar("n")
    assert infer_reshape((n, 3, 4), (-1, 12))[0] is n
    assert infer_reshape((n, 3, 4), (0, -1)) == (n, 12)
    out = infer_reshape((relay.Any(), 3, 4), (-1, 12))
    assert isinstance(out[0], tvm.tir.Any) and out[1] == 12
    out = infer_reshape((relay.Any(), 3), (0, 3))
    assert isinstance(out[0], tvm.tir.Any)
    out = infer_reshape((n, 4), (-3,))
    assert str(out[0]) in ("(n * 4)", "n*4") or isinstance(out[0], tvm.tir.PrimExpr)


def test_reshape_infers_an_unknown_dim_as_itself_only_beside_the_same_static_rest():
    """(B, 3, 4) -> (-1, 12) is B again (the ONNX importer then knows it is the batch); -1 over
    (B, 3, 4) -> (-1, 4) is B*3, a new unknown; -3 merges into a new one; 0 copies it."""
    b = relay.Any()
    assert infer_reshape((b, 3, 4), (-1, 12))[0] is b
    assert infer_reshape((b, 12), (-1, 3, 4))[0] is b
    assert infer_reshape((b, 3, 4), (0, -1)) == (b, 12)
    for out in (infer_reshape((b, 3, 4), (-1, 4))[0], infer_reshape((b, 3, 4), (-3, 4))[0],
                infer_reshape((b, relay.Any(), 4), (-1, 4))[0]):
        assert isinstance(out, tvm.tir.Any) and out is not b


def test_reshape_like():
    like = np.zeros((4, 6), "int8")
    check(relay.reshape_like(relay.var("x"), relay.var("l")), [X, like], X.reshape(4, 6))
    check(relay.reshape_like(relay.var("x"), relay.var("l"), lhs_begin=1, rhs_begin=1),
          [X, np.zeros((5, 12), "int8")], X.reshape(2, 12))
    with pytest.raises(TypeError, match="reshape_like"):
        run_op(relay.reshape_like(relay.var("x"), relay.var("l")), X, np.zeros((5,), "int8"))


@pytest.mark.parametrize("axes", [None, (0, 2, 1), (2, 0, 1), (-1, 0, -2)])
def test_transpose(axes):
    check(relay.transpose(relay.var("x"), axes), [X], np.transpose(X, axes))


def test_transpose_bad_axes():
    with pytest.raises(ValueError, match="not a permutation"):
        run_op(relay.transpose(relay.var("x"), (0, 0, 1)), X)


@pytest.mark.parametrize("axis,num", [(0, 1), (3, 1), (-1, 2), (-4, 1), (1, 0)])
def test_expand_dims(axis, num):
    call = relay.expand_dims(relay.var("x"), axis, num)
    assert call.op.get_attr("TOpPattern") == OpPattern.BROADCAST
    out = X
    pivot = axis if axis >= 0 else axis + X.ndim + 1
    out = X.reshape(X.shape[:pivot] + (1,) * num + X.shape[pivot:])
    check(call, [X], out)
    with pytest.raises(ValueError, match="out of range"):
        run_op(relay.expand_dims(relay.var("x"), 5), X)


def test_squeeze():
    y = RNG.normal(size=(1, 3, 1, 2)).astype("float32")
    check(relay.squeeze(relay.var("y")), [y], y.reshape(3, 2))
    check(relay.squeeze(relay.var("y"), [2]), [y], y.reshape(1, 3, 2))
    check(relay.squeeze(relay.var("y"), axis=[-4]), [y], y.reshape(3, 1, 2))
    with pytest.raises(ValueError, match="its dimension is 3, not 1"):
        run_op(relay.squeeze(relay.var("y"), [1]), y)
    rel = Op.get("squeeze").get_attr("FTypeRelation")
    out = rel([TensorType((relay.Any(), 1))], relay.squeeze(relay.var("y")).attrs)
    assert len(out.shape) == 1 and isinstance(out.shape[0], tvm.tir.Any)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_concatenate(axis):
    parts = [RNG.normal(size=(2, 3, 4)).astype("float32") for _ in range(3)]
    call = relay.concatenate([relay.var("a"), relay.var("b"), relay.var("c")], axis)
    assert isinstance(call.args[0], relay.Tuple)
    check(call, [parts], np.concatenate(parts, axis=axis))


def test_concatenate_errors_and_any():
    rel = Op.get("concatenate").get_attr("FTypeRelation")
    attrs = relay.concatenate([relay.var("a")], 1).attrs
    with pytest.raises(TypeError, match="dimension 0 differs"):
        rel([TupleType([TensorType((2, 3)), TensorType((4, 3))])], attrs)
    with pytest.raises(TypeError, match="do not match"):
        rel([TupleType([TensorType((2, 3)), TensorType((2, 3), "int32")])], attrs)
    out = rel([TupleType([TensorType((relay.Any(), 3)), TensorType((2, 5))])], attrs)
    assert out.shape == (2, 8)
    # an unknown dim off the axis is the same in every input when it runs: the result keeps it
    n, m = relay.Any(), relay.Any()
    out = rel([TupleType([TensorType((n, 3)), TensorType((n, 5))])], attrs)
    assert out.shape[0] is n and out.shape[1] == 8
    on_axis = rel([TupleType([TensorType((3, n)), TensorType((3, m))])], attrs).shape[1]
    assert isinstance(on_axis, tvm.tir.Any) and on_axis is not n and on_axis is not m
    with pytest.raises(ValueError, match="non-empty"):
        relay.concatenate([], 0)


@pytest.mark.parametrize("axis", [0, 2, -1])
def test_stack(axis):
    parts = [RNG.normal(size=(3, 4)).astype("float32") for _ in range(2)]
    check(relay.stack([relay.var("a"), relay.var("b")], axis), [parts], np.stack(parts, axis))


@pytest.mark.parametrize("ios,axis", [(3, 1), (2, 0), ((1, 3), 2), ((2,), -1)])
def test_split(ios, axis):
    y = RNG.normal(size=(4, 6, 5)).astype("float32")
    wrapped = relay.split(relay.var("y"), ios, axis)
    n = ios if isinstance(ios, int) else len(ios) + 1
    assert len(wrapped) == n and isinstance(wrapped[0], relay.TupleGetItem)
    call = wrapped.astuple()
    out_t, outs = run_op(call, y)
    refs = np.split(y, ios if isinstance(ios, int) else list(ios), axis=axis)
    assert isinstance(out_t, TupleType) and len(out_t.fields) == n
    for t, o, r in zip(out_t.fields, outs, refs):
        assert t.concrete_shape == r.shape and np.array_equal(o, r)


def test_split_uneven_fails():
    with pytest.raises(ValueError, match=r"cannot be split into 4 equal sections"):
        run_op(relay.split(relay.var("y"), 4, 1).astuple(), np.zeros((2, 6)))


@pytest.mark.parametrize("begin,end,strides,axes,mode", [
    ([0, 1], [2, 3], None, None, "end"),
    ([1], [-1], None, None, "end"),
    ([0, 0, 3], [2, 3, 0], [1, 1, -1], None, "end"),
    ([-1, -1, -1], [-3, -4, -5], [-1, -1, -1], None, "end"),
    ([1, 0], [100, 2], [1, 2], None, "end"),
    ([1], [3], [2], [2], "end"),
    ([0, 1], [1, -1], None, None, "size"),
    ([2, 1], [-100, 0], [-1, 1], [2, 0], "end"),
])
def test_strided_slice(begin, end, strides, axes, mode):
    call = relay.strided_slice(relay.var("x"), begin, end, strides, axes, mode)
    assert call.op.get_attr("TOpPattern") == OpPattern.INJECTIVE
    index = [slice(None)] * X.ndim
    strides_ = strides or [1] * len(begin)
    for k, ax in enumerate(axes if axes is not None else range(len(begin))):
        if mode == "size":
            e = None if end[k] < 0 else begin[k] + end[k]
            index[ax] = slice(begin[k], e)
        else:
            index[ax] = slice(begin[k], end[k], strides_[k] if k < len(strides_) else 1)
    check(call, [X], X[tuple(index)])


def test_strided_slice_attrs_and_any():
    attrs = relay.strided_slice(relay.var("x"), [0], [1]).attrs
    assert [n for n, _ in attrs.list_field_info()] == ["begin", "end", "strides", "slice_mode",
                                                      "axes"]
    assert attrs.strides == (1,)
    rel = Op.get("strided_slice").get_attr("FTypeRelation")
    out = rel([TensorType((relay.Any(), 8))], relay.strided_slice(relay.var("x"), [0, 2],
                                                                    [1, 6]).attrs)
    assert isinstance(out.shape[0], tvm.tir.Any) and out.shape[1] == 4


@pytest.mark.parametrize("mode", ["clip", "wrap", "fast"])
@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_take(mode, axis):
    idx = np.array([[0, 1], [1, 0]], "int32") if mode == "fast" else np.array(
        [[0, 5], [-1, 3]], "int32")
    call = relay.take(relay.var("x"), relay.var("i"), axis=axis, mode=mode)
    assert call.op.get_attr("TOpPattern") == OpPattern.INJECTIVE
    data = X if axis is None else X
    n = X.size if axis is None else X.shape[axis]
    ref_idx = np.clip(idx, 0, n - 1) if mode == "clip" else np.mod(idx, n)
    src = X.reshape(-1) if axis is None else X
    check(call, [data, idx], np.take(src, ref_idx, axis=0 if axis is None else axis))


def test_take_batch_dims_and_errors():
    data = RNG.normal(size=(2, 5, 3)).astype("float32")
    idx = np.array([[0, 4], [1, 1]], "int32")
    ref = np.stack([np.take(data[b], idx[b], axis=0) for b in range(2)])
    check(relay.take(relay.var("d"), relay.var("i"), axis=1, batch_dims=1), [data, idx], ref)
    with pytest.raises(TypeError, match="indices must be integers"):
        run_op(relay.take(relay.var("d"), relay.var("i")), data, np.zeros(2, "float32"))


def test_gather_one_hot_arange_shape_of():
    idx = RNG.integers(0, 3, size=(2, 3, 4)).astype("int32")
    check(relay.gather(relay.var("x"), 1, relay.var("i")), [X, idx],
          np.take_along_axis(X, idx, 1))
    ind = np.array([0, 2, 1], "int32")
    oh = relay.one_hot(relay.var("i"), relay.const(1.0), relay.const(0.0), 3, -1, "float32")
    assert oh.op.get_attr("TOpPattern") == OpPattern.OUT_ELEMWISE_FUSABLE
    check(oh, [ind, np.array(1.0, "float32"), np.array(0.0, "float32")],
          np.eye(3, dtype="float32")[ind])
    ar = relay.arange(relay.const(1.0), relay.const(4.0), relay.const(0.5))
    assert ar.op.get_attr("TOpPattern") == OpPattern.OPAQUE
    check(ar, [np.array(1.0, "float32"), np.array(4.0, "float32"), np.array(0.5, "float32")],
          np.arange(1, 4, 0.5, dtype="float32"))
    ar2 = relay.arange(5, dtype="int32")
    assert run_op(ar2, *(a.data.numpy() for a in ar2.args))[0].concrete_shape == (5,)
    so = relay.shape_of(relay.var("x"))
    assert so.op.get_attr("TOpPattern") == OpPattern.OPAQUE
    check(so, [X], np.array([2, 3, 4], "int32"))
    check(relay.ndarray_size(relay.var("x")), [X], np.array(24, "int32"))


def test_broadcast_to_and_collapse():
    y = RNG.normal(size=(3, 1)).astype("float32")
    check(relay.broadcast_to(relay.var("y"), (2, 3, 4)), [y], np.broadcast_to(y, (2, 3, 4)))
    check(relay.broadcast_to_like(relay.var("y"), relay.var("l")), [y, X[0]],
          np.broadcast_to(y, (3, 4)))
    with pytest.raises(TypeError, match="incompatible broadcast shapes"):
        run_op(relay.broadcast_to(relay.var("y"), (2, 4)), y)
    check(relay.collapse_sum_like(relay.var("x"), relay.var("l")), [X, y],
          X.sum(axis=0).sum(axis=1, keepdims=True))
    check(relay.collapse_sum_to(relay.var("x"), (4,)), [X], X.sum(axis=(0, 1)))


def test_tile_repeat_reverse():
    check(relay.tile(relay.var("x"), (2, 1, 1, 3)), [X], np.tile(X, (2, 1, 1, 3)))
    check(relay.tile(relay.var("x"), (2,)), [X], np.tile(X, (2,)))
    check(relay.repeat(relay.var("x"), 3, -1), [X], np.repeat(X, 3, -1))
    check(relay.reverse(relay.var("x"), 1), [X], np.flip(X, 1))
    assert Op.get("tile").get_attr("TOpPattern") == OpPattern.BROADCAST
    assert Op.get("repeat").get_attr("TOpPattern") == OpPattern.BROADCAST


@pytest.mark.parametrize("src,dst,shape", [
    ("NCHW", "NCHW16c", (1, 32, 5, 6)), ("NCHW", "NHWC", (2, 3, 4, 5)),
    ("NHWC", "NCHW", (2, 4, 5, 3)), ("NCHW4c", "NCHW8c", (1, 4, 2, 2, 4)),
    ("OIHW", "OIHW16i16o", (32, 16, 3, 3)), ("NCHW16c", "NHWC", (1, 2, 3, 3, 16)),
])
def test_layout_transform_round_trip(src, dst, shape):
    a = RNG.normal(size=shape).astype("float32")
    fwd = relay.layout_transform(relay.var("a"), src, dst)
    assert fwd.op.get_attr("TOpPattern") == OpPattern.INJECTIVE
    out_t, out = run_op(fwd, a)
    assert out_t.concrete_shape == out.shape
    back_t, back = run_op(relay.layout_transform(relay.var("b"), dst, src), out)
    assert back_t.concrete_shape == shape and np.array_equal(back, a)


def test_layout_transform_values_and_errors():
    a = np.arange(1 * 32 * 2 * 2, dtype="float32").reshape(1, 32, 2, 2)
    _, out = run_op(relay.layout_transform(relay.var("a"), "NCHW", "NCHW16c"), a)
    assert out[0, 1, 1, 0, 3] == a[0, 19, 1, 0]
    with pytest.raises(TypeError, match="not divisible by the factor 16"):
        run_op(relay.layout_transform(relay.var("a"), "NCHW", "NCHW16c"),
               np.zeros((1, 24, 2, 2), "float32"))
    with pytest.raises(TypeError, match="different primal axes"):
        run_op(relay.layout_transform(relay.var("a"), "NCHW", "NCDH"), a)
    rel = Op.get("layout_transform").get_attr("FTypeRelation")
    out_t = rel([TensorType((relay.Any(), 32, 4, 4))],
                relay.layout_transform(relay.var("a"), "NCHW", "NHWC4c").attrs)
    assert isinstance(out_t.shape[0], tvm.tir.Any) and out_t.shape[1:] == (4, 4, 8, 4)


MY_OPS = [
    "exp", "log", "log2", "log10", "sqrt", "rsqrt", "sigmoid", "tanh", "erf", "negative", "abs",
    "floor", "ceil", "round", "trunc", "sign", "sin", "cos", "tan", "clip", "cast", "cast_like",
    "fast_exp", "fast_tanh", "fast_erf", "logical_not", "isnan", "isinf", "isfinite",
    "zeros_like", "ones_like", "copy", "stop_gradient", "add", "subtract", "multiply", "divide",
    "floor_divide", "mod", "floor_mod", "power", "maximum", "minimum", "equal", "not_equal",
    "less", "less_equal", "greater", "greater_equal", "logical_and", "logical_or", "logical_xor",
    "where", "sum", "mean", "max", "min", "prod", "argmax", "argmin", "variance", "all", "any",
    "reshape", "reshape_like", "transpose", "expand_dims", "squeeze", "concatenate", "split",
    "strided_slice", "take", "stack", "broadcast_to", "broadcast_to_like", "zeros", "ones",
    "full", "full_like", "tile", "repeat", "reverse", "layout_transform", "arange", "one_hot",
    "gather", "collapse_sum_like", "shape_of", "ndarray_size", "reinterpret",
]


@pytest.mark.parametrize("name", MY_OPS)
def test_registry_self_check(name):
    op = Op.get(name)
    assert callable(op.get_attr("FTypeRelation")), f"{name} lacks FTypeRelation"
    assert callable(op.get_attr("FNumpy")), f"{name} lacks FNumpy"
    assert op.get_attr("TOpPattern") in (0, 1, 2, 3, 4, 7, 8), f"{name} lacks TOpPattern"
    assert op.num_inputs >= 0 and op.description
    assert callable(getattr(relay, name)), f"relay.{name} constructor missing"


def test_slice_like_gather_nd():
    like = np.zeros((1, 2), "int8")
    check(relay.slice_like(relay.var("x"), relay.var("l")), [X, like], X[:1, :2])
    check(relay.slice_like(relay.var("x"), relay.var("l"), axes=(2,)),
          [X, np.zeros((9, 9, 3), "int8")], X[:, :, :3])
    idx = np.array([[0, 1, 1], [2, 0, 1]], "int32")
    check(relay.gather_nd(relay.var("x"), relay.var("i")), [X, idx], X[tuple(idx)])
    bidx = np.array([[1, 0]], "int32")  # batch_dims=1: per batch b pick X[b, bidx[0, b]]
    ref = np.stack([X[b][bidx[0, b]] for b in range(2)])
    check(relay.gather_nd(relay.var("x"), relay.var("i"), batch_dims=1), [X, bidx], ref)


def test_sequence_mask_reverse_sequence():
    data = RNG.normal(size=(4, 3, 2)).astype("float32")  # (seq, batch, feat)
    lengths = np.array([1, 4, 2], "int32")
    ref = data.copy()
    for b, n in enumerate(lengths):
        ref[n:, b] = -1.0
    check(relay.sequence_mask(relay.var("d"), relay.var("l"), -1.0, 0), [data, lengths], ref)
    rev = data.copy()
    for b, n in enumerate(lengths):
        rev[:n, b] = data[:n, b][::-1]
    check(relay.reverse_sequence(relay.var("d"), relay.var("l"), seq_axis=0, batch_axis=1),
          [data, lengths], rev)


def test_reverse_reshape():
    y = np.zeros((10, 5, 4), "float32")
    out_t, out = run_op(relay.reverse_reshape(relay.var("y"), (-1, 0)), y)
    assert out_t.concrete_shape == (50, 4) and out.shape == (50, 4)


def test_ops_through_infer_type_and_interpreter():
    x = relay.var("x", shape=(2, 32, 4, 4))
    y = relay.layout_transform(relay.exp(x) + 1.0, "NCHW", "NCHW16c")
    parts = relay.split(relay.reshape(y, (-1, 16)), 2, axis=0)
    z = relay.concatenate([parts[0], parts[1]], 1)
    out = relay.Tuple([relay.sum(z, axis=1, keepdims=True), relay.argmax(z, axis=0),
                       relay.strided_slice(z, [0, 15], [100, 0], [1, -4])])
    mod = tvm.IRModule.from_expr(relay.Function([x], out))
    mod = relay.transform.InferType()(mod)
    assert mod["main"].body.fields[2].checked_type == TensorType((32, 4), "float32")
    a = RNG.normal(size=(2, 32, 4, 4)).astype("float32")
    res = relay.create_executor("debug", mod=mod).evaluate()(a)
    blocked = (np.exp(a) + 1).reshape(2, 2, 16, 4, 4).transpose(0, 1, 3, 4, 2).reshape(-1, 16)
    zz = np.concatenate(np.split(blocked, 2, axis=0), axis=1)
    np.testing.assert_allclose(res[0].numpy(), zz.sum(axis=1, keepdims=True), rtol=1e-5)
    assert np.array_equal(res[1].numpy(), zz.argmax(axis=0).astype("int32"))
    assert np.array_equal(res[2].numpy(), zz[:, 15:0:-4])

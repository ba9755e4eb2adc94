"""DynamicToStatic against TVM v0.19's documented cases (test_pass_dynamic_to_static.py),
restated here: the static constructors build the ``dyn.*`` op when handed a run-time tensor,
DynamicToStatic (after the parameters are bound) gives TVM's static program, and the
interpreter computes the same values before and after."""

from __future__ import annotations

import numpy as np
import pytest
from pass_test_util import check_numerics, evaluate

import minitvm as tvm
from minitvm import relay
from minitvm.relay.build_module import bind_params_by_name
from minitvm.relay.transform import DynamicToStatic, InferType


def _f32(*shape):
    return np.random.default_rng(0).uniform(-1, 1, size=shape).astype("float32")


def _pass(func, params=None, typed=True):
    """(before, after) modules: ``params`` bound into main, then DynamicToStatic + InferType.
    ``typed=False`` runs the pass on an untyped module (TVM's dynamic-rank case)."""
    mod = tvm.IRModule.from_expr(func)
    if params:
        mod["main"] = bind_params_by_name(mod["main"], params)
    if typed:
        mod = InferType()(mod)
    return mod, InferType()(DynamicToStatic()(mod))


def _expect(after, params, body):
    want = InferType()(tvm.IRModule.from_expr(relay.Function(params, body)))
    tvm.ir.assert_structural_equal(after["main"], want["main"])


def _dyn_op(mod) -> str:
    return mod["main"].body.op.name


@pytest.mark.parametrize("shape,newshape", [((2, 3, 4), (8, 3)), ((4, 7), (2, 7, 2))])
def test_reshape_to_shape_of_another(shape, newshape):
    x, y = relay.var("x", shape=shape), relay.var("y", shape=newshape)
    before, after = _pass(relay.Function([x, y], relay.reshape(x, relay.shape_of(y))))
    assert _dyn_op(before) == "dyn.reshape"
    _expect(after, [x, y], relay.reshape(x, list(newshape)))
    assert after["main"].body.checked_type == relay.TensorType(newshape, "float32")
    xd, yd = _f32(*shape), _f32(*newshape)
    np.testing.assert_allclose(evaluate(after, [xd, yd]), xd.reshape(newshape))
    check_numerics(before, after, [xd, yd])


@pytest.mark.parametrize("axis,oshape", [((0,), (3, 4, 1)), ((3,), (1, 3, 4)),
                                         ((0, 3), (3, 4))])
def test_squeeze_axes_from_a_shape(axis, oshape):
    # TVM's trick: the axes are the shape of a tensor whose dims are the axis numbers
    x, y = relay.var("x", shape=(1, 3, 4, 1)), relay.var("y", shape=axis)
    before, after = _pass(relay.Function([x, y], relay.squeeze(x, relay.shape_of(y))))
    assert _dyn_op(before) == "dyn.squeeze"
    _expect(after, [x, y], relay.squeeze(x, list(axis)))
    assert after["main"].body.checked_type == relay.TensorType(oshape, "float32")
    xd = _f32(1, 3, 4, 1)
    np.testing.assert_allclose(evaluate(after, [xd, _f32(*axis)]), np.squeeze(xd, axis))


@pytest.mark.parametrize("depth", [2, 4])
def test_chained_reshapes_all_become_static(depth):
    shape, newshape = (2, 3, 4), (8, 3)
    x, y = relay.var("x", shape=shape), relay.var("y", shape=newshape)
    steps = [relay.reshape(x, relay.shape_of(y))]
    steps.append(relay.reshape(steps[0], relay.shape_of(x)))
    if depth == 4:
        steps.append(relay.reshape(steps[1], relay.shape_of(steps[0])))
        steps.append(relay.reshape(steps[2], relay.shape_of(steps[1])))
    before, after = _pass(relay.Function([x, y], steps[-1]))
    want = relay.reshape(relay.reshape(x, [8, 3]), [2, 3, 4])
    if depth == 4:
        want = relay.reshape(relay.reshape(want, [8, 3]), [2, 3, 4])
    _expect(after, [x, y], want)
    xd = _f32(*shape)
    np.testing.assert_allclose(evaluate(after, [xd, _f32(*newshape)]), xd)


@pytest.mark.parametrize("shape,reps", [((2, 3, 4), (2, 1, 5)), ((4, 7), (4, 2))])
def test_tile(shape, reps):
    x, y = relay.var("x", shape=shape), relay.var("y", shape=reps)
    before, after = _pass(relay.Function([x, y], relay.tile(x, relay.shape_of(y))))
    assert _dyn_op(before) == "dyn.tile"
    _expect(after, [x, y], relay.tile(x, list(reps)))
    xd = _f32(*shape)
    np.testing.assert_allclose(evaluate(after, [xd, _f32(*reps)]), np.tile(xd, reps))


@pytest.mark.parametrize("k", [0, 1, 3])
@pytest.mark.parametrize("axis", [0, -1])
@pytest.mark.parametrize("ret_type", ["both", "values", "indices"])
def test_topk_with_bound_k(k, axis, ret_type):
    x, kv = relay.var("x", shape=(4, 6)), relay.var("k", shape=(), dtype="int32")
    out = relay.topk(x, kv, axis, ret_type, False, "int64")
    out = out.astuple() if isinstance(out, relay.TupleWrapper) else out
    before, after = _pass(relay.Function([x, kv], out), {"k": np.array(k, "int32")})
    assert _dyn_op(before) == "dyn.topk"
    want = relay.topk(x, k, axis, ret_type, False, "int64")
    want = want.astuple() if isinstance(want, relay.TupleWrapper) else want
    _expect(after, [x], want)
    xd = _f32(4, 6)
    idx = np.argsort(-xd, axis=axis, kind="stable")
    n = k if k >= 1 else xd.shape[axis]
    idx = idx[:n] if axis == 0 else idx[:, :n]
    got = evaluate(after, [xd])
    vals = np.take_along_axis(xd, idx, axis)
    if ret_type == "both":
        np.testing.assert_allclose(got[0], vals)
        np.testing.assert_array_equal(got[1], idx)
    else:
        np.testing.assert_allclose(got, vals if ret_type == "values" else idx)


def test_broadcast_to_and_zeros_ones():
    x, y = relay.var("x", shape=(3, 1)), relay.var("y", shape=(3, 3))
    before, after = _pass(relay.Function([x, y], relay.broadcast_to(x, relay.shape_of(y))))
    assert _dyn_op(before) == "dyn.broadcast_to"
    _expect(after, [x, y], relay.broadcast_to(x, [3, 3]))
    for dtype, shape in (("int64", (1, 2, 3)), ("float32", (2, 1, 3, 2))):
        for make, ref in ((relay.zeros, np.zeros), (relay.ones, np.ones)):
            v = relay.var("v", shape=shape, dtype=dtype)
            before, after = _pass(relay.Function([v], make(relay.shape_of(v), dtype)))
            assert _dyn_op(before) in ("dyn.zeros", "dyn.ones")
            # a zero-argument op is never constant-folded (TVM's heuristic)
            _expect(after, [v], make(list(shape), dtype))
            np.testing.assert_array_equal(evaluate(after, [np.ones(shape, dtype)]),
                                          ref(shape, dtype))


@pytest.mark.parametrize("method", ["linear", "nearest_neighbor"])
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_resize2d_with_bound_size(method, layout):
    shape = (1, 4, 4, 4)
    size = (8, 8)
    x = relay.var("x", shape=shape)
    sv = relay.var("size", shape=(2,), dtype="float32")
    mode = "asymmetric" if method == "nearest_neighbor" else "align_corners"
    z = relay.image.resize2d(x, sv, None, layout, method, coordinate_transformation_mode=mode)
    before, after = _pass(relay.Function([x, sv], z), {"size": np.array(size, "float32")})
    assert _dyn_op(before) == "dyn.image.resize2d"
    want = relay.image.resize2d(x, size, None, layout, method,
                                coordinate_transformation_mode=mode)
    assert tuple(want.attrs.roi) == (0.0,) * 4  # TVM's default roi
    _expect(after, [x], want)
    check_numerics(before, after, [_f32(*shape)])


def test_one_hot_with_constant_depth_is_static_already():
    idx = relay.var("indices", shape=(2, 2), dtype="int32")
    on, off = relay.var("on", shape=(), dtype="int32"), relay.var("off", shape=(),
                                                                   dtype="int32")
    out = relay.one_hot(idx, on, off, relay.const(5), 0, "int32")
    assert out.op.name == "one_hot"
    params = {"on": np.array(2, "int32"), "off": np.array(-2, "int32")}
    _, after = _pass(relay.Function([idx, on, off], out), params)
    _expect(after, [idx], relay.one_hot(idx, relay.const(2), relay.const(-2), 5, 0, "int32"))
    data = np.array([[0, 4], [3, 1]], "int32")
    want = np.where(np.arange(5)[:, None, None] == data[None], 2, -2)
    np.testing.assert_array_equal(evaluate(after, [data]), want)


def test_one_hot_with_runtime_depth():
    idx = relay.var("indices", shape=(3,), dtype="int32")
    depth = relay.var("depth", shape=(), dtype="int32")
    out = relay.one_hot(idx, relay.const(1.0), relay.const(0.0), depth, -1, "float32")
    before, after = _pass(relay.Function([idx, depth], out), {"depth": np.array(3, "int32")})
    assert _dyn_op(before) == "dyn.one_hot"
    _expect(after, [idx], relay.one_hot(idx, relay.const(1.0), relay.const(0.0), 3, -1,
                                        "float32"))
    check_numerics(before, after, [np.array([0, 2, 1], "int32")])


@pytest.mark.parametrize("fill,shape,dtype", [(4, (1, 2, 3, 4), "int32"),
                                              (4.0, (1, 2, 3, 2), "float32")])
def test_full_with_a_variable_fill(fill, shape, dtype):
    x = relay.var("x", shape=(), dtype=dtype)
    y = relay.var("y", shape=shape, dtype="int64")
    before, after = _pass(relay.Function([x, y], relay.full(x, relay.shape_of(y), dtype)))
    assert _dyn_op(before) == "dyn.full"
    _expect(after, [x, y], relay.full(x, list(shape), dtype))
    args = [np.array(fill, dtype), np.zeros(shape, "int64")]
    np.testing.assert_array_equal(evaluate(after, args), np.full(shape, fill, dtype))


@pytest.mark.parametrize("shape,scales,dtype", [((1, 2, 3, 3), (2, 2), "int8"),
                                                ((1, 2, 2, 3), (4, 3), "int32")])
def test_upsampling_with_bound_scales(shape, scales, dtype):
    x = relay.var("x", shape=shape, dtype=dtype)
    sh, sw = relay.var("scale_h", shape=()), relay.var("scale_w", shape=())
    params = {"scale_h": np.array(scales[0], "float32"),
              "scale_w": np.array(scales[1], "float32")}
    before, after = _pass(relay.Function([x, sh, sw], relay.nn.upsampling(x, sh, sw)), params)
    assert _dyn_op(before) == "dyn.nn.upsampling"
    _expect(after, [x], relay.nn.upsampling(x, float(scales[0]), float(scales[1])))
    xd = np.arange(np.prod(shape)).reshape(shape).astype(dtype)
    want = xd.repeat(scales[0], axis=2).repeat(scales[1], axis=3)
    np.testing.assert_array_equal(evaluate(after, [xd]), want)


@pytest.mark.parametrize("shape,scales", [((1, 1, 1, 1, 1), (2, 3, 4)),
                                          ((1, 2, 2, 1, 3), (3, 2, 2))])
def test_upsampling3d_with_bound_scales(shape, scales):
    x = relay.var("x", shape=shape, dtype="int32")
    names = ("scale_d", "scale_h", "scale_w")
    svars = [relay.var(n, shape=()) for n in names]
    params = {n: np.array(s, "float32") for n, s in zip(names, scales, strict=True)}
    before, after = _pass(relay.Function([x, *svars], relay.nn.upsampling3d(x, *svars)),
                          params)
    assert _dyn_op(before) == "dyn.nn.upsampling3d"
    _expect(after, [x], relay.nn.upsampling3d(x, *(float(s) for s in scales)))
    # (the op's default half_pixel + nearest is not a plain repeat: compare before/after)
    check_numerics(before, after, [np.arange(np.prod(shape)).reshape(shape).astype("int32")])


@pytest.mark.parametrize("shape,widths,value,dtype", [
    ((1, 2, 3, 3), ((1, 1), (0, 2), (1, 0), (2, 2)), 2.0, "float32"),
    ((2, 3), ((1, 4), (2, 2)), 4.0, "float64"),
])
def test_pad_with_bound_widths(shape, widths, value, dtype):
    x = relay.var("x", shape=shape, dtype=dtype)
    pw = relay.var("pad_width", shape=(len(widths), 2), dtype="int32")
    before, after = _pass(relay.Function([x, pw], relay.nn.pad(x, pw, value)),
                          {"pad_width": np.array(widths, "int32")})
    assert _dyn_op(before) == "dyn.nn.pad"
    _expect(after, [x], relay.nn.pad(x, widths, value))
    xd = np.random.default_rng(1).uniform(size=shape).astype(dtype)
    np.testing.assert_allclose(evaluate(after, [xd]), np.pad(xd, widths, constant_values=value))


@pytest.mark.parametrize("dshape,begin,end,strides,mode", [
    ((1, 3, 4, 4), [0, 0, 0, 0], [1, 3, 4, 4], [1], "end"),
    ((3, 4, 3), [1, 1, 0], [4, 4, 3], [2, 1, 1], "end"),
    ((3, 4, 3), [0, 0, 0], [4, -5, 4], [1, -1, 2], "end"),
    ((3, 4, 3), [1, -1, 0], [4, -5, 3], [2, -1, 1], "end"),
    ((3, 4, 3), [1, -1, 0], [2, -3, 3], [1, -1, 1], "end"),
    ((3, 4, 3), [1, 0, 0], [-1, 2, 3], [1, 1, 1], "size"),
])
def test_strided_slice_with_bound_begin_end_strides(dshape, begin, end, strides, mode):
    x = relay.var("x", shape=dshape)
    n = len(dshape)
    strides = strides * n if len(strides) == 1 else strides
    bv, ev, sv = (relay.var(name, shape=(n,), dtype="int64")
                  for name in ("begin", "end", "strides"))
    z = relay.strided_slice(x, bv, ev, sv, slice_mode=mode)
    params = {"begin": np.array(begin, "int64"), "end": np.array(end, "int64"),
              "strides": np.array(strides, "int64")}
    before, after = _pass(relay.Function([x, bv, ev, sv], z), params)
    assert _dyn_op(before) == "dyn.strided_slice"
    # TVM's constructor normalises begin in the graph: negative from the end, clamped to dim
    norm = [min(b + d if b < 0 else b, d) for b, d in zip(begin, dshape, strict=True)]
    _expect(after, [x], relay.strided_slice(x, norm, end, strides, slice_mode=mode))
    check_numerics(before, after, [_f32(*dshape)])


@pytest.mark.parametrize("indices,values,default,shape", [
    (1, 3, 0, [5]),
    ([0, 1, 4], [3, 3, 3], 0, [5]),
    ([[0, 0], [1, 2]], [1, 2], 0, [3, 4]),
    ([[0, 0, 0], [1, 2, 3]], [1, 2], 4, [2, 3, 4]),
    ([0, 1, 4], [3.1, 3.1, 3.1], 3.5, [5]),
    (1, 3, None, [5]),
])
def test_sparse_to_dense_with_constant_shape(indices, values, default, shape):
    idx, vals = np.array(indices, "int32"), np.array(values)
    vals = vals.astype("float32" if vals.dtype.kind == "f" else "int32")
    a = relay.var("a", shape=idx.shape, dtype="int32")
    b = relay.var("b", shape=vals.shape, dtype=str(vals.dtype))
    params, args = [a, b], [idx, vals]
    if default is None:
        d = relay.sparse_to_dense(a, relay.const(np.array(shape, "int32")), b)
        dv = relay.const(0)
    else:
        c = relay.var("c", shape=(), dtype=str(vals.dtype))
        params.append(c)
        args.append(np.array(default, vals.dtype))
        d = dv = None
    if d is None:
        d = relay.sparse_to_dense(a, relay.const(np.array(shape, "int32")), b, params[2])
        dv = params[2]
    # a constant output shape is still an expression: TVM builds dyn.sparse_to_dense
    assert d.op.name == "dyn.sparse_to_dense"
    before, after = _pass(relay.Function(params, d))
    _expect(after, params, relay.sparse_to_dense(a, shape, b, dv))
    want = np.full(shape, 0 if default is None else default, vals.dtype)
    want[tuple(idx.reshape(-1, len(shape)).T)] = vals
    np.testing.assert_allclose(evaluate(after, args), want, rtol=1e-6)


@pytest.mark.parametrize("fill,shape,dtype", [(4, (1, 2, 3, 4), "int32"),
                                              (4.0, (1, 2, 3, 2), "float32")])
def test_full_of_a_sliced_shape(fill, shape, dtype):
    # TVM's dynamic_rank case: the shape is shape_of(y)[0:len(shape_of(y))]
    x = relay.var("x", shape=(), dtype=dtype)
    y = relay.var("y", shape=shape, dtype="int64")
    s = relay.shape_of(y)
    s = relay.strided_slice(s, [0], relay.shape_of(s))
    # the dyn.full's shape has a run-time length, so the input does not type check: TVM runs
    # the pass on it untyped; the slice goes static first, then full
    before, after = _pass(relay.Function([x, y], relay.full(x, s, dtype)), typed=False)
    assert _dyn_op(before) == "dyn.full"
    _expect(after, [x, y], relay.full(x, list(shape), dtype))
    args = [np.array(fill, dtype), np.zeros(shape, "int64")]
    np.testing.assert_array_equal(evaluate(after, args), np.full(shape, fill, dtype))


def test_constant_if_condition_is_folded():
    x = relay.var("x", shape=(2, 2), dtype="int64")
    body = relay.If(relay.const(1), relay.reshape(x, [1, 4]), relay.reshape(x, (4, 1)))
    # an int32 condition does not type check; as in TVM the pass folds it away untyped
    _, after = _pass(relay.Function([x], body), typed=False)
    _expect(after, [x], relay.reshape(x, [1, 4]))
    xd = np.arange(4, dtype="int64").reshape(2, 2)
    np.testing.assert_array_equal(evaluate(after, [xd]), xd.reshape(1, 4))


def test_pass_info_and_unknown_shape_left_dynamic():
    info = DynamicToStatic().info
    assert (info.name, info.opt_level) == ("DynamicToStatic", 2)
    x, s = relay.var("x", shape=(2, 3)), relay.var("s", shape=(2,), dtype="int64")
    before, after = _pass(relay.Function([x, s], relay.reshape(x, s)))
    assert _dyn_op(after) == "dyn.reshape"
    check_numerics(before, after, [_f32(2, 3), np.array([3, 2], "int64")])

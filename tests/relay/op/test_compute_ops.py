"""Every operator's native lowering (FTECompute + schedule + LLVM) against its numpy reference,
on odd shapes (tails of the vector loops, broadcasting, size-1 dims)."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.contrib import graph_executor
from minitvm.ir.op import Op

R = np.random.default_rng(0)


def _f(*shape):
    return R.standard_normal(shape).astype("float32")


def _pos(*shape):
    return (R.random(shape) + 0.5).astype("float32")


def _run(build_fn, arrays, opt_level=0):
    vars_ = [relay.var(f"x{k}", shape=a.shape, dtype=str(a.dtype)) for k, a in enumerate(arrays)]
    out = build_fn(*vars_)
    mod = tvm.IRModule.from_expr(relay.Function(vars_, out))
    ref = relay.create_executor("debug", mod=mod).evaluate()(*arrays)
    with tvm.transform.PassContext(opt_level=opt_level):
        lib = relay.build(mod, target="llvm")
    fallback = lib.get_lib().fallback_functions
    assert not fallback, fallback
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    for k, a in enumerate(arrays):
        m.set_input(f"x{k}", a)
    m.run()
    refs = [r.numpy() for r in ref] if not hasattr(ref, "numpy") else [ref.numpy()]
    for k, r in enumerate(refs):
        got = m.get_output(k).numpy()
        assert got.shape == r.shape and got.dtype == r.dtype
        if r.dtype.kind == "f":
            scale = max(float(np.max(np.abs(r))), 1e-6) if r.size else 1.0
            np.testing.assert_allclose(got, r, rtol=1e-4, atol=1e-5 * scale)
        else:
            np.testing.assert_array_equal(got, r)


UNARY = ["negative", "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "erf", "abs", "floor",
         "ceil", "trunc", "round", "sin", "cos", "nn.relu", "sign", "copy", "log2", "log10"]


@pytest.mark.parametrize("name", UNARY)
@pytest.mark.parametrize("shape", [(37,), (3, 5, 19), (1,), ()])
def test_unary(name, shape):
    x = _pos(*shape) if name in ("log", "sqrt", "rsqrt", "log2", "log10") else _f(*shape) * 3
    _run(lambda a: relay.Call(Op.get(name), [a]), [x])


BINARY = ["add", "subtract", "multiply", "divide", "maximum", "minimum", "power", "floor_divide",
          "floor_mod", "equal", "less", "greater_equal", "not_equal"]


@pytest.mark.parametrize("name", BINARY)
@pytest.mark.parametrize("shapes", [((3, 17), (3, 17)), ((2, 1, 33), (5, 1)), ((), (4, 3))])
def test_binary_broadcast(name, shapes):
    a, b = _f(*shapes[0]), _f(*shapes[1])
    if name == "power":
        a = np.abs(a) + 0.5
    if name in ("divide", "floor_divide", "floor_mod"):
        b = np.sign(b) * (np.abs(b) + 0.5)
    _run(lambda x, y: relay.Call(Op.get(name), [x, y]), [a.astype("float32"),
                                                        b.astype("float32")])


def test_int_ops_and_cast():
    a = R.integers(-50, 50, (6, 35)).astype("int32")
    b = R.integers(1, 9, (35,)).astype("int32")
    _run(lambda x, y: relay.floor_divide(x, y), [a, b])
    _run(lambda x, y: relay.floor_mod(x, y), [a, b])
    _run(lambda x: relay.cast(x, "float32"), [a])
    _run(lambda x: relay.cast(relay.cast(x, "float32") * relay.const(0.5), "int32"), [a])


def test_where_clip_leaky():
    c, a, b = _f(4, 21) > 0, _f(4, 21), _f(21)
    _run(lambda x, y, z: relay.where(x, y, z), [c, a, b])
    _run(lambda x: relay.clip(x, -0.3, 0.4), [a])
    _run(lambda x: relay.nn.leaky_relu(x, 0.1), [a])


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("idx_dtype", ["int64", "int32"])
def test_gather_native(axis, idx_dtype):
    """torch.gather / GatherElements: native (a detection head's top-k box gather ran in numpy,
    0.27 ms of a 0.5 ms model), negative indices counting from the end as numpy's."""
    x = _f(4, 7, 5)
    shape = list(x.shape)
    shape[axis] = 3
    idx = R.integers(-x.shape[axis], x.shape[axis], shape).astype(idx_dtype)
    _run(lambda a, b: relay.gather(a, axis, b), [x, idx], opt_level=3)


@pytest.mark.parametrize("batch_dims", [0, 1])
def test_gather_nd_native(batch_dims):
    x = _f(3, 6, 5)
    m = 2
    idx = np.stack([R.integers(0, x.shape[batch_dims + k], (3, 4)) for k in range(m)])
    _run(lambda a, b: relay.gather_nd(a, b, batch_dims=batch_dims),
         [x, idx.astype("int64")], opt_level=3)


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8"])
@pytest.mark.parametrize("bounds", [(1.0, 3.4028234663852886e38), (-np.inf, 7.5),
                                    (-1e30, np.inf), (2.5, 9.0)])
def test_clip_integer_with_out_of_range_bounds(dtype, bounds):
    """torch's ``count.clamp(min=1)`` leaves a_max at float max: the bound saturates into the
    integer range (truncated, as TVM's ``const``) instead of wrapping around to a negative constant."""
    a = R.integers(0, 40, (3, 9)).astype(dtype)
    x = relay.var("x", shape=a.shape, dtype=dtype)
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.clip(x, *bounds)))
    with tvm.transform.PassContext(opt_level=0):
        lib = relay.build(mod, target="llvm")
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    m.set_input("x", a)
    m.run()
    lo, hi = np.trunc(bounds[0]), np.trunc(bounds[1])
    np.testing.assert_array_equal(m.get_output(0).numpy(), np.clip(a, lo, hi).astype(dtype))
    _run(lambda v: relay.clip(v, *bounds), [a])


@pytest.mark.parametrize("op", ["sum", "max", "min", "mean", "prod"])
@pytest.mark.parametrize("axis,keepdims", [(None, False), (1, True), ((0, 2), False), (-1, False)])
def test_reductions(op, axis, keepdims):
    x = _f(3, 37, 5) if op != "prod" else _pos(3, 37, 5)
    _run(lambda a: getattr(relay, op)(a, axis=axis, keepdims=keepdims), [x])


def test_variance_and_layer_norm_pieces():
    x = _f(5, 67)
    _run(lambda a: relay.variance(a, axis=-1, keepdims=True), [x])
    _run(lambda a: relay.std(a, axis=1), [x])


@pytest.mark.parametrize("shape,newshape", [((6, 35), (35, 6)), ((2, 3, 4, 5), (6, -1)),
                                           ((1, 7), (7,))])
def test_reshape(shape, newshape):
    _run(lambda a: relay.reshape(a, newshape) + relay.const(1.0), [_f(*shape)])


def test_transforms():
    x = _f(2, 3, 17)
    _run(lambda a: relay.transpose(a, (2, 0, 1)), [x])
    _run(lambda a: relay.expand_dims(a, 1) * relay.const(2.0), [x])
    _run(lambda a: relay.squeeze(relay.expand_dims(a, 0), [0]) * relay.const(2.0), [x])
    _run(lambda a: relay.strided_slice(a, [0, 1, 2], [2, 3, 15], [1, 1, 3]), [x])
    _run(lambda a: relay.strided_slice(a, [1, 2, 16], [0, 0, 0], [-1, -1, -2]), [x])
    _run(lambda a, b: relay.concatenate([a, b], axis=2), [x, _f(2, 3, 5)])
    _run(lambda a: relay.broadcast_to(a, (4, 2, 3, 17)), [x])
    _run(lambda a: relay.nn.batch_flatten(a) * relay.const(2.0), [x])
    _run(lambda a: relay.tile(a, (2, 1, 1)), [x])
    _run(lambda a: relay.reverse(a, axis=2), [x])
    _run(lambda a: relay.stack([a, a], axis=1), [x])


def test_split_and_take():
    x = _f(4, 9)
    _run(lambda a: relay.split(a, 3, axis=1).astuple(), [x])
    idx = np.array([[0, 3], [8, 1]], dtype="int32")
    _run(lambda a, i: relay.take(a, i, axis=1), [x, idx])


def test_pad():
    _run(lambda a: relay.nn.pad(a, ((0, 0), (1, 2), (3, 0))), [_f(2, 5, 7)])


@pytest.mark.parametrize("units,batch", [(13, 1), (70, 5), (33, 40)])
def test_dense_bias_relu(units, batch):
    x, w, b = _f(batch, 37), _f(units, 37), _f(units)
    _run(lambda a, c, d: relay.nn.relu(relay.nn.bias_add(relay.nn.dense(a, c), d)), [x, w, b],
         opt_level=3)


@pytest.mark.parametrize("ta,tb", [(False, False), (False, True), (True, False), (True, True)])
def test_matmul_and_batch_matmul(ta, tb):
    a = _f(19, 40) if not ta else _f(40, 19)
    b = _f(40, 23) if not tb else _f(23, 40)
    _run(lambda x, y: relay.nn.matmul(x, y, transpose_a=ta, transpose_b=tb), [a, b])
    a3 = _f(3, 19, 40) if not ta else _f(3, 40, 19)
    b3 = _f(1, 40, 23) if not tb else _f(1, 23, 40)
    _run(lambda x, y: relay.nn.batch_matmul(x, y, transpose_a=ta, transpose_b=tb), [a3, b3])


@pytest.mark.parametrize("kw", [
    dict(strides=(1, 1), padding=(1, 1)),
    dict(strides=(2, 2), padding=(3, 3), dilation=(1, 1)),
    dict(strides=(1, 1), padding=(0, 0)),
    dict(strides=(2, 1), padding=(1, 2, 0, 1), dilation=(2, 1)),
    dict(strides=(1, 1), padding=(1, 1), groups=4),
    dict(strides=(1, 1), padding=(1, 1), groups=8),
])
def test_conv2d(kw):
    groups = kw.get("groups", 1)
    ksize = (1, 1) if kw.get("padding") == (0, 0) else (3, 3)
    x = _f(2, 8, 11, 13)
    w = _f(8 if groups != 8 else 8, 8 // groups, *ksize)
    _run(lambda a, b: relay.nn.relu(relay.nn.conv2d(a, b, kernel_size=ksize, **kw)), [x, w],
         opt_level=3)


@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("kw", [dict(pool_size=(3, 3), strides=(2, 2), padding=(1, 1)),
                                dict(pool_size=(2, 2), strides=(2, 2)),
                                dict(pool_size=(3, 3), strides=(1, 1), padding=(1, 1),
                                     count_include_pad=True),
                                dict(pool_size=(3, 3), strides=(2, 2), ceil_mode=True)])
def test_pool2d(kind, kw):
    kw = dict(kw)
    if kind == "max":
        kw.pop("count_include_pad", None)
    op = relay.nn.max_pool2d if kind == "max" else relay.nn.avg_pool2d
    _run(lambda a: op(a, **kw), [_f(1, 3, 13, 10)])


def test_global_pool_softmax():
    x = _f(2, 5, 7, 9)
    _run(lambda a: relay.nn.global_avg_pool2d(a), [x])
    _run(lambda a: relay.nn.global_max_pool2d(a), [x])
    _run(lambda a: relay.nn.softmax(a, axis=-1), [_f(3, 67) * 5])
    _run(lambda a: relay.nn.softmax(a, axis=1), [_f(3, 7, 5)])
    _run(lambda a: relay.nn.log_softmax(a), [_f(4, 40)])


def test_fused_chain_has_no_intermediate_buffers():
    """An elementwise chain lowers to one loop nest: no temporaries, no workspace."""
    from minitvm.relay.backend import te_compiler

    x = relay.var("x", shape=(8, 37))
    y = relay.exp(relay.nn.relu(x * relay.const(2.0)) + relay.const(1.0))
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.sigmoid(y)))
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm")
    (k,) = lib.get_lib().kernels.values()
    assert k.kind == "native" and k.ws_bytes == 0
    text = te_compiler.lower_function(_only_primitive(lib.ir_mod), "f").prim_func.script()
    assert "allocate" not in text and "T.vectorized" in text


def _only_primitive(mod):
    from minitvm.relay.expr import Function
    from minitvm.relay.expr_functor import post_order_visit

    found = []
    post_order_visit(mod["main"], lambda e: found.append(e) if isinstance(e, Function)
                     and e.attrs is not None and e.attrs.get("Primitive") else None)
    return found[0]

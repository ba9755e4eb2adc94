"""FuseOps builds TVM's programs: the cases of TVM v0.19's own test of the pass, restated.

Each case builds a program, fuses it, and compares with the program TVM expects (fused functions
marked ``Primitive=1`` whose parameters are the group's outside inputs; scalar constants stay
inside a group, other constants are passed in); the interpreter runs both on random inputs.
"""

import numpy as np
from pass_test_util import check_numerics

import minitvm as tvm
from minitvm import relay
from minitvm.relay import transform


def _opt(expr, p):
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(expr))
    return p(mod)["main"]


def _prim(params, body):
    return relay.Function(params, body).with_attr("Primitive", tvm.tir.IntImm("int32", 1))


def _one():
    return relay.const(1, "float32")


def _check(before, expected, level=2, numerics=True, config=None):
    with tvm.transform.PassContext(config=config or {}):
        got = _opt(before, transform.FuseOps(fuse_opt_level=level))
    assert not relay.analysis.free_vars(got)
    tvm.ir.assert_structural_equal(got, _opt(expected, transform.InferType()))
    if numerics:
        check_numerics(before, got)
    return got


def test_fuse_simple():
    x = relay.var("x", shape=(10, 20))
    before = relay.Function([x], relay.squeeze(relay.exp(relay.add(x, _one()))))
    p = relay.var("p", shape=(10, 20))
    f = _prim([p], relay.squeeze(relay.exp(relay.add(p, _one()))))
    x2 = relay.var("x", shape=(10, 20))
    _check(before, relay.Function([x2], relay.Call(f, [x2])))


def test_conv2d_fuse():
    dshape = (1, 4, 8, 8)

    def conv(d, w, k):
        return relay.nn.conv2d(d, w, kernel_size=(k, k), padding=(k // 2, k // 2), channels=4)

    x = relay.var("x", shape=dshape)
    w1, w2, w3 = relay.var("w1"), relay.var("w2"), relay.var("w3")
    y = conv(relay.add(x, _one()), w1, 3)
    y = relay.add(y, relay.add(_one(), y))  # the post-dominator of the first conv
    z = relay.add(conv(y, w2, 1), conv(y, w3, 3))  # the add fuses into one conv only
    before = relay.Function(relay.analysis.free_vars(z), z)

    p0 = relay.var("p0", shape=dshape)
    f0 = _prim([p0], relay.add(p0, _one()))
    p0, p1 = relay.var("p0", shape=dshape), relay.var("p1")
    c = conv(p0, p1, 3)
    f1 = _prim([p0, p1], relay.add(c, relay.add(_one(), c)))
    p0, p1 = relay.var("p0", shape=dshape), relay.var("p1")
    f2 = _prim([p0, p1], conv(p0, p1, 3))
    p0, p1, p2 = relay.var("p0", shape=dshape), relay.var("p1"), relay.var("p2", shape=dshape)
    f3 = _prim([p0, p1, p2], relay.add(conv(p0, p1, 1), p2))
    x = relay.var("x", shape=dshape)
    w1, w2, w3 = relay.var("w1"), relay.var("w2"), relay.var("w3")
    y = relay.Call(f1, [relay.Call(f0, [x]), w1])
    out = relay.Call(f3, [y, w2, relay.Call(f2, [y, w3])])
    _check(before, relay.Function(relay.analysis.free_vars(out), out))


def _pool(x):
    return relay.nn.max_pool2d(x, pool_size=(2, 2), strides=(2, 2), padding=(0, 0))


def _up(x):
    return relay.nn.upsampling(x, scale_h=2, scale_w=2, layout="NCHW")


def test_concatenate_joins_its_injective_inputs():
    dshape = (1, 4, 8, 8)
    half = (1, 4, 4, 4)
    x = relay.var("x", shape=dshape)
    out = relay.add(relay.concatenate((_up(_pool(x)), x), axis=1), _one())
    before = relay.Function([x], out)
    p = relay.var("x", shape=dshape)
    f0 = _prim([p], _pool(p))
    p0, p1 = relay.var("p0", shape=half), relay.var("p1", shape=dshape)
    f1 = _prim([p0, p1], relay.add(relay.concatenate((_up(p0), p1), axis=1), _one()))
    x = relay.var("x", shape=dshape)
    _check(before, relay.Function([x], relay.Call(f1, [relay.Call(f0, [x]), x])))
    _opt(before, transform.FuseOps(fuse_opt_level=0))


def test_tuple_root_stays_outside():
    dshape = (1, 4, 8, 8)
    x = relay.var("x", shape=dshape)
    before = relay.Function([x], relay.Tuple((_up(_pool(x)), x)))
    p = relay.var("x", shape=dshape)
    f0 = _prim([p], _pool(p))
    p0 = relay.var("p0", shape=(1, 4, 4, 4))
    f1 = _prim([p0], _up(p0))
    x = relay.var("x", shape=dshape)
    _check(before, relay.Function([x], relay.Tuple((relay.Call(f1, [relay.Call(f0, [x])]), x))))


def test_stop_fusion_splits_and_disappears():
    x = relay.var("x", shape=(10, 20))
    before = relay.Function(
        [x], relay.exp(relay.annotation.stop_fusion(relay.add(x, _one()))))
    p = relay.var("p0", shape=(10, 20))
    f1 = _prim([p], relay.add(p, _one()))
    q = relay.var("p01", shape=(10, 20))
    f2 = _prim([q], relay.exp(q))
    x = relay.var("x", shape=(10, 20))
    _check(before, relay.Function([x], relay.Call(f2, [relay.Call(f1, [x])])))


def test_if_condition_fused_closures_untouched():
    def build(fused: bool):
        x = relay.var("x", shape=(), dtype="int64")
        y = relay.var("y", shape=(), dtype="int64")
        if fused:
            p1 = relay.var("p1", shape=(), dtype="int64")
            p2 = relay.var("p2", shape=(), dtype="int64")
            cond = relay.Call(_prim([p1, p2], relay.greater(p1, p2)), [x, y])
        else:
            cond = relay.greater(x, y)
        sb = relay.ScopeBuilder()
        with sb.if_scope(cond):
            sb.ret(relay.Function([], x))
        with sb.else_scope():
            sb.ret(relay.Function([], y))
        return relay.Function([x, y], relay.Call(sb.get(), []))

    _check(build(False), build(True))


def _gates(t):
    return relay.sigmoid(t[0]) + relay.tanh(t[1]) * relay.exp(t[2])


def test_fuse_tuple_get_elemwise():
    dim = 4
    x = relay.var("X", shape=(1, dim))
    w = relay.var("W", shape=(3 * dim, dim))
    before = relay.Function(
        [x, w], _gates(relay.split(relay.nn.dense(x, w), indices_or_sections=3, axis=1)))
    p0, p1 = relay.var("p0", shape=(1, dim)), relay.var("p1", shape=(3 * dim, dim))
    f0 = _prim([p0, p1], relay.nn.dense(p0, p1))
    q = relay.var("p01", shape=(1, 3 * dim))
    f1 = _prim([q], _gates(relay.split(q, indices_or_sections=3, axis=1)))
    x = relay.var("X", shape=(1, dim))
    w = relay.var("W", shape=(3 * dim, dim))
    _check(before, relay.Function([x, w], relay.Call(f1, [relay.Call(f0, [x, w])])))
    _opt(before, transform.FuseOps(fuse_opt_level=0))


def test_tuple_get_root():
    dim = 4
    x = relay.var("X", shape=(1, 3 * dim))
    w = relay.var("W", shape=(dim, dim))
    before = relay.Function(
        [x, w], relay.nn.dense(relay.split(x, indices_or_sections=3, axis=1)[0], w))
    p0 = relay.var("p0", shape=(1, 3 * dim))
    f0 = _prim([p0], relay.split(p0, indices_or_sections=3, axis=1)[0])
    q, p1 = relay.var("p01", shape=(1, dim)), relay.var("p1", shape=(dim, dim))
    f1 = _prim([q, p1], relay.nn.dense(q, p1))
    x = relay.var("X", shape=(1, 3 * dim))
    w = relay.var("W", shape=(dim, dim))
    _check(before, relay.Function([x, w], relay.Call(f1, [relay.Call(f0, [x]), w])))


def _intermediate_tuple_body(x):
    inj = relay.squeeze(x)
    y1 = relay.add(inj, _one())
    y2 = relay.add(relay.add(relay.squeeze(inj), _one()), _one())
    y3 = relay.add(inj, _one())
    return relay.add(relay.squeeze(relay.concatenate((y1, y2, y3), axis=1)), _one())


def test_tuple_intermediate_fuses_whole():
    dshape = (1, 4, 8, 8)
    x = relay.var("x", shape=dshape)
    before = relay.Function([x], _intermediate_tuple_body(x))
    p = relay.var("p0", shape=dshape)
    f = _prim([p], _intermediate_tuple_body(p))
    x = relay.var("x", shape=dshape)
    _check(before, relay.Function([x], relay.Call(f, [x])))


def _gen_consecutive_tuple(x):
    def intermediate(x):
        ys = [relay.add(x, _one()) for _ in range(3)]
        return relay.add(relay.concatenate(ys, axis=1), _one())

    return relay.concatenate([intermediate(x) for _ in range(3)], axis=1)


def test_tuple_consecutive():
    dshape = (1, 2, 4, 4)
    x = relay.var("x", shape=dshape)
    out = relay.add(_pool(_gen_consecutive_tuple(x)), _one())
    before = relay.Function([x], relay.Tuple((out, relay.add(out, _one()))))
    p0 = relay.var("p0", shape=dshape)
    f0 = _prim([p0], _gen_consecutive_tuple(p0))
    p1 = relay.var("p01", shape=(1, dshape[1] * 9, dshape[2], dshape[3]))
    f1 = _prim([p1], relay.add(_pool(p1), _one()))
    p2 = relay.var("p02", shape=(1, dshape[1] * 9, dshape[2] // 2, dshape[3] // 2))
    f2 = _prim([p2], relay.add(p2, _one()))
    x = relay.var("x", shape=dshape)
    z = relay.Call(f1, [relay.Call(f0, [x])])
    _check(before, relay.Function([x], relay.Tuple((z, relay.Call(f2, [z])))))


def _conv_relu(data, w):
    return relay.nn.relu(relay.nn.conv2d(data, w, kernel_size=(3, 3), padding=(1, 1), channels=2))


def test_inception_like():
    dshape = (1, 2, 4, 4)
    x = relay.var("x", shape=dshape)
    ws = [relay.var(f"w{i}") for i in range(1, 5)]
    in1 = relay.concatenate((_conv_relu(x, ws[0]), _conv_relu(x, ws[1])), axis=1)
    in2 = relay.concatenate((_conv_relu(in1, ws[2]), _conv_relu(in1, ws[3])), axis=1)
    before = relay.Function(relay.analysis.free_vars(in2), in2)

    def conv_fn(shape):
        p, w = relay.var("p", shape=shape), relay.var("w")
        return _prim([p, w], _conv_relu(p, w))

    def concat_fn():
        a, b = relay.var("a", shape=dshape), relay.var("b", shape=dshape)
        return _prim([a, b], relay.concatenate((a, b), axis=1))

    dshape2 = (1, 4, 4, 4)
    x = relay.var("x", shape=dshape)
    ws = [relay.var(f"w{i}") for i in range(1, 5)]
    c1 = relay.Call(conv_fn(dshape), [x, ws[0]])
    c2 = relay.Call(conv_fn(dshape), [x, ws[1]])
    cat = relay.Call(concat_fn(), [c1, c2])
    c3 = relay.Call(conv_fn(dshape2), [cat, ws[2]])
    c4 = relay.Call(conv_fn(dshape2), [cat, ws[3]])
    out = relay.Call(concat_fn(), [c3, c4])
    _check(before, relay.Function(relay.analysis.free_vars(out), out))


def test_fuse_parallel_injective():
    def body(x):
        y = relay.add(x, relay.const(1, "int32"))
        return relay.left_shift(relay.squeeze(y), relay.transpose(y, axes=[0, 1]))

    x = relay.var("x", shape=(10, 20), dtype="int32")
    before = relay.Function([x], body(x))
    p = relay.var("p", shape=(10, 20), dtype="int32")
    x = relay.var("x", shape=(10, 20), dtype="int32")
    _check(before, relay.Function([x], relay.Call(_prim([p], body(p)), [x])))


def test_input_module_is_unchanged():
    def build():
        x = relay.var("x", shape=(10, 20))
        mod = tvm.IRModule()
        mod["main"] = relay.Function([x], relay.squeeze(relay.exp(relay.add(x, _one()))))
        return mod

    mod = build()
    new_mod = transform.FuseOps(fuse_opt_level=2)(mod)
    tvm.ir.assert_structural_equal(mod, build())
    p = relay.var("p", shape=(10, 20))
    x = relay.var("x", shape=(10, 20))
    expected = tvm.IRModule()
    expected["main"] = relay.Function(
        [x], relay.Call(_prim([p], relay.squeeze(relay.exp(relay.add(p, _one())))), [x]))
    tvm.ir.assert_structural_equal(new_mod, relay.transform.InferType()(expected))


def test_split_with_references_is_well_formed():
    x = relay.var("x", shape=(6, 9))
    y = relay.split(x, 3).astuple()
    a, b, c = (relay.TupleGetItem(y, i) for i in range(3))
    mod = tvm.IRModule()
    mod["main"] = relay.Function([x], a + relay.RefRead(relay.RefCreate(b)) + c)
    out = relay.transform.InferType()(transform.FuseOps()(mod))
    check_numerics(mod, out)


def _exp_chain(x, n):
    for _ in range(n):
        x = relay.exp(x)
    return x


def test_fuse_max_depth():
    n, max_ops = 30, 16
    x = relay.var("x", shape=(2, 3))
    before = relay.Function([x], _exp_chain(x, n))
    p = relay.var("p", shape=(2, 3))
    f1 = _prim([p], _exp_chain(p, max_ops))
    q = relay.var("pp", shape=(2, 3))
    f2 = _prim([q], _exp_chain(q, n - max_ops))
    x = relay.var("x", shape=(2, 3))
    expected = relay.Function([x], relay.Call(f2, [relay.Call(f1, [x])]))
    _check(before, expected, config={"relay.FuseOps.max_depth": max_ops}, numerics=False)


def test_fuse_max_default_depth_is_256():
    n = 300
    x = relay.var("x", shape=(2, 3))
    before = relay.Function([x], _exp_chain(x, n))
    p = relay.var("p", shape=(2, 3))
    q = relay.var("pp", shape=(2, 3))
    x = relay.var("x", shape=(2, 3))
    inner = relay.Call(_prim([p], _exp_chain(p, 256)), [x])
    expected = relay.Function([x], relay.Call(_prim([q], _exp_chain(q, n - 256)), [inner]))
    _check(before, expected, numerics=False)


def _diamond(x, branch_len):
    return relay.add(_exp_chain(x, branch_len), _exp_chain(x, branch_len))


def test_fuse_max_diamond():
    branch_len, num = 3, 3
    x = relay.var("x", shape=(2, 3))
    out = x
    for _ in range(num):
        out = _diamond(out, branch_len)
    before = relay.Function([x], out)
    x = relay.var("x", shape=(2, 3))
    out = x
    for _ in range(num):
        p = relay.var("p", shape=(2, 3))
        out = relay.Call(_prim([p], _diamond(p, branch_len)), [out])
    _check(before, relay.Function([x], out),
           config={"relay.FuseOps.max_depth": branch_len * 2 + 1}, numerics=False)


def test_fuse_take_passes_non_scalar_constant_in():
    shape = (10, 1)
    x = relay.var("x", shape=shape)
    idx = relay.const(np.array([0], "int64"), dtype="int64")
    before = relay.Function([x], relay.take(relay.concatenate([x, x], axis=-1), indices=idx))
    p0 = relay.var("p0", shape=shape)
    p1 = relay.var("p1", shape=(1,), dtype="int64")
    f0 = _prim([p0, p1], relay.take(relay.concatenate([p0, p0], axis=-1), indices=p1))
    x = relay.var("x", shape=shape)
    _check(before, relay.Function([x], relay.Call(
        f0, [x, relay.const(np.array([0], "int64"), dtype="int64")])))


def test_fuse_gather_nd():
    shape = (10, 1)
    x = relay.var("x", shape=shape)
    idx = relay.const(np.array([[0], [0]], "int64"), dtype="int64")
    before = relay.Function([x], relay.gather_nd(relay.concatenate([x, x], axis=-1), idx))
    p0 = relay.var("p0", shape=shape)
    p1 = relay.var("p1", shape=(2, 1), dtype="int64")
    f0 = _prim([p0, p1], relay.gather_nd(relay.concatenate([p0, p0], axis=-1), p1))
    x = relay.var("x", shape=shape)
    _check(before, relay.Function([x], relay.Call(
        f0, [x, relay.const(np.array([[0], [0]], "int64"), dtype="int64")])))


def test_fuse_bcast_reduce_scalar():
    x = relay.var("x", shape=(), dtype="int32")
    before = relay.Function([x], relay.argmax(relay.add(x, relay.const(1, "int32"))))
    p = relay.var("p0", shape=(), dtype="int32")
    f = _prim([p], relay.argmax(relay.add(p, relay.const(1, "int32"))))
    x = relay.var("x", shape=(), dtype="int32")
    _check(before, relay.Function([x], relay.Call(f, [x])))


def test_fuse_softmax_with_the_cast_after_it():
    x = relay.var("x", shape=(16, 8))
    before = relay.Function([x], relay.cast(relay.nn.softmax(x), "float16"))
    p = relay.var("p0", shape=(16, 8))
    f = _prim([p], relay.cast(relay.nn.softmax(p), "float16"))
    x = relay.var("x", shape=(16, 8))
    _check(before, relay.Function([x], relay.Call(f, [x])), numerics=False)

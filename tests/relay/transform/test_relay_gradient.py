"""relay.transform.gradient: first- and higher-order reverse mode vs finite differences/torch."""

from __future__ import annotations

import numpy as np
import pytest
from relay_functional_programs import HIGHER_ORDER_PROGRAM

import minitvm as tvm
from minitvm import relay
from minitvm.relay.transform import gradient

MODES = ["first_order", "higher_order"]


def _run(func, args, mod=None):
    m = mod.shallow_copy() if mod is not None else tvm.IRModule()
    m["main"] = func
    m = relay.transform.InferType()(m)
    res = relay.create_executor("debug", mod=m).evaluate()(*args)
    return res[0].numpy(), [g.numpy() for g in res[1]]


def _loss(func, args, mod=None):
    m = mod.shallow_copy() if mod is not None else tvm.IRModule()
    m["main"] = func
    m = relay.transform.InferType()(m)
    return float(np.sum(relay.create_executor("debug", mod=m).evaluate()(*args).numpy()))


def _finite_differences(func, args, mod=None, eps=1e-6):
    grads = []
    for i, a in enumerate(args):
        g = np.zeros_like(a)
        for idx in np.ndindex(a.shape):
            up = [x.copy() for x in args]
            down = [x.copy() for x in args]
            up[i][idx] += eps
            down[i][idx] -= eps
            g[idx] = (_loss(func, up, mod) - _loss(func, down, mod)) / (2 * eps)
        grads.append(g)
    return grads


def _check_against_fd(func, args, mode, mod=None, rtol=1e-5, atol=1e-6):
    out, grads = _run(gradient(func, mod, mode=mode), args, mod)
    np.testing.assert_allclose(np.sum(out), _loss(func, args, mod), rtol=1e-10)
    for g, ref in zip(grads, _finite_differences(func, args, mod), strict=True):
        np.testing.assert_allclose(g, ref, rtol=rtol, atol=atol)


def _mlp(dtype="float64"):
    x = relay.var("x", shape=(3, 4), dtype=dtype)
    w1 = relay.var("w1", shape=(5, 4), dtype=dtype)
    b1 = relay.var("b1", shape=(5,), dtype=dtype)
    w2 = relay.var("w2", shape=(2, 5), dtype=dtype)
    h = relay.tanh(relay.nn.bias_add(relay.nn.dense(x, w1), b1))
    out = relay.nn.log_softmax(relay.nn.dense(h, w2))
    return relay.Function([x, w1, b1, w2], relay.sum(relay.multiply(out, out)))


def _conv(dtype="float64"):
    x = relay.var("x", shape=(1, 2, 6, 6), dtype=dtype)
    w = relay.var("w", shape=(3, 2, 3, 3), dtype=dtype)
    y = relay.nn.conv2d(x, w, strides=(2, 2), padding=(1, 1))
    y = relay.nn.relu(relay.add(y, relay.const(0.1, dtype)))
    y = relay.nn.max_pool2d(y, pool_size=(2, 2), strides=(1, 1))
    y = relay.nn.avg_pool2d(y, pool_size=(2, 2))
    y = relay.nn.softmax(relay.nn.batch_flatten(y))
    return relay.Function([x, w], relay.sum(relay.multiply(y, relay.const(np.arange(3.0), dtype))))


def _rand(shapes, seed=0, dtype="float64"):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(dtype) for s in shapes]


@pytest.mark.parametrize("mode", MODES)
def test_mlp_matches_finite_differences(mode):
    _check_against_fd(_mlp(), _rand([(3, 4), (5, 4), (5,), (2, 5)]), mode)


@pytest.mark.parametrize("mode", MODES)
def test_conv_matches_finite_differences(mode):
    _check_against_fd(_conv(), _rand([(1, 2, 6, 6), (3, 2, 3, 3)], seed=1), mode, rtol=1e-4)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("build", [_mlp, _conv])
def test_matches_torch_autograd(mode, build):
    torch = pytest.importorskip("torch", reason="torch is not installed (pip install minitvm[torch])")
    func = build("float32")
    shapes = [tuple(int(d) for d in p.type_annotation.shape) for p in func.params]
    args = _rand(shapes, seed=3, dtype="float32")
    _, grads = _run(gradient(func, mode=mode), args)
    t = [torch.tensor(a, requires_grad=True) for a in args]
    if build is _mlp:
        h = torch.tanh(t[0] @ t[1].T + t[2])
        out = torch.log_softmax(h @ t[3].T, dim=1)
        loss = (out * out).sum()
    else:
        y = torch.nn.functional.conv2d(t[0], t[1], stride=2, padding=1)
        y = torch.relu(y + 0.1)
        y = torch.nn.functional.max_pool2d(y, 2, stride=1)
        y = torch.nn.functional.avg_pool2d(y, 2)
        y = torch.softmax(y.flatten(1), dim=1)
        loss = (y * torch.arange(3.0)).sum()
    loss.backward()
    for g, ref in zip(grads, t, strict=True):
        np.testing.assert_allclose(g, ref.grad.numpy(), rtol=1e-4, atol=1e-5)


OPS = [
    ("exp", lambda x: relay.exp(x)),
    ("log", lambda x: relay.log(relay.abs(x))),
    ("sqrt", lambda x: relay.sqrt(relay.abs(x))),
    ("sigmoid", lambda x: relay.sigmoid(x)),
    ("divide", lambda x: relay.divide(x, relay.add(relay.abs(x), relay.const(1.0, "float64")))),
    ("broadcast", lambda x: relay.multiply(x, relay.sum(x, axis=[0], keepdims=True))),
    ("mean", lambda x: relay.mean(relay.multiply(x, x), axis=[1])),
    ("max", lambda x: relay.max(x, axis=[1])),
    ("transpose", lambda x: relay.multiply(relay.transpose(x), relay.const(
        np.arange(6.0).reshape(3, 2), "float64"))),
    ("reshape", lambda x: relay.nn.softmax(relay.reshape(x, (3, 2)))),
    ("concatenate", lambda x: relay.multiply(relay.concatenate([x, relay.sin(x)], axis=1),
                                             relay.const(np.arange(12.0).reshape(2, 6), "float64"))),
    ("take", lambda x: relay.multiply(relay.take(x, relay.const(np.array([2, 0, 2], "int32")),
                                                 axis=1), x)),
    ("matmul", lambda x: relay.nn.matmul(x, relay.transpose(relay.cos(x)))),
    ("pad", lambda x: relay.multiply(relay.nn.pad(x, ((1, 0), (0, 2))), relay.const(
        np.arange(15.0).reshape(3, 5), "float64"))),
    ("strided_slice", lambda x: relay.add(
        relay.sum(relay.multiply(relay.strided_slice(x, [0, 1], [2, 3]),
                                 relay.sin(relay.strided_slice(x, [0, 0], [2, 2])))),
        relay.sum(relay.exp(relay.strided_slice(x, [1], [2], axes=[0]))))),
    ("split", lambda x: relay.multiply(relay.split(x, 3, axis=1)[0],
                                       relay.exp(relay.split(x, 3, axis=1)[2]))),
    ("stack", lambda x: relay.multiply(relay.stack([x, relay.cos(x)], axis=1),
                                       relay.const(np.arange(12.0).reshape(2, 2, 3), "float64"))),
    ("layer_norm", lambda x: relay.multiply(relay.nn.layer_norm(
        x, relay.cos(relay.sum(x, axis=[0])), relay.sin(relay.sum(x, axis=[0]))),
        relay.const(np.arange(6.0).reshape(2, 3), "float64"))),
    ("where", lambda x: relay.where(relay.greater(x, relay.const(0.0, "float64")), x,
                                    relay.multiply(x, x))),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name,build", OPS, ids=[o[0] for o in OPS])
def test_op_gradients(name, build, mode):
    x = relay.var("x", shape=(2, 3), dtype="float64")
    func = relay.Function([x], build(x))
    _check_against_fd(func, _rand([(2, 3)], seed=7), mode, rtol=1e-5)


def test_first_order_structure():
    x = relay.var("x", shape=(3,))
    y = relay.var("y", shape=(3,))
    got = relay.transform.InferType()(tvm.IRModule.from_expr(
        gradient(relay.Function([x, y], relay.add(x, y)), mode="first_order")))["main"]

    t = relay.TensorType((3,), "float32")
    v0, g1 = relay.var("v0", t), relay.var("g1", t)
    g2, g3 = relay.var("g2", t), relay.var("g3", t)
    body = relay.Tuple([v0, relay.Tuple([g2, g3])])
    body = relay.Let(g3, relay.collapse_sum_like(g1, y), body)
    body = relay.Let(g2, relay.collapse_sum_like(g1, x), body)
    body = relay.Let(g1, relay.ones_like(v0), body)
    body = relay.Let(v0, relay.add(x, y), body)
    expected = relay.transform.InferType()(tvm.IRModule.from_expr(
        relay.Function([x, y], body)))["main"]
    assert tvm.ir.structural_equal(got, expected)


def test_higher_order_structure_uses_references_and_closures():
    x = relay.var("x", shape=(3,))
    g = gradient(relay.Function([x], relay.exp(x)))
    kinds = {type(n).__name__ for n in _nodes(g)}
    assert {"RefCreate", "RefRead", "RefWrite", "Function"} <= kinds
    m = relay.transform.InferType()(tvm.IRModule.from_expr(g))
    t = m["main"].checked_type
    assert str(t.ret_type) == "(Tensor[(3), float32], (Tensor[(3), float32],))"


def _nodes(e):
    out = []
    relay.analysis.post_order_visit(e, out.append)
    return out




def test_higher_order_recursion_closures_adts_references():
    mod = relay.fromtext(HIGHER_ORDER_PROGRAM)
    x = np.array([1.0, 2.0, 3.0])
    y = np.array([0.5, -1.0, 2.0])
    out, (dx, dy) = _run(gradient(mod["main"], mod), [x, y], mod)
    np.testing.assert_allclose(out, x * y + y + x**3)
    np.testing.assert_allclose(dx, y + 3 * x**2)
    np.testing.assert_allclose(dy, x + 1)
    assert "pow_grad" in [g.name_hint for g in mod.get_global_vars()]
    _check_against_fd(mod["main"], [x, y], "higher_order", mod)


def test_tuple_output_and_int_inputs():
    x = relay.var("x", shape=(2,), dtype="float64")
    n = relay.var("n", shape=(), dtype="int32")
    body = relay.Tuple([relay.multiply(x, x), relay.multiply(x, relay.cast(n, "float64"))])
    func = relay.Function([x, n], body)
    args = [np.array([1.5, -2.0]), np.array(3, "int32")]
    for mode in MODES:
        m = relay.transform.InferType()(tvm.IRModule.from_expr(gradient(func, mode=mode)))
        res = relay.create_executor("debug", mod=m).evaluate()(*args)
        # TVM: first order seeds every output field, higher order only the first one
        expected = 2 * args[0] + (3 if mode == "first_order" else 0)
        np.testing.assert_allclose(res[1][0].numpy(), expected)
        np.testing.assert_array_equal(res[1][1].numpy(), 0)


def test_input_function_not_modified_and_global_var_input():
    mod = relay.fromtext(HIGHER_ORDER_PROGRAM)
    before = tvm.ir.structural_hash(mod["main"])
    g = gradient(mod.get_global_var("main"), mod, mode="higher_order")
    assert isinstance(g, relay.Function)
    assert tvm.ir.structural_hash(mod["main"]) == before


def test_errors():
    x = relay.var("x", shape=(2,))
    f = relay.Function([x], relay.exp(x))
    with pytest.raises(ValueError, match="unknown mode 'bogus'"):
        gradient(f, mode="bogus")
    with pytest.raises(TypeError, match="expects a relay.Function"):
        gradient(relay.exp(x))
    c = relay.var("c", shape=(), dtype="bool")
    g = relay.Function([x, c], relay.If(c, x, relay.exp(x)))
    with pytest.raises(TypeError, match="first_order.*found If"):
        gradient(g, mode="first_order")
    lrn = relay.Function([x], relay.sum(relay.argsort(x)) if hasattr(relay, "argsort")
                         else relay.nn.lrn(relay.reshape(x, (1, 2, 1, 1))))
    with pytest.raises(ValueError, match="has no registered gradient"):
        gradient(lrn, mode="first_order")
    fn_param = relay.var("f", relay.FuncType([relay.TensorType((2,))], relay.TensorType((2,))))
    with pytest.raises(TypeError, match="parameter %f has type fn"):
        gradient(relay.Function([x, fn_param], relay.Call(fn_param, [x])))
    r = relay.Function([x], relay.RefCreate(x))
    with pytest.raises(TypeError, match="result must be a tensor or a tuple of tensors"):
        gradient(r)


@pytest.mark.parametrize("mode", MODES)
def test_deep_chain(mode):
    x = relay.var("x", shape=(2,))
    e = x
    for _ in range(100_000):
        e = relay.negative(e)
    g = gradient(relay.Function([x], e), mode=mode)
    assert isinstance(g, relay.Function)

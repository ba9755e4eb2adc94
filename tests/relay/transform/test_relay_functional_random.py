"""Random higher-order programs (closures, references, If, ADTs through the Prelude, tuples)
keep their outputs through to_cps/un_cps, PartialEvaluate, Defunctionalization and
LazyGradientInit, and their higher-order gradients match finite differences."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.relay.prelude import Prelude
from minitvm.relay.transform import (
    Defunctionalization,
    LazyGradientInit,
    PartialEvaluate,
    gradient,
    to_cps,
    un_cps,
)

SHAPE = (3,)
DTYPE = "float64"
BINARY = [relay.add, relay.multiply, relay.subtract]
UNARY = [relay.sin, relay.tanh, relay.negative]


def _tensor_var(name):
    return relay.var(name, shape=SHAPE, dtype=DTYPE)


def random_program(seed: int, p: Prelude) -> relay.Function:
    """A let chain over two tensor parameters using every functional feature at random."""
    rng = np.random.default_rng(seed)
    x, y = _tensor_var("x"), _tensor_var("y")
    values, closures, refs, binds = [x, y], [], [], []

    def pick(pool):
        return pool[int(rng.integers(len(pool)))]

    def bind(value, name="v"):
        v = relay.var(f"{name}{len(binds)}")
        binds.append((v, value))
        return v

    for _ in range(int(rng.integers(6, 12))):
        kind = int(rng.integers(7))
        a, b = pick(values), pick(values)
        if kind == 0:
            values.append(bind(pick(BINARY)(a, b)))
        elif kind == 1:
            z = _tensor_var("z")
            closures.append(bind(relay.Function([z], pick(BINARY)(z, pick(UNARY)(a))), "f"))
        elif kind == 2 and closures:
            values.append(bind(relay.Call(pick(closures), [a])))
        elif kind == 3:
            if not refs:
                refs.append(bind(relay.RefCreate(a), "r"))
            r = pick(refs)
            bind(relay.RefWrite(r, pick(BINARY)(relay.RefRead(r), b)), "w")
            values.append(bind(relay.RefRead(r)))
        elif kind == 4:
            cond = relay.less(relay.sum(a), relay.sum(b))
            values.append(bind(relay.If(cond, pick(BINARY)(a, b), pick(UNARY)(a))))
        elif kind == 5:
            lst = p.cons(a, p.cons(pick(UNARY)(b), p.nil()))
            u, w = _tensor_var("u"), _tensor_var("w")
            step = relay.Function([u, w], pick(BINARY)(u, w))
            values.append(bind(p.foldl(step, relay.zeros(SHAPE, DTYPE), lst)))
        else:
            t = bind(relay.Tuple([a, pick(UNARY)(b)]), "t")
            values.append(bind(relay.TupleGetItem(t, int(rng.integers(2)))))
    body = values[-1]
    for v in values[-3:-1]:
        body = relay.add(body, v)
    for v, value in reversed(binds):
        body = relay.Let(v, value, body)
    return relay.Function([x, y], body)


def _eval(mod, func, args):
    m = mod.shallow_copy()
    m["main"] = func
    m = relay.transform.InferType()(m)
    return relay.create_executor("debug", mod=m).evaluate()(*args)


ARGS = [np.array([0.3, -1.2, 0.8]), np.array([0.5, 0.1, -0.4])]


@pytest.mark.parametrize("seed", range(12))
def test_random_programs(seed):
    p = Prelude(tvm.IRModule())
    func = random_program(seed, p)
    mod = relay.transform.InferType()(p.mod.shallow_copy())
    want = _eval(mod, func, ARGS).numpy()

    cps_mod = mod.shallow_copy()
    np.testing.assert_allclose(_eval(cps_mod, un_cps(to_cps(func, cps_mod)), ARGS).numpy(), want)

    with_main = mod.shallow_copy()
    with_main["main"] = func
    pe = relay.transform.InferType()(PartialEvaluate()(with_main))
    np.testing.assert_allclose(_eval(pe, pe["main"], ARGS).numpy(), want)

    lazy = relay.transform.InferType()(LazyGradientInit()(with_main))
    np.testing.assert_allclose(_eval(lazy, lazy["main"], ARGS).numpy(), want)

    defunc_mod = relay.transform.InferType()(with_main)
    first_order = Defunctionalization(defunc_mod["main"], defunc_mod)
    np.testing.assert_allclose(_eval(defunc_mod, first_order, ARGS).numpy(), want)


@pytest.mark.parametrize("seed", range(4))
def test_random_program_gradients(seed):
    p = Prelude(tvm.IRModule())
    func = random_program(100 + seed, p)
    mod = relay.transform.InferType()(p.mod.shallow_copy())
    loss = relay.Function(func.params, relay.sum(func.body))
    res = _eval(mod, gradient(loss, mod), ARGS)
    grads = [g.numpy() for g in res[1].fields]
    eps = 1e-6
    for i in range(2):
        for j in range(3):
            up = [a.copy() for a in ARGS]
            down = [a.copy() for a in ARGS]
            up[i][j] += eps
            down[i][j] -= eps
            fd = (_eval(mod, loss, up).numpy() - _eval(mod, loss, down).numpy()) / (2 * eps)
            np.testing.assert_allclose(grads[i][j], fd, rtol=1e-5, atol=1e-6)

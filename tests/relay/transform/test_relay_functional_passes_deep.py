"""The functional passes (LazyGradientInit, to_cps/un_cps, gradient, Defunctionalization,
PartialEvaluate, ToMixedPrecision) and the interpreter at the default recursion limit: 3,000
closures nested in each other and 5,000-binding let chains (each level takes several Python
frames, so a recursive walk fails far below that), each result run and checked. The passes
also handle 10,000 levels (about 10 minutes for this file on a loaded 2-core machine: too long
for CI).
Before, every one raised RecursionError at 250-1,000 levels (the interpreter took 39 s for 1,000
nested closures: free variables were recomputed per closure)."""

import sys

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.relay import transform

DEPTH = 3_000
CHAIN = 5_000  # far past the recursion limit; kept at this length for the running time
X = np.array([1.0, -2.0], "float32")


def nested_closures(n: int) -> tvm.IRModule:
    """``fn (%x) { let %f0 = fn (%p0) { let %f1 = fn (%p1) { ... }; %f1(%p0) }; %f0(%x) }``
    with ``%p<n-1> + %x`` innermost: each closure in the previous one's body, all capturing x."""
    x = relay.var("x", shape=(2,), dtype="float32")
    ps = [relay.var(f"p{i}", shape=(2,), dtype="float32") for i in range(n)]
    body = relay.add(ps[-1], x)
    for i in range(n - 1, -1, -1):
        f = relay.var(f"f{i}")
        body = relay.Let(f, relay.Function([ps[i]], body), relay.Call(f, [ps[i - 1] if i else x]))
    return tvm.IRModule.from_expr(relay.Function([x], body))


@pytest.fixture(scope="module")
def deep():
    assert sys.getrecursionlimit() <= 1000 or pytest.skip("a raised recursion limit hides it")
    return transform.InferType()(nested_closures(DEPTH))


def _run(mod, *args):
    return relay.create_executor("debug", mod=mod).evaluate()(*args)


def _let_chain(n: int) -> tvm.IRModule:
    """``fn (%x) { let %v1 = %x * 1; let %v2 = %v1 * 1; ... %v<n> }`` (typed)."""
    x = relay.var("x", shape=(2,), dtype="float32")
    vs = [relay.var(f"v{i}") for i in range(n)]
    one = relay.const(1.0)
    body = vs[-1]
    for i in range(n - 1, -1, -1):
        body = relay.Let(vs[i], relay.multiply(vs[i - 1] if i else x, one), body)
    return transform.InferType()(tvm.IRModule.from_expr(relay.Function([x], body)))


def test_interpreter_runs_deeply_nested_closures():
    # free variables were recomputed per closure (quadratic): 1,000 levels took 39 s
    mod = transform.InferType()(nested_closures(DEPTH))
    np.testing.assert_allclose(_run(mod, X).numpy(), 2 * X)


def test_to_mixed_precision(deep):
    out = transform.ToMixedPrecision("float16")(deep)
    np.testing.assert_allclose(_run(out, X).numpy(), 2 * X)


def test_lazy_gradient_init(deep):
    out = transform.LazyGradientInit()(deep)
    assert out["main"].checked_type == deep["main"].checked_type
    np.testing.assert_allclose(_run(out, X).numpy(), 2 * X)


def test_to_cps_and_back(deep):
    mod = deep.shallow_copy()
    mod["main"] = transform.to_cps(deep["main"], mod)
    mod = transform.InferType()(mod)
    mod["main"] = transform.un_cps(mod["main"])
    np.testing.assert_allclose(_run(transform.InferType()(mod), X).numpy(), 2 * X)


def test_higher_order_gradient(deep):
    mod = deep.shallow_copy()
    mod["main"] = transform.gradient(deep["main"], mod)
    fwd, (g,) = _run(transform.InferType()(mod), X)
    np.testing.assert_allclose(fwd.numpy(), 2 * X)
    np.testing.assert_allclose(g.numpy(), [2.0, 2.0])


def test_defunctionalization(deep):
    mod = deep.shallow_copy()
    mod["main"] = transform.Defunctionalization(deep["main"], mod)
    mod = transform.InferType()(mod)
    np.testing.assert_allclose(_run(mod, X).numpy(), 2 * X)


def test_partial_evaluate(deep):
    out = transform.PartialEvaluate()(deep)
    np.testing.assert_allclose(_run(transform.InferType()(out), X).numpy(), 2 * X)


@pytest.fixture(scope="module")
def chain():
    return _let_chain(CHAIN)


@pytest.mark.parametrize("name", ["ToMixedPrecision", "LazyGradientInit", "PartialEvaluate"])
def test_module_passes_on_a_long_let_chain(chain, name):
    out = getattr(transform, name)()(chain)
    np.testing.assert_allclose(_run(transform.InferType()(out), X).numpy(), X)


@pytest.mark.parametrize("mode", ["first_order", "higher_order"])
def test_gradient_of_a_long_let_chain(chain, mode):
    mod = chain.shallow_copy()
    mod["main"] = transform.gradient(chain["main"], mode=mode)
    fwd, (g,) = _run(transform.InferType()(mod), X)
    np.testing.assert_allclose(fwd.numpy(), X)
    np.testing.assert_allclose(g.numpy(), [1.0, 1.0])


def test_cps_and_defunctionalization_of_a_long_let_chain(chain):
    mod = chain.shallow_copy()
    mod["main"] = transform.un_cps(transform.InferType()(tvm.IRModule.from_expr(
        transform.to_cps(chain["main"], mod)))["main"])
    np.testing.assert_allclose(_run(transform.InferType()(mod), X).numpy(), X)
    mod = chain.shallow_copy()
    mod["main"] = transform.Defunctionalization(chain["main"], mod)
    np.testing.assert_allclose(_run(transform.InferType()(mod), X).numpy(), X)

"""DeadCodeElimination and types, as TVM v0.19's: the pass does not re-run type inference, but a
function it rebuilds keeps the type of the function it replaces (TVM's copy-on-write rebuild
copies it), so ``mod["main"].checked_type`` works right after the pass; unchanged
sub-expressions keep their types."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.relay import transform

T = relay.TensorType((2, 3), "float32")


def _typed(func):
    return transform.InferType()(tvm.IRModule.from_expr(func))


def _before():
    x = relay.var("x", T)
    a, b = relay.Var("a", T), relay.Var("b", T)
    return relay.Function([x], relay.Let(a, x + x, relay.Let(b, x * x, a)))


def _expected():
    x = relay.var("x", T)
    a = relay.Var("a", T)
    return relay.Function([x], relay.Let(a, x + x, a), T)  # InferType filled in the ret type


def _run(mod, xv):
    return relay.create_executor("debug", mod=mod).evaluate()(xv).numpy()


@pytest.mark.parametrize("how", ["direct", "sequential"])
def test_dead_binding_removed_and_function_type_kept(how):
    mod = _typed(_before())
    dce = transform.DeadCodeElimination()
    out = dce(mod) if how == "direct" else tvm.transform.Sequential([dce])(mod)
    tvm.ir.assert_structural_equal(out["main"], _expected(), map_free_vars=True)
    assert out["main"] is not mod["main"]
    assert out["main"].checked_type == relay.FuncType([T], T)
    # the kept value was not rebuilt and keeps its type
    assert out["main"].body.value.checked_type == T
    xv = np.random.rand(2, 3).astype("float32")
    np.testing.assert_allclose(_run(out, xv), _run(mod, xv), rtol=1e-6)
    np.testing.assert_allclose(_run(out, xv), 2 * xv, rtol=1e-6)


def test_inline_once_keeps_the_function_type():
    mod = _typed(_before())
    out = transform.DeadCodeElimination(inline_once=True)(mod)
    x = relay.var("x", T)
    tvm.ir.assert_structural_equal(out["main"], relay.Function([x], x + x, T),
                                    map_free_vars=True)
    assert out["main"].checked_type == relay.FuncType([T], T)
    xv = np.random.rand(2, 3).astype("float32")
    np.testing.assert_allclose(_run(out, xv), _run(mod, xv), rtol=1e-6)


def test_unchanged_function_is_returned_as_is():
    x = relay.var("x", T)
    mod = _typed(relay.Function([x], x + x))
    out = transform.DeadCodeElimination()(mod)
    assert out["main"] is mod["main"]
    assert out["main"].checked_type == relay.FuncType([T], T)

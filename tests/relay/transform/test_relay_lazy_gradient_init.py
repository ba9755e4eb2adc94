"""LazyGradientInit: zero/one tensors become lazy GradCells; outputs unchanged."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.relay.transform import LazyGradientInit, PartialEvaluate, gradient

T = relay.TensorType((3,), "float32")


def _apply(func):
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(func))
    out = relay.transform.InferType()(LazyGradientInit()(mod))
    assert "GradCell" not in [g.name_hint for g in mod.get_global_type_vars()]  # input intact
    return mod, out


def _same_outputs(mod, out, args):
    a = relay.create_executor("debug", mod=mod).evaluate()(*args)
    b = relay.create_executor("debug", mod=out).evaluate()(*args)
    flat = [(a, b)]
    while flat:
        x, y = flat.pop()
        if hasattr(x, "fields"):
            flat.extend(zip(x.fields, y.fields))
        else:
            np.testing.assert_allclose(y.numpy(), x.numpy(), rtol=1e-6)


def test_zeros_like_becomes_lazy_cell():
    x = relay.var("x", T)
    mod, out = _apply(relay.Function([x], relay.zeros_like(x)))
    cell, raw, _, zero = out.get_type("GradCell")
    from_cell = out.get_global_var("FromGradCell")
    x1 = relay.var("x1", relay.TypeCall(cell, [T]))
    thunk = relay.Function([], relay.zeros_like(relay.Call(from_cell, [x1])), T)
    expected = relay.Function([x], relay.Let(x1, relay.Call(raw, [x]), relay.Call(
        from_cell, [relay.Call(zero, [thunk])])))
    want = out.shallow_copy()
    want["main"] = expected
    want = relay.transform.InferType()(want)
    assert tvm.ir.structural_equal(out["main"], want["main"])
    _same_outputs(mod, out, [np.arange(3, dtype="float32")])


@pytest.mark.parametrize("op,helper", [(relay.add, "AddGradCell"),
                                       (relay.multiply, "MultiplyGradCell")])
def test_add_and_multiply_use_the_cell_functions(op, helper):
    x = relay.var("x", T)
    y = relay.var("y", T)
    mod, out = _apply(relay.Function([x, y], op(relay.ones_like(x), y)))
    called = []
    relay.analysis.post_order_visit(out["main"], lambda e: called.append(e.op.name_hint)
                                    if isinstance(e, relay.Call) and
                                    isinstance(e.op, relay.GlobalVar) else None)
    assert helper in called
    _same_outputs(mod, out, [np.ones(3, "float32"), np.array([1.0, 2.0, 3.0], "float32")])


def test_broadcasting_add_is_a_plain_op():
    x = relay.var("x", T)
    s = relay.var("s", relay.TensorType((), "float32"))
    mod, out = _apply(relay.Function([x, s], relay.add(x, s)))
    assert "AddGradCell" not in out["main"].astext()
    _same_outputs(mod, out, [np.ones(3, "float32"), np.array(2.0, "float32")])


@pytest.mark.parametrize("mode", ["first_order", "higher_order"])
def test_gradient_programs_before_and_after_partial_evaluation(mode):
    x = relay.var("x", T)
    y = relay.var("y", T)
    f = relay.Function([x, y], relay.multiply(relay.add(x, y), relay.exp(x)))
    mod, out = _apply(gradient(f, mode=mode))
    args = [np.array([1.0, 2.0, 3.0], "float32"), np.array([0.5, -1.0, 2.0], "float32")]
    _same_outputs(mod, out, args)
    pe = relay.transform.InferType()(PartialEvaluate()(out))
    _same_outputs(mod, pe, args)


def test_global_calls_keep_their_interface():
    mod = relay.fromtext("""#[version = "0.0.5"]
def @sq(%x: Tensor[(3), float32]) -> Tensor[(3), float32] {
  multiply(%x, %x)
}
def @main(%x: Tensor[(3), float32]) -> (Tensor[(3), float32], Tensor[(3), float32]) {
  (@sq(%x), zeros_like(%x))
}
""")
    out = relay.transform.InferType()(LazyGradientInit()(mod))
    assert str(out["sq"].checked_type) == str(mod["sq"].checked_type)
    _same_outputs(mod, out, [np.array([1.0, 2.0, 3.0], "float32")])


def test_deep_chain():
    x = relay.var("x", shape=(2,))
    e = x
    for _ in range(100_000):
        e = relay.negative(e)
    out = LazyGradientInit()(tvm.IRModule.from_expr(relay.Function([x], e)))
    assert isinstance(out["main"], relay.Function)

"""PartialEvaluate: static parts evaluated (folding, branches, closures, refs, ADTs, recursion),
outputs unchanged."""

from __future__ import annotations

import numpy as np
import pytest
from relay_functional_programs import HIGHER_ORDER_PROGRAM

import minitvm as tvm
from minitvm import relay
from minitvm.relay.prelude import Prelude
from minitvm.relay.transform import PartialEvaluate
from minitvm.relay.transform.partial_evaluate import partial_evaluate

T = relay.TensorType((3,), "float32")


def _pe(func, mod=None):
    m = mod.shallow_copy() if mod is not None else tvm.IRModule()
    m["main"] = func
    out = PartialEvaluate()(m)
    assert m["main"] is func  # the input module is not modified
    return out


def _dcpe(func, mod=None):
    out = relay.transform.InferType()(_pe(func, mod))
    out = relay.transform.DeadCodeElimination(inline_once=True)(out)
    return relay.transform.InferType()(out)["main"]


def _expect(func):
    return relay.transform.InferType()(tvm.IRModule.from_expr(func))["main"]


def _run(mod, func, args):
    m = mod.shallow_copy() if mod is not None else tvm.IRModule()
    m["main"] = func
    m = relay.transform.InferType()(m)
    return relay.create_executor("debug", mod=m).evaluate()(*args)


def test_folds_static_operators():
    x = relay.var("x", T)
    got = _pe(relay.Function([x], relay.add(x, relay.add(relay.const(1.0), relay.const(2.0)))))
    v = relay.var("v")
    expected = relay.Function([x], relay.Let(v, relay.add(x, relay.const(3.0)), v))
    assert tvm.ir.structural_equal(got["main"], expected)


def test_static_if_takes_its_branch():
    x = relay.var("x", T)
    cond = relay.less(relay.const(1.0), relay.const(2.0))
    got = _dcpe(relay.Function([x], relay.If(cond, relay.exp(x), relay.log(x))))
    assert tvm.ir.structural_equal(got, _expect(relay.Function([x], relay.exp(x))))


def test_inlines_known_closures():
    x = relay.var("x", T)
    y = relay.var("y", T)
    f = relay.var("f")
    body = relay.Let(f, relay.Function([y], relay.multiply(y, relay.const(2.0))),
                     relay.Call(f, [relay.Call(f, [x])]))
    got = _dcpe(relay.Function([x], body))
    expected = relay.multiply(relay.multiply(x, relay.const(2.0)), relay.const(2.0))
    assert tvm.ir.structural_equal(got, _expect(relay.Function([x], expected)))


def test_forwards_static_references():
    x = relay.var("x", T)
    r = relay.var("r")
    body = relay.Let(r, relay.RefCreate(relay.const(1.0)),
                     relay.Let(relay.var("w"), relay.RefWrite(r, relay.const(2.0)),
                               relay.add(x, relay.RefRead(r))))
    func = relay.Function([x], body)
    got = _pe(func)["main"]
    reads = []
    relay.analysis.post_order_visit(got, lambda e: reads.append(e)
                                    if isinstance(e, relay.RefRead) else None)
    assert not reads  # the read became the constant written before it
    arg = np.array([1.0, 2.0, 3.0], "float32")
    np.testing.assert_allclose(_run(None, got, [arg]).numpy(), arg + 2)


def test_unrolls_recursion_on_static_arguments_and_matches():
    mod = relay.fromtext(HIGHER_ORDER_PROGRAM)
    out = relay.transform.InferType()(PartialEvaluate()(mod))
    calls = []
    relay.analysis.post_order_visit(out["main"], lambda e: calls.append(e.op.name_hint) if
                                    isinstance(e, relay.Call) and isinstance(e.op, relay.GlobalVar)
                                    else None)
    assert calls == []  # @pow(x, 3) unrolled, @sumlist of a static list unrolled
    x = np.array([1.0, 2.0, 3.0])
    y = np.array([0.5, -1.0, 2.0])
    np.testing.assert_allclose(_run(out, out["main"], [x, y]).numpy(),
                               _run(mod, mod["main"], [x, y]).numpy())


def test_dynamic_recursion_is_kept():
    mod = relay.fromtext(HIGHER_ORDER_PROGRAM)
    x = relay.var("x", relay.TensorType((3,), "float64"))
    n = relay.var("n", relay.TensorType((), "int32"))
    func = relay.Function([x, n], relay.Call(mod.get_global_var("pow"), [x, n]))
    out = _pe(func, mod)
    args = [np.array([1.0, 2.0, 3.0]), np.array(4, "int32")]
    np.testing.assert_allclose(_run(out, out["main"], args).numpy(), args[0] ** 4)


def test_prelude_programs_fold_to_constants():
    p = Prelude(tvm.IRModule())
    lst = p.cons(relay.const(3), p.cons(relay.const(4), p.nil()))
    a, b = relay.var("a", shape=(), dtype="int32"), relay.var("b", shape=(), dtype="int32")
    total = p.foldl(relay.Function([a, b], relay.add(a, b)), p.length(lst), lst)
    got = _dcpe(relay.Function([], total), p.mod)
    assert isinstance(got.body, relay.Constant)
    assert int(got.body.data.numpy()) == 9


def test_closures_over_dynamic_values_and_references_keep_outputs():
    x = relay.var("x", T)
    c = relay.var("c", relay.TensorType((), "bool"))
    r = relay.var("r")
    y = relay.var("y", T)
    bump = relay.var("bump")
    body = relay.Let(r, relay.RefCreate(x), relay.Let(
        bump, relay.Function([y], relay.RefWrite(r, relay.add(relay.RefRead(r), y))),
        relay.Let(relay.var("u"), relay.If(c, relay.Call(bump, [x]), relay.Tuple([])),
                  relay.Let(relay.var("v"), relay.Call(bump, [relay.const(np.ones(3, "float32"))]),
                            relay.RefRead(r)))))
    func = relay.Function([x, c], body)
    got = _pe(func)["main"]
    arg = np.array([1.0, 2.0, 3.0], "float32")
    for cond in (True, False):
        args = [arg, np.array(cond)]
        np.testing.assert_allclose(_run(None, got, args).numpy(),
                                   _run(None, func, args).numpy())


def test_function_form_and_stats():
    x = relay.var("x", T)
    f = relay.Function([x], relay.add(x, relay.multiply(relay.const(2.0), relay.const(3.0))))
    stats = []
    out = partial_evaluate(f, None, stats)
    assert stats == [(1, 0)]
    assert isinstance(out, relay.Function)


def test_errors():
    x = relay.var("x", T)
    free = relay.var("free", T)
    mod = tvm.IRModule()
    mod["main"] = relay.Function([x], relay.add(x, free))
    with pytest.raises(ValueError, match="free variable %free"):
        PartialEvaluate()(mod)


def test_deep_chain():
    x = relay.var("x", shape=(2,))
    e = x
    for _ in range(100_000):
        e = relay.negative(e)
    out = partial_evaluate(relay.Function([x], e))
    assert isinstance(out, relay.Function)


def test_higher_order_gradient_becomes_first_order():
    """TVM's classic: gradient -> PartialEvaluate -> DCE leaves no closure or reference."""
    from minitvm.relay.analysis import Feature, detect_feature

    x = relay.var("x", T)
    y = relay.var("y", T)
    f = relay.Function([x, y], relay.multiply(relay.add(x, y), relay.exp(x)))
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.transform.gradient(f)))
    assert Feature.fRefCreate in detect_feature(mod["main"])
    out = relay.transform.InferType()(PartialEvaluate()(mod))
    out = relay.transform.DeadCodeElimination(inline_once=True, ignore_impurity=True)(out)
    out = relay.transform.InferType()(out)
    assert detect_feature(out["main"]) == {Feature.fVar, Feature.fOp, Feature.fCall,
                                           Feature.fLet, Feature.fTuple, Feature.fFunction}
    inner = []
    relay.analysis.post_order_visit(out["main"].body, lambda e: inner.append(e)
                                    if isinstance(e, relay.Function) else None)
    assert not inner
    args = [np.array([1.0, 2.0, 3.0], "float32"), np.array([0.5, -1.0, 2.0], "float32")]
    want = _run(mod, mod["main"], args)
    got = _run(out, out["main"], args)
    for a, b in zip(want[1].fields, got[1].fields, strict=True):
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-6)
    np.testing.assert_allclose(got[0].numpy(), want[0].numpy(), rtol=1e-6)

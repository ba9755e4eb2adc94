"""RemoveStandaloneReshapes (TVM v0.19, remove_standalone_reshapes.cc) on hand-lowered modules:
``call_lowered`` of a reshape-only kernel whose input is a let-bound ``on_device`` producer call
becomes that producer call, and the unused reshape kernel leaves the module. TVM tests it only
end to end through AOT/CMSIS-NN; these cases restate the C++ source's documented rewrite with
Before/Expected programs, flat-buffer numerics, errors and a deep let chain."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.ir.attrs import DictAttrs
from minitvm.relay.expr_functor import ExprMutator
from minitvm.relay.op.call import CallLoweredAttrs, call_lowered

T18 = relay.TensorType((1, 8), "float32")
T24 = relay.TensorType((2, 4), "float32")


def _meta(reshape_only):
    attrs = {"Primitive": 1}
    if reshape_only:
        attrs["relay.reshape_only"] = 1
    return CallLoweredAttrs(metadata={"relay_attrs": DictAttrs(attrs)})


def _kernels(mod):
    p = relay.var("p0", T18)
    mod["fused_negative"] = relay.Function([p], relay.negative(p), T18).with_attr(
        "Primitive", 1)
    q = relay.var("p0", T18)
    mod["fused_reshape"] = relay.Function([q], relay.reshape(q, (2, 4)), T24).with_attrs(
        {"Primitive": 1, "relay.reshape_only": 1})


def _lowered(with_on_device=True, reshape_only=True):
    """main: %x = on_device(call_lowered(@fused_negative, (%input,))); reshape kernel of %x."""
    mod = tvm.IRModule()
    _kernels(mod)
    inp = relay.var("input", T18)
    neg = call_lowered(mod.get_global_var("fused_negative"), [inp], _meta(False))
    x = relay.var("x", T18)
    value = relay.annotation.on_device(neg, tvm.cpu(), constrain_result=True) \
        if with_on_device else neg
    reshape = call_lowered(mod.get_global_var("fused_reshape"), [x], _meta(reshape_only))
    mod["main"] = relay.Function([inp], relay.Let(x, value, reshape), T24)
    return mod


def _expected():
    mod = tvm.IRModule()
    _kernels(mod)
    mod.remove(mod.get_global_var("fused_reshape"))
    inp = relay.var("input", T18)
    neg = call_lowered(mod.get_global_var("fused_negative"), [inp], _meta(False))
    x = relay.var("x", T18)
    on_dev = relay.annotation.on_device(neg, tvm.cpu(), constrain_result=True)
    mod["main"] = relay.Function([inp], relay.Let(x, on_dev, neg), T24)
    return mod


class _Unlower(ExprMutator):
    """call_lowered(@f, (args)) -> @f(args), so the reference interpreter can run a module."""

    def visit_call(self, call):
        new = super().visit_call(call)
        if getattr(new.op, "name", None) == "call_lowered":
            return relay.Call(new.args[0], list(new.args[1].fields))
        return new


def _run_flat(mod, data):
    out = tvm.IRModule()
    for gv, f in mod.functions.items():
        body = _Unlower().visit(f.body)
        out[gv] = relay.Function(f.params, body, None, f.type_params, f.attrs)
    out = relay.transform.InferType()(out)
    return relay.create_executor("debug", mod=out).evaluate()(data).numpy().ravel()


def test_standalone_reshape_is_replaced_by_its_producer():
    before = _lowered()
    after = relay.transform.RemoveStandaloneReshapes()(before)
    tvm.ir.assert_structural_equal(after, _expected())
    assert "fused_reshape" in before and "fused_reshape" not in after
    let = after["main"].body
    assert let.body is let.value.args[0]  # the producer call itself, shared
    data = np.arange(8, dtype="float32").reshape(1, 8)
    np.testing.assert_array_equal(_run_flat(before, data), _run_flat(after, data))


def test_untouched_without_on_device_or_reshape_only():
    for before in (_lowered(with_on_device=False), _lowered(reshape_only=False)):
        after = relay.transform.RemoveStandaloneReshapes()(before)
        tvm.ir.assert_structural_equal(after, before)


def test_unused_functions_are_dropped_even_without_reshapes():
    before = _lowered(reshape_only=False)
    y = relay.var("y", T18)
    before["orphan"] = relay.Function([y], y)
    after = relay.transform.RemoveStandaloneReshapes()(before)
    assert "orphan" not in after and "fused_reshape" in after


def test_call_lowered_op_rules():
    mod = _lowered()
    typed = relay.transform.InferType()(mod)
    assert typed["main"].body.body.checked_type == T24
    with pytest.raises(TypeError, match="must be a GlobalVar"):
        call_lowered(relay.var("f"), [])
    gv = mod.get_global_var("fused_negative")
    bad = tvm.IRModule()
    _kernels(bad)
    z = relay.var("z", T24)
    bad["main"] = relay.Function([z], call_lowered(bad.get_global_var("fused_negative"), [z]))
    with pytest.raises(Exception, match="do not match the callee's parameters"):
        relay.transform.InferType()(bad)
    assert gv.name_hint == "fused_negative"


def test_errors():
    with pytest.raises(ValueError, match="no 'main' function"):
        relay.transform.RemoveStandaloneReshapes()(tvm.IRModule())


def test_deep_let_chain():
    mod = tvm.IRModule()
    _kernels(mod)
    inp = relay.var("input", T18)
    neg = mod.get_global_var("fused_negative")
    lets, prev = [], inp
    for i in range(100_000):
        v = relay.var(f"v{i}", T18)
        lets.append((v, relay.annotation.on_device(call_lowered(neg, [prev], _meta(False)),
                                                   tvm.cpu(), constrain_result=True)))
        prev = v
    body = call_lowered(mod.get_global_var("fused_reshape"), [prev], _meta(True))
    for v, val in reversed(lets):
        body = relay.Let(v, val, body)
    mod["main"] = relay.Function([inp], body, T24)
    after = relay.transform.RemoveStandaloneReshapes()(mod)
    assert "fused_reshape" not in after
    e = after["main"].body
    while isinstance(e, relay.Let):
        last, e = e, e.body
    assert e is last.value.args[0]

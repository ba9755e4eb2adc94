"""tvm.ir.register_intrin_lowering takes effect in code generation (TVM's LowerIntrin, issue
13): a rule registered for ``tir.exp`` on llvm replaces every exp call before the kernel is
compiled — structurally (the PrimFunc after lowering is the expected one) and numerically (the
kernel computes the rule's formula, not exp)."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import te, tir
from minitvm.tir.transform import LowerIntrin, lower_intrin


@pytest.fixture
def registered():
    """Register rules for the test and remove them afterwards (the op registry is global)."""
    added = []

    def register(name, target, f, level=99):
        tvm.ir.register_intrin_lowering(name, target=target, f=f, level=level)
        added.append((name, f"{target}.FLowerIntrinsic"))

    yield register
    for name, key in added:
        tvm.ir.Op.get(name).reset_attr(key)


def _exp_func(n=7):
    a = te.placeholder((n,), "float32", "A")
    b = te.compute((n,), lambda i: te.exp(a[i]) * 2.0, name="B")
    return te.create_prim_func([a, b])


def _one_plus(call):
    assert isinstance(call, tir.Call) and call.op.name == "tir.exp"
    return call.args[0] + tir.const(1.0, "float32")


def _run(func, x):
    mod = tvm.codegen.build(func)
    out = tvm.nd.array(np.zeros_like(x))
    mod["main"](tvm.nd.array(x), out)
    return out.numpy()


def test_lowering_rewrites_the_call(registered):
    func = _exp_func()
    assert lower_intrin(func) is func  # no rule: unchanged
    registered("tir.exp", "llvm", _one_plus)
    lowered = lower_intrin(func, "llvm")
    a = te.placeholder((7,), "float32", "A")
    b = te.compute((7,), lambda i: (a[i] + tir.const(1.0, "float32")) * 2.0, name="B")
    tvm.ir.assert_structural_equal(lowered, te.create_prim_func([a, b]))
    # a rule for another target does not apply to llvm
    assert lower_intrin(func, "c") is func


def test_registered_rule_changes_the_compiled_kernel(registered):
    x = np.linspace(-1.0, 2.0, 7).astype("float32")
    np.testing.assert_allclose(_run(_exp_func(), x), np.exp(x) * 2.0, rtol=1e-6)
    calls = []

    def rule(call):
        calls.append(call.op.name)
        return _one_plus(call)

    registered("tir.exp", "llvm", rule)
    got = _run(_exp_func(), x)
    np.testing.assert_allclose(got, (x + 1.0) * 2.0, rtol=1e-6)
    assert calls == ["tir.exp"] and not np.allclose(got, np.exp(x) * 2.0)


def test_rule_producing_an_extern_call_and_another_intrinsic(registered):
    # exp -> expm1f(x) + 1 through a rule for tir.exp2 that the exp rule emits
    registered("tir.exp", "llvm", lambda c: tir.exp2(c.args[0]))
    registered("tir.exp2", "llvm",
               lambda c: tir.call_pure_extern("float32", "expm1f", c.args[0]) + 1.0)
    x = np.linspace(0.0, 1.0, 7).astype("float32")
    np.testing.assert_allclose(_run(_exp_func(), x), (np.expm1(x) + 1.0) * 2.0, rtol=1e-6)


def test_default_rules_apply_to_every_target(registered):
    registered("tir.exp", "default", _one_plus)
    lowered = lower_intrin(_exp_func(), "c")
    assert "exp" not in lowered.script()


def test_a_rule_that_never_terminates_is_reported(registered):
    registered("tir.exp", "llvm", lambda c: tir.exp(c.args[0] + 0.0))
    with pytest.raises(RuntimeError, match="did not terminate"):
        lower_intrin(_exp_func())


def test_a_rule_must_return_an_expression(registered):
    registered("tir.exp", "llvm", lambda c: "expf")
    with pytest.raises(TypeError, match="not a PrimExpr"):
        lower_intrin(_exp_func())


def test_lower_intrin_pass_on_a_module(registered):
    registered("tir.exp", "llvm", _one_plus)
    mod = tvm.IRModule({"main": _exp_func()})
    out = LowerIntrin()(mod)
    assert "T.exp" not in out["main"].script() and "T.exp" in mod["main"].script()
    x = np.linspace(-1.0, 1.0, 7).astype("float32")
    np.testing.assert_allclose(_run(out["main"], x), (x + 1.0) * 2.0, rtol=1e-6)

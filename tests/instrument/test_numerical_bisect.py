"""NumericalBisect: the first pass whose outputs differ is found."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.instrument import NumericalBisect
from minitvm.transform import PassContext, Sequential


def model():
    x = relay.var("x", shape=(4, 5), dtype="float32")
    y = relay.var("y", shape=(4, 5), dtype="float32")
    return tvm.IRModule.from_expr(relay.Function([x, y], relay.add(relay.add(x, x), y)))


def rewriting(name, old, new_fn):
    @relay.transform.function_pass(opt_level=0, name=name)
    def run(func, mod, ctx):
        class M(relay.ExprMutator):
            def visit_call(self, call):
                c = super().visit_call(call)
                if isinstance(c.op, tvm.ir.Op) and c.op.name == old and c.args[0] is c.args[1]:
                    return new_fn(c.args[0])
                return c

        return M().visit(func)

    return run


# x + x -> x * 2: correct.  x + x -> x * 3: deliberately wrong.
good = rewriting("DoubleToMul", "add", lambda a: relay.multiply(a, relay.const(2.0)))
wrong = rewriting("WrongDouble", "add", lambda a: relay.multiply(a, relay.const(3.0)))


def noop(name):
    @tvm.transform.module_pass(opt_level=0, name=name)
    def run(mod, ctx):
        return mod

    return run


def test_finds_the_wrong_pass():
    bis = NumericalBisect()
    seq = Sequential([relay.transform.InferType(), noop("Nothing"), wrong, good])
    with PassContext(instruments=[bis]):
        seq(model())
    assert bis.first_bad is not None
    n, name, why = bis.first_bad
    assert name == "WrongDouble"
    assert "output 0 differs" in why
    assert "first pass whose outputs differ: #3 WrongDouble" in bis.report()
    assert bis.checked == ["InferType", "WrongDouble"]  # the no-op pass needed no run


def test_correct_pipeline_reports_no_difference():
    bis = NumericalBisect()
    with PassContext(instruments=[bis]):
        Sequential([relay.transform.InferType(), good])(model())
    assert bis.first_bad is None
    assert bis.checked == ["InferType", "DoubleToMul"]  # the InferType inside is not separate
    assert bis.report().startswith("all 2 passes keep the outputs")


def test_raise_on_mismatch_and_explicit_inputs():
    inputs = [np.ones((4, 5), "float32"), np.zeros((4, 5), "float32")]
    bis = NumericalBisect(inputs=inputs, raise_on_mismatch=True)
    with PassContext(instruments=[bis]):
        with pytest.raises(ValueError, match="WrongDouble: output 0 differs by up to 1"):
            Sequential([wrong])(model())


def test_tolerance_respected():
    slightly = rewriting("Slightly", "add", lambda a: relay.multiply(a, relay.const(2.0000001)))
    bis = NumericalBisect(rtol=1e-3, atol=1e-3)
    with PassContext(instruments=[bis]):
        Sequential([slightly])(model())
    assert bis.first_bad is None

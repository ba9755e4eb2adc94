"""relay.transform.FunctionPass and function_pass: per-function rewriting, skips, InferType after."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.relay.transform import FunctionPass, function_pass


def add_module():
    x = relay.var("x", shape=(2, 3), dtype="float32")
    return tvm.IRModule.from_expr(relay.Function([x], relay.add(x, x)))


class AddToMultiply(relay.ExprMutator):
    def visit_call(self, call):
        new = super().visit_call(call)
        if isinstance(new.op, tvm.ir.Op) and new.op.name == "add":
            return relay.multiply(*new.args)
        return new


@function_pass(opt_level=1)
def add_to_multiply(func, mod, ctx):
    return AddToMultiply().visit(func)


def op_names(func):
    names = []
    relay.expr_functor.post_order_visit(
        func, lambda e: names.append(e.op.name) if isinstance(e, relay.Call) else None)
    return names


def test_rewrites_each_function_and_reinfers_types():
    mod = add_module()
    out = add_to_multiply(mod)
    assert isinstance(add_to_multiply, FunctionPass)
    assert add_to_multiply.info.name == "add_to_multiply"
    assert op_names(out["main"]) == ["multiply"]
    assert out["main"].body.checked_type == relay.TensorType((2, 3), "float32")
    assert op_names(mod["main"]) == ["add"]  # input untouched


def test_skips_compiler_extern_and_skip_optimization_functions():
    base = add_module()["main"]
    mod = tvm.IRModule()
    mod["main"] = base
    mod["ext"] = base.with_attr("Compiler", "ccompiler")
    mod["ex2"] = base.with_attr("Extern", 1)
    mod["skip"] = base.with_attr("SkipOptimization", 1)
    mod["zero"] = base.with_attr("Extern", 0)
    out = add_to_multiply(mod)
    assert op_names(out["main"]) == ["multiply"]
    assert op_names(out["zero"]) == ["multiply"]
    for name in ("ext", "ex2", "skip"):
        assert op_names(out[name]) == ["add"]


def test_infer_type_after_visible_to_instruments():
    seen = []

    @tvm.instrument.pass_instrument
    class Names:
        def run_before_pass(self, mod, info):
            seen.append(info.name)

    with tvm.transform.PassContext(instruments=[Names()]):
        add_to_multiply(add_module())
    assert seen == ["add_to_multiply", "InferType"]


def test_all_four_decorator_forms():
    @function_pass
    def bare(func, mod, ctx):
        return func

    @function_pass(opt_level=2, name="Named")
    def named(func, mod, ctx):
        return func

    @function_pass
    class BareClass:
        def transform_function(self, func, mod, ctx):
            return func

    @function_pass(opt_level=1)
    class TestReplaceFunc:
        def __init__(self, new_func):
            self.new_func = new_func

        def transform_function(self, func, mod, ctx):
            return self.new_func

    assert bare.info.name == "bare" and bare.info.opt_level == 0
    assert named.info.name == "Named" and named.info.opt_level == 2
    assert BareClass().info.name == "BareClass"
    x = relay.var("x", shape=(10, 20))
    f1 = relay.Function([x], x)
    fpass = TestReplaceFunc(f1)
    assert isinstance(fpass, FunctionPass) and fpass.new_func is f1
    res = fpass(add_module())
    assert res["main"].body is x  # every function replaced by f1 (re-typed by InferType)


def test_wrong_return_is_clear_error():
    @function_pass(opt_level=1)
    def broken(func, mod, ctx):
        return func.body

    with pytest.raises(TypeError, match="broken.*returned Call for @main, expected a "
                                        "relay.Function"):
        broken(add_module())


def test_output_that_does_not_type_check_raises():
    @function_pass(opt_level=1)
    def mismatch(func, mod, ctx):
        y = relay.var("y", shape=(4,), dtype="float32")
        return relay.Function(list(func.params) + [y], relay.add(func.params[0], y))

    with pytest.raises((TypeError, ValueError)):
        mismatch(add_module())


def test_seed000_custom_pipeline_multiplies_constants():
    @relay.transform.function_pass(opt_level=1)
    class CustomPipeline:
        """Simple test function to replace one argument to another."""

        def __init__(self, multiplier):
            self.multiplier = multiplier

        def transform_function(self, func, mod, ctx):
            obj = self

            class ReplaceConstant(tvm.relay.ExprMutator):
                def visit_constant(self, c):
                    return relay.multiply(obj.multiplier, c)

            return ReplaceConstant().visit(func)

    x = relay.var("x", shape=(3,), dtype="float32")
    c = relay.const(np.ones(3, "float32"))
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.add(x, c)))
    custom_pass = CustomPipeline(multiplier=relay.const(3, "float32"))
    assert custom_pass.info.name == "CustomPipeline"
    mod3 = custom_pass(mod)
    assert op_names(mod3["main"]) == ["multiply", "add"]
    assert mod3["main"].body.checked_type == relay.TensorType((3,), "float32")


def test_unchanged_typed_module_skips_type_inference_work():
    @function_pass(opt_level=0)
    def identity(func, mod, ctx):
        return func

    typed = relay.transform.InferType()(add_module())
    out = identity(typed)
    assert out["main"] is typed["main"]


def test_called_on_a_function_is_clear_error():
    with pytest.raises(TypeError, match="must be called on an IRModule, got Function"):
        add_to_multiply(add_module()["main"])


def test_statistics_of_function_pass_and_its_infer_type():
    with tvm.transform.PassContext(instruments=[tvm.instrument.PassTimingInstrument()]):
        add_to_multiply(add_module())
        text = tvm.instrument.PassTimingInstrument.render()
    lines = text.splitlines()
    assert lines[0].startswith("add_to_multiply:") and "{functions changed: 1}" in lines[0]
    assert lines[1].startswith("\tInferType:") and "{type-checked functions: 1}" in lines[1]

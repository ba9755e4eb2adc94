"""module_pass in all four forms, and seed 001's two module_pass examples."""

import inspect

import pytest

import minitvm as tvm
from minitvm import relay, transform


def input_module():
    x = relay.var("x", shape=(10,), dtype="float32")
    return tvm.IRModule.from_expr(relay.Function([x], relay.add(x, x)))


def test_function_form_with_arguments():
    @transform.module_pass(opt_level=2)
    def transform_fn(mod, ctx):
        tp = relay.TensorType((10,), "float32")
        x = relay.var("x", tp)
        gv = relay.GlobalVar("var")
        func = relay.Function([x], relay.abs(x))
        new_mod = tvm.IRModule({gv: func})
        new_mod.update(mod)
        return new_mod

    module_pass = transform_fn
    assert isinstance(module_pass, transform.ModulePass)
    assert module_pass.info.opt_level == 2
    assert module_pass.info.name == "transform_fn"
    m = input_module()
    updated = module_pass(m)
    assert "var" in updated and "main" in updated
    assert "var" not in m


def test_function_form_bare():
    @transform.module_pass
    def identity(mod, ctx):
        return mod

    assert isinstance(identity, transform.ModulePass)
    assert identity.info.name == "identity" and identity.info.opt_level == 0


def test_class_form_bare_keeps_init_args_and_name():
    @transform.module_pass
    class CustomPipeline:
        def __init__(self, enable_fold):
            self.enable_fold = enable_fold

        def transform_module(self, mod, ctx):
            return mod

    pipeline = CustomPipeline(enable_fold=False)
    assert isinstance(pipeline, transform.ModulePass)
    assert pipeline.info.name == "CustomPipeline"
    assert pipeline.enable_fold is False  # attribute lookups reach the user instance
    assert CustomPipeline.__name__ == "CustomPipeline"
    assert list(inspect.signature(CustomPipeline).parameters) == ["enable_fold"]


def test_class_form_with_arguments():
    @transform.module_pass(opt_level=3, name="Renamed", required=["InferType"])
    class P:
        def transform_module(self, mod, ctx):
            return mod

    p = P()
    assert p.info.name == "Renamed" and p.info.opt_level == 3
    assert p.info.required == ["InferType"]
    assert P().info is p.info  # one PassInfo per decorated class, as in TVM


def test_class_form_needs_transform_module():
    with pytest.raises(TypeError, match="must define transform_module"):
        @transform.module_pass(opt_level=1)
        class NoMethod:
            pass


def test_non_callable_and_bad_required():
    with pytest.raises(TypeError, match="pass_func must be a callable"):
        transform.module_pass(3, opt_level=1)
    with pytest.raises(TypeError, match="list/tuple"):
        transform.module_pass(lambda m, c: m, opt_level=1, required="InferType")


def test_seed001_module_pass_class_calls_passes_with_ctx():
    # The seed's docstring example: a class pipeline calling other passes as pass(mod, ctx).
    calls = []

    @transform.module_pass(opt_level=0, name="Stand")
    def stand(mod, ctx):
        calls.append(ctx.opt_level)
        return mod

    @relay.transform.module_pass
    class CustomPipeline:
        def __init__(self, enable_fold):
            self.enable_fold = enable_fold
            self.cse = stand
            self.const_fold = stand

        def transform_module(self, mod, ctx):
            mod = self.cse(mod, ctx)
            if self.enable_fold:
                mod = self.const_fold(mod, ctx)
            return mod

    pipeline = CustomPipeline(enable_fold=False)
    assert isinstance(pipeline, transform.ModulePass)
    with transform.PassContext(opt_level=3):
        pipeline(input_module())
    assert calls == [3]


def test_seed001_verbatim_with_builtin_passes():
    if not hasattr(relay.transform, "EliminateCommonSubexpr") or \
            not hasattr(relay.transform, "FoldConstant"):
        pytest.skip("EliminateCommonSubexpr/FoldConstant not exported yet")

    @relay.transform.module_pass
    class CustomPipeline:
        def __init__(self, enable_fold):
            self.enable_fold = enable_fold
            self.cse = relay.transform.EliminateCommonSubexpr()
            self.const_fold = relay.transform.FoldConstant()

        def transform_module(self, mod, ctx):
            mod = self.cse(mod, ctx)
            if self.enable_fold:
                mod = self.const_fold(mod, ctx)
            return mod

    pipeline = CustomPipeline(enable_fold=False)
    assert isinstance(pipeline, transform.ModulePass)
    output_module = pipeline(relay.transform.InferType()(input_module()))
    assert isinstance(output_module, tvm.IRModule)

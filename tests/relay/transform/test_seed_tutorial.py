"""The pass-infrastructure tutorial (seed 000): every printed program matches, modulo whitespace."""

from pathlib import Path

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay

GOLDEN = Path(__file__).parent / "seed_outputs"
_RANDOM_C = np.random.default_rng(0).standard_normal((1, 64, 54, 54)).astype("float32")


def example(c_data=None):
    shape = (1, 64, 54, 54)
    if c_data is None:  # the seed's (uninitialised) constant; numerics tests pass real data
        c_data = np.empty(shape).astype("float32")
    c = relay.const(c_data)
    weight = relay.var("weight", shape=(64, 64, 3, 3))
    x = relay.var("x", relay.TensorType((1, 64, 56, 56), "float32"))
    conv = relay.nn.conv2d(x, weight)
    y = relay.add(c, c)
    y = relay.multiply(y, relay.const(2, "float32"))
    y = relay.add(conv, y)
    z = relay.add(y, c)
    z1 = relay.add(y, c)
    z2 = relay.add(z, z1)
    return relay.Function([x], z2)


def _squash(text: str) -> str:
    return "".join(text.split())


def assert_prints_as(mod, name: str):
    expected = (GOLDEN / f"{name}.txt").read_text()
    assert _squash(str(mod)) == _squash(expected), f"\n--- got ---\n{mod}\n--- seed ---\n{expected}"


def _seq():
    return tvm.transform.Sequential([relay.transform.FoldConstant(),
                                     relay.transform.EliminateCommonSubexpr(),
                                     relay.transform.FuseOps(fuse_opt_level=2)])


def test_fold_constant_then_cse_then_fuse_level0():
    mod = tvm.IRModule.from_expr(example())
    mod = relay.transform.FoldConstant()(mod)
    assert_prints_as(mod, "fold_constant")
    mod = relay.transform.EliminateCommonSubexpr()(mod)
    assert_prints_as(mod, "cse")
    mod = relay.transform.FuseOps(fuse_opt_level=0)(mod)
    assert_prints_as(mod, "fuse_level0")


def test_sequential_default_opt_level_skips_cse():
    mod = tvm.IRModule.from_expr(example())
    assert_prints_as(_seq()(mod), "sequential_opt2")


def test_sequential_opt_level3_runs_cse():
    mod = tvm.IRModule.from_expr(example())
    with tvm.transform.PassContext(opt_level=3):
        out = _seq()(mod)
    assert_prints_as(out, "sequential_opt3")


def test_disabled_pass():
    mod = tvm.IRModule.from_expr(example())
    with tvm.transform.PassContext(opt_level=3, disabled_pass=["EliminateCommonSubexpr"]):
        out = _seq()(mod)
    assert_prints_as(out, "sequential_disabled")


def test_direct_calls_ignore_opt_level():
    mod = tvm.IRModule.from_expr(example())
    with tvm.transform.PassContext(opt_level=2):
        mod = relay.transform.FoldConstant()(mod)
        mod = relay.transform.EliminateCommonSubexpr()(mod)  # opt_level 3, still runs
        mod = relay.transform.FuseOps(fuse_opt_level=2)(mod)
    assert_prints_as(mod, "sequential_opt3")


def test_custom_pipeline_function_pass_class():
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

    mod = tvm.IRModule.from_expr(example())
    custom_pass = CustomPipeline(multiplier=relay.const(3, "float32"))
    assert custom_pass.info.name == "CustomPipeline"
    assert_prints_as(custom_pass(mod), "custom_pipeline")


def test_print_ir_inside_sequential(capsys):
    mod = tvm.IRModule.from_expr(example())
    seq = tvm.transform.Sequential([relay.transform.FoldConstant(), tvm.transform.PrintIR(),
                                    relay.transform.EliminateCommonSubexpr(),
                                    relay.transform.FuseOps(), tvm.transform.PrintIR()])
    with tvm.transform.PassContext(opt_level=3):
        seq(mod)
    err = capsys.readouterr().err
    assert err.count("PrintIR") == 2 and "Primitive=1" in err


@pytest.mark.parametrize("opt_level", [2, 3])
def test_sequential_preserves_numerics(opt_level):
    from pass_test_util import check_numerics

    mod = tvm.IRModule.from_expr(example(_RANDOM_C))
    with tvm.transform.PassContext(opt_level=opt_level):
        out = _seq()(mod)
    check_numerics(mod, out, rtol=1e-4, atol=1e-4)


def test_alter_op_layout_with_registered_hook():
    from minitvm.ir.op import Op

    def alter_conv2d(attrs, inputs, tinfos, out_type):
        data, weight = inputs
        new_attrs = dict(attrs)
        new_attrs["data_layout"] = "NCHW16c"
        return relay.nn.conv2d(data, weight, **new_attrs)

    conv = Op.get("nn.conv2d")
    saved = conv._attrs.get("FTVMAlterOpLayout")
    relay.op.register_alter_op_layout("nn.conv2d", alter_conv2d, level=101)
    try:
        mod = tvm.IRModule.from_expr(example(_RANDOM_C))
        seq1 = tvm.transform.Sequential([relay.transform.AlterOpLayout()])
        with tvm.transform.PassContext(opt_level=3):
            with tvm.target.create("llvm"):
                mod5 = seq1(mod)
        assert_prints_as(mod5, "alter_op_layout")
        from pass_test_util import check_numerics

        check_numerics(mod, mod5, rtol=1e-4, atol=1e-4)
    finally:
        conv.reset_attr("FTVMAlterOpLayout")
        if saved is not None:
            conv._attrs["FTVMAlterOpLayout"] = saved

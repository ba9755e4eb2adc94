"""relax.transform.FuseOpsByPattern and MergeCompositeFunctions on TVMScript modules, with the
results computed by the numpy interpreter of the Relax pass tests before and after."""

import pathlib
import sys

import numpy as np
import pytest

import minitvm as tvm
from minitvm.relax import transform as rt
from minitvm.relax.analysis import check_well_formed
from minitvm.relax.dpl import is_const, is_op, wildcard
from minitvm.relax.transform.fuse_ops_by_pattern import FusionPattern
from minitvm.script import from_source

sys.path.insert(0, str(pathlib.Path(__file__).parents[1]))
from relax_pass_util import assert_same_results  # noqa: E402

CONV = is_op("relax.nn.conv2d")(wildcard(), wildcard())
CONV_RELU = is_op("relax.nn.relu")(CONV)
ADD = is_op("relax.add")(wildcard(), wildcard())
PATTERNS = [("dnnl.conv2d_relu", CONV_RELU), ("dnnl.conv2d", CONV), ("dnnl.add", ADD)]

X = 'R.Tensor((1, 3, 8, 8), dtype="float32")'
W = 'R.Tensor((4, 3, 3, 3), dtype="float32")'
W2 = 'R.Tensor((4, 4, 3, 3), dtype="float32")'
Y = 'R.Tensor((1, 4, 8, 8), dtype="float32")'


def parse(text: str) -> tvm.IRModule:
    return from_source(text.replace("TX", X).replace("TW2", W2).replace("TW", W)
                       .replace("TY", Y))


def inputs(seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype("float32")
            for s in ((1, 3, 8, 8), (4, 3, 3, 3), (4, 4, 3, 3))]


BEFORE = """
@I.ir_module
class Module:
    @R.function
    def main(x: TX, w: TW, w2: TW2) -> TY:
        with R.dataflow():
            c = R.nn.conv2d(x, w, padding=[1, 1, 1, 1])
            r = R.nn.relu(c)
            c2 = R.nn.conv2d(r, w2, padding=[1, 1, 1, 1])
            e = R.exp(c2)
            gv = R.add(c2, e)
            R.output(gv)
        return gv
"""

EXPECTED = """
@I.ir_module
class Module:
    @R.function(private=True)
    def fused_relax_nn_conv2d_relax_nn_relu(x: TX, w: TW) -> TY:
        R.func_attr({"Composite": "dnnl.conv2d_relu", "Primitive": 1})
        with R.dataflow():
            c = R.nn.conv2d(x, w, padding=[1, 1, 1, 1])
            gv = R.nn.relu(c)
            R.output(gv)
        return gv

    @R.function(private=True)
    def fused_relax_nn_conv2d(r: TY, w2: TW2) -> TY:
        R.func_attr({"Composite": "dnnl.conv2d", "Primitive": 1})
        with R.dataflow():
            gv = R.nn.conv2d(r, w2, padding=[1, 1, 1, 1])
            R.output(gv)
        return gv

    @R.function(private=True)
    def fused_relax_add(lv1: TY, e: TY) -> TY:
        R.func_attr({"Composite": "dnnl.add", "Primitive": 1})
        with R.dataflow():
            gv = R.add(lv1, e)
            R.output(gv)
        return gv

    @R.function
    def main(x: TX, w: TW, w2: TW2) -> TY:
        cls = Module
        with R.dataflow():
            lv: TY = cls.fused_relax_nn_conv2d_relax_nn_relu(x, w)
            lv1: TY = cls.fused_relax_nn_conv2d(lv, w2)
            e = R.exp(lv1)
            gv: TY = cls.fused_relax_add(lv1, e)
            R.output(gv)
        return gv
"""


def test_patterns_make_composite_functions():
    before = parse(BEFORE)
    after = rt.FuseOpsByPattern(PATTERNS)(before)
    tvm.ir.assert_structural_equal(after, parse(EXPECTED))
    assert check_well_formed(after) is None
    assert_same_results(before, after, "main", *inputs(), rtol=1e-5)


def test_fuse_tir_leaves_composite_functions_to_their_codegen():
    composite = rt.FuseOpsByPattern(PATTERNS)(parse(BEFORE))
    tvm.ir.assert_structural_equal(rt.FuseTIR()(composite), composite)


def test_check_callback_and_annotations_can_refuse_a_match():
    seen = []

    def check(ctx):
        seen.append(sorted(ctx.annotated_expr))
        conv = ctx.annotated_expr["conv"]
        return conv.args[1].struct_info.shape.values[1].value == 4  # only the second conv

    before = parse(BEFORE)
    after = rt.FuseOpsByPattern([FusionPattern("dnnl.conv2d", CONV, {"conv": CONV},
                                               check)])(before)
    assert seen and seen[0] == ["conv"]
    fused = [gv.name_hint for gv in after.functions if gv.name_hint.startswith("fused")]
    assert fused == ["fused_relax_nn_conv2d"]
    assert after["fused_relax_nn_conv2d"].params[1].struct_info.shape.values[1].value == 4
    assert_same_results(before, after, "main", *inputs(), rtol=1e-5)


def test_constants_bound_or_lifted():
    before = parse("""
@I.ir_module
class Module:
    @R.function
    def main(x: TY) -> TY:
        with R.dataflow():
            gv = R.add(x, R.const(1.5, "float32"))
            R.output(gv)
        return gv
""")
    pat = [("cg.add_const", is_op("relax.add")(wildcard(), is_const()))]
    bound = rt.FuseOpsByPattern(pat)(before)
    assert len(bound["fused_relax_add"].params) == 1
    lifted = rt.FuseOpsByPattern(pat, bind_constants=False)(before)
    assert [p.name_hint for p in lifted["fused_relax_add"].params] == ["x", "param_0"]
    x = np.random.default_rng(1).standard_normal((1, 4, 8, 8)).astype("float32")
    assert_same_results(before, bound, "main", x)
    assert_same_results(before, lifted, "main", x)


def test_a_match_that_would_not_be_convex_is_skipped():
    before = parse("""
@I.ir_module
class Module:
    @R.function
    def main(x: TY) -> TY:
        with R.dataflow():
            a = R.nn.relu(x)
            b = R.exp(a)
            gv = R.add(a, b)
            R.output(gv)
        return gv
""")
    # add(relu(.), .) would hold relu and add while exp, outside, sits between them
    pat = [("cg.relu_add", is_op("relax.add")(is_op("relax.nn.relu")(wildcard()), wildcard()))]
    after = rt.FuseOpsByPattern(pat)(before)
    tvm.ir.assert_structural_equal(after, before)


def test_annotate_codegen_wraps_composites():
    before = parse(BEFORE)
    after = rt.FuseOpsByPattern(PATTERNS[:2], annotate_codegen=True)(before)
    names = sorted(gv.name_hint for gv in after.functions)
    assert names == ["fused_relax_nn_conv2d_dnnl", "fused_relax_nn_conv2d_relax_nn_relu_dnnl",
                     "main"]
    outer = after["fused_relax_nn_conv2d_dnnl"]
    assert dict(outer.attrs.items()) == {"Codegen": "dnnl",
                                        "global_symbol": "fused_relax_nn_conv2d_dnnl"}
    inner = outer.body.blocks[0].bindings[0].value
    assert dict(inner.attrs.items()) == {"Composite": "dnnl.conv2d"}
    assert check_well_formed(after) is None
    assert_same_results(before, after, "main", *inputs(), rtol=1e-5)


def test_merge_composite_functions_groups_by_codegen_without_cycles():
    before = parse(BEFORE)
    composite = rt.FuseOpsByPattern(PATTERNS)(before)
    merged = rt.MergeCompositeFunctions()(composite)
    offloaded = {gv.name_hint: f for gv, f in merged.functions.items()
                 if "Codegen" in (f.attrs or {})}
    # both convolutions merge; the add cannot join them (exp, not offloaded, sits between)
    assert sorted(offloaded) == ["fused_relax_add1",
                                 "fused_relax_nn_conv2d_relax_nn_relu_relax_nn_conv2d"]
    conv = offloaded["fused_relax_nn_conv2d_relax_nn_relu_relax_nn_conv2d"]
    assert dict(conv.attrs.items()) == {
        "Codegen": "dnnl", "global_symbol": "fused_relax_nn_conv2d_relax_nn_relu_relax_nn_conv2d"}
    local = [b.value for b in conv.body.blocks[0].bindings
             if isinstance(b.value, tvm.relax.Function)]
    assert [f.attrs["Composite"] for f in local] == ["dnnl.conv2d_relu", "dnnl.conv2d"]
    # composite functions now live only inside the offloaded ones
    assert not any("Composite" in (f.attrs or {}) for f in merged.functions.values())
    assert check_well_formed(merged) is None
    assert_same_results(before, merged, "main", *inputs(), rtol=1e-5)


def test_merge_keeps_different_codegens_apart():
    before = parse(BEFORE)
    pats = [("dnnl.conv2d_relu", CONV_RELU), ("cublas.conv2d", CONV)]
    merged = rt.MergeCompositeFunctions()(rt.FuseOpsByPattern(pats)(before))
    codegens = sorted(str(f.attrs["Codegen"]) for f in merged.functions.values()
                      if "Codegen" in (f.attrs or {}))
    assert codegens == ["cublas", "dnnl"]
    assert_same_results(before, merged, "main", *inputs(), rtol=1e-5)


def test_bad_pattern_argument_is_a_clear_error():
    with pytest.raises(TypeError, match="FusionPattern or a tuple"):
        rt.FuseOpsByPattern(["not a pattern"])
    with pytest.raises(TypeError, match="must be a relax.dpl pattern"):
        FusionPattern("x.y", "relax.add")

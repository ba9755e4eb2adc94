"""relax.transform.FuseOps on TVMScript Before/Expected modules (TVM's test style), with the
fused program computing what the original computes."""

import pytest
from fuse_prims import module_text
from fuse_test_util import assert_same_results, check, random_inputs

import minitvm as tvm
from minitvm.relax import transform as rt
from minitvm.script import from_source

F = 'R.Tensor((4, 8), dtype="float32")'


H = 'R.Tensor((4, 4), dtype="float32")'


def parse(relax_text: str) -> tvm.IRModule:
    return from_source(module_text(relax_text.replace("F32", F).replace(": H", ": " + H)
                                   .replace("[H, H]", f"[{H}, {H}]").replace("-> H", "-> " + H)
                                   .replace("=H", "=" + H).replace("(H, H)", f"({H}, {H})")))


def fuse_check(before: str, expected: str, inputs=((4, 8),), **options):
    b, e = parse(before), parse(expected)
    after = check(rt.FuseOps(**options), b, e)
    assert_same_results(b, after, "main", random_inputs(inputs))
    return after


def test_elementwise_chain_becomes_one_primitive_function():
    fuse_check("""
@R.function
def main(x: F32) -> F32:
    cls = Module
    with R.dataflow():
        lv = R.call_tir(cls.exp, (x,), out_sinfo=F32)
        lv1 = R.call_tir(cls.add, (lv, x), out_sinfo=F32)
        gv = R.call_tir(cls.relu, (lv1,), out_sinfo=F32)
        R.output(gv)
    return gv
""", """
@R.function(private=True)
def fused_exp_add_relu(x: F32) -> F32:
    R.func_attr({"Primitive": 1})
    cls = Module
    with R.dataflow():
        lv = R.call_tir(cls.exp, (x,), out_sinfo=F32)
        lv1 = R.call_tir(cls.add, (lv, x), out_sinfo=F32)
        gv = R.call_tir(cls.relu, (lv1,), out_sinfo=F32)
        R.output(gv)
    return gv

@R.function
def main(x: F32) -> F32:
    cls = Module
    with R.dataflow():
        gv: F32 = cls.fused_exp_add_relu(x)
        R.output(gv)
    return gv
""")


def test_anchor_absorbs_its_epilogue_and_params_follow_first_use():
    fuse_check("""
@R.function
def main(x: F32, w: R.Tensor((8, 8), dtype="float32"), b: R.Tensor((8,), dtype="float32")) -> F32:
    cls = Module
    with R.dataflow():
        mm = R.call_tir(cls.matmul, (x, w), out_sinfo=F32)
        ba = R.call_tir(cls.bias_add, (mm, b), out_sinfo=F32)
        r = R.call_tir(cls.relu, (ba,), out_sinfo=F32)
        mm2 = R.call_tir(cls.matmul, (r, w), out_sinfo=F32)
        gv = R.call_tir(cls.exp, (mm2,), out_sinfo=F32)
        R.output(gv)
    return gv
""", """
@R.function(private=True)
def fused_matmul_bias_add_relu(x: F32, w: R.Tensor((8, 8), dtype="float32"), b: R.Tensor((8,), dtype="float32")) -> F32:
    R.func_attr({"Primitive": 1})
    cls = Module
    with R.dataflow():
        mm = R.call_tir(cls.matmul, (x, w), out_sinfo=F32)
        ba = R.call_tir(cls.bias_add, (mm, b), out_sinfo=F32)
        gv = R.call_tir(cls.relu, (ba,), out_sinfo=F32)
        R.output(gv)
    return gv

@R.function(private=True)
def fused_matmul_exp(r: F32, w: R.Tensor((8, 8), dtype="float32")) -> F32:
    R.func_attr({"Primitive": 1})
    cls = Module
    with R.dataflow():
        mm2 = R.call_tir(cls.matmul, (r, w), out_sinfo=F32)
        gv = R.call_tir(cls.exp, (mm2,), out_sinfo=F32)
        R.output(gv)
    return gv

@R.function
def main(x: F32, w: R.Tensor((8, 8), dtype="float32"), b: R.Tensor((8,), dtype="float32")) -> F32:
    cls = Module
    with R.dataflow():
        lv: F32 = cls.fused_matmul_bias_add_relu(x, w, b)
        gv: F32 = cls.fused_matmul_exp(lv, w)
        R.output(gv)
    return gv
""", inputs=((4, 8), (8, 8), (8,)))


def test_diamond_fuses_into_its_post_dominator():
    fuse_check("""
@R.function
def main(x: F32) -> F32:
    cls = Module
    with R.dataflow():
        a = R.call_tir(cls.exp, (x,), out_sinfo=F32)
        b = R.call_tir(cls.relu, (a,), out_sinfo=F32)
        c = R.call_tir(cls.exp, (a,), out_sinfo=F32)
        gv = R.call_tir(cls.add, (b, c), out_sinfo=F32)
        R.output(gv)
    return gv
""", """
@R.function(private=True)
def fused_exp_relu_exp_add(x: F32) -> F32:
    R.func_attr({"Primitive": 1})
    cls = Module
    with R.dataflow():
        a = R.call_tir(cls.exp, (x,), out_sinfo=F32)
        b = R.call_tir(cls.relu, (a,), out_sinfo=F32)
        c = R.call_tir(cls.exp, (a,), out_sinfo=F32)
        gv = R.call_tir(cls.add, (b, c), out_sinfo=F32)
        R.output(gv)
    return gv

@R.function
def main(x: F32) -> F32:
    cls = Module
    with R.dataflow():
        gv: F32 = cls.fused_exp_relu_exp_add(x)
        R.output(gv)
    return gv
""")


def test_diamond_through_an_opaque_op_is_not_fused():
    before = parse("""
@R.function
def main(x: F32) -> F32:
    cls = Module
    with R.dataflow():
        a = R.call_tir(cls.exp, (x,), out_sinfo=F32)
        b = R.call_tir(cls.opaque_copy, (a,), out_sinfo=F32)
        c = R.call_tir(cls.relu, (a,), out_sinfo=F32)
        gv = R.call_tir(cls.add, (b, c), out_sinfo=F32)
        R.output(gv)
    return gv
""")
    after = rt.FuseOps()(before)
    # exp's post-dominator path crosses the opaque copy: only relu joins add
    assert sorted(gv.name_hint for gv in after.functions if "fused" in gv.name_hint) == [
        "fused_relu_add"]
    assert_same_results(before, after, "main", random_inputs([(4, 8)]))


def test_tuple_producer_and_its_items_fuse_into_the_consumer():
    fuse_check("""
@R.function
def main(x: F32) -> R.Tensor((4, 4), dtype="float32"):
    cls = Module
    with R.dataflow():
        sp = R.call_tir(cls.split, (x,), out_sinfo=[H, H])
        lo: H = sp[0]
        hi: H = sp[1]
        gv = R.call_tir(cls.mul4, (lo, hi), out_sinfo=H)
        R.output(gv)
    return gv
""", """
@R.function(private=True)
def fused_split_mul4(x: F32) -> H:
    R.func_attr({"Primitive": 1})
    cls = Module
    with R.dataflow():
        sp = R.call_tir(cls.split, (x,), out_sinfo=[H, H])
        lo: H = sp[0]
        hi: H = sp[1]
        gv = R.call_tir(cls.mul4, (lo, hi), out_sinfo=H)
        R.output(gv)
    return gv

@R.function
def main(x: F32) -> H:
    cls = Module
    with R.dataflow():
        gv: H = cls.fused_split_mul4(x)
        R.output(gv)
    return gv
""")


def test_tuple_items_join_their_consumers_when_the_producer_cannot():
    before = parse("""
@R.function
def main(x: F32) -> R.Tuple(H, H):
    cls = Module
    with R.dataflow():
        sp = R.call_tir(cls.split, (x,), out_sinfo=[H, H])
        lo: H = sp[0]
        hi: H = sp[1]
        a = R.call_tir(cls.mul4, (lo, lo), out_sinfo=H)
        b = R.call_tir(cls.mul4, (hi, hi), out_sinfo=H)
        gv = (a, b)
        R.output(gv)
    return gv
""")
    after = rt.FuseOps()(before)
    # split feeds an opaque tuple on both paths; each item fuses with its multiply into a
    # function taking the whole tuple (the second name is numbered)
    fused = [gv.name_hint for gv in after.functions if gv.name_hint.startswith("fused")]
    assert fused == ["fused_mul4", "fused_mul41"]
    for name in fused:
        assert [p.name_hint for p in after[name].params] == ["sp"]
    assert_same_results(before, after, "main", random_inputs([(4, 8)]))


def test_reduction_absorbs_its_producer_but_not_its_consumer():
    fuse_check("""
@R.function
def main(x: F32) -> R.Tensor((4,), dtype="float32"):
    cls = Module
    with R.dataflow():
        a = R.call_tir(cls.exp, (x,), out_sinfo=F32)
        s = R.call_tir(cls.row_sum, (a,), out_sinfo=R.Tensor((4,), dtype="float32"))
        gv = R.call_tir(cls.scale, (s,), out_sinfo=R.Tensor((4,), dtype="float32"))
        R.output(gv)
    return gv
""", """
@R.function(private=True)
def fused_exp_row_sum(x: F32) -> R.Tensor((4,), dtype="float32"):
    R.func_attr({"Primitive": 1})
    cls = Module
    with R.dataflow():
        a = R.call_tir(cls.exp, (x,), out_sinfo=F32)
        gv = R.call_tir(cls.row_sum, (a,), out_sinfo=R.Tensor((4,), dtype="float32"))
        R.output(gv)
    return gv

@R.function
def main(x: F32) -> R.Tensor((4,), dtype="float32"):
    cls = Module
    with R.dataflow():
        lv: R.Tensor((4,), dtype="float32") = cls.fused_exp_row_sum(x)
        gv = R.call_tir(cls.scale, (lv,), out_sinfo=R.Tensor((4,), dtype="float32"))
        R.output(gv)
    return gv
""")


OPAQUE = """
@R.function
def main(x: F32) -> F32:
    cls = Module
    with R.dataflow():
        a = R.call_tir(cls.opaque_copy, (x,), out_sinfo=F32)
        b = R.call_tir(cls.opaque_copy, (a,), out_sinfo=F32)
        gv = R.add(b, b)
        R.output(gv)
    return gv
"""


def test_opaque_ops_and_relax_ops_are_left_alone():
    before = parse(OPAQUE)
    tvm.ir.assert_structural_equal(rt.FuseOps()(before), before)


def test_fuse_opt_level_zero_and_max_depth():
    text = """
@R.function
def main(x: F32) -> F32:
    cls = Module
    with R.dataflow():
        a = R.call_tir(cls.exp, (x,), out_sinfo=F32)
        b = R.call_tir(cls.exp, (a,), out_sinfo=F32)
        c = R.call_tir(cls.exp, (b,), out_sinfo=F32)
        gv = R.call_tir(cls.exp, (c,), out_sinfo=F32)
        R.output(gv)
    return gv
"""
    before = parse(text)
    tvm.ir.assert_structural_equal(rt.FuseOps(fuse_opt_level=0)(before), before)
    with tvm.transform.PassContext(opt_level=0):  # -1 takes the context's level
        tvm.ir.assert_structural_equal(rt.FuseOps()(before), before)
    with tvm.transform.PassContext(config={"relax.FuseOps.max_depth": 2}):
        after = rt.FuseOps()(before)
    # at most two bindings per group; the two groups are equal and share one function
    fused = [gv.name_hint for gv in after.functions if gv.name_hint.startswith("fused")]
    assert fused == ["fused_exp_exp"]
    assert len(after["main"].body.blocks[0].bindings) == 2
    assert_same_results(before, after, "main", random_inputs([(4, 8)]))


def test_symbolic_shapes_stay_symbolic():
    fuse_check("""
@R.function
def main(x: R.Tensor(("n", 8), dtype="float32")) -> R.Tensor(("n", 8), dtype="float32"):
    n = T.int64()
    cls = Module
    with R.dataflow():
        a = R.call_tir(cls.dyn_exp, (x,), out_sinfo=R.Tensor((n, 8), dtype="float32"))
        gv = R.call_tir(cls.dyn_add, (a, x), out_sinfo=R.Tensor((n, 8), dtype="float32"))
        R.output(gv)
    return gv
""", """
@R.function(private=True)
def fused_dyn_exp_dyn_add(x: R.Tensor(("n", 8), dtype="float32")) -> R.Tensor(("n", 8), dtype="float32"):
    n = T.int64()
    R.func_attr({"Primitive": 1})
    cls = Module
    with R.dataflow():
        a = R.call_tir(cls.dyn_exp, (x,), out_sinfo=R.Tensor((n, 8), dtype="float32"))
        gv = R.call_tir(cls.dyn_add, (a, x), out_sinfo=R.Tensor((n, 8), dtype="float32"))
        R.output(gv)
    return gv

@R.function
def main(x: R.Tensor(("n", 8), dtype="float32")) -> R.Tensor(("n", 8), dtype="float32"):
    n = T.int64()
    cls = Module
    with R.dataflow():
        gv: R.Tensor((n, 8), dtype="float32") = cls.fused_dyn_exp_dyn_add(x)
        R.output(gv)
    return gv
""", inputs=((5, 8),))


_OUTPUT_READ_IN_BLOCK = """
@R.function
def main(x: F32) -> R.Tuple(F32, F32):
    cls = Module
    with R.dataflow():
        a = R.call_tir(cls.exp, (x,), out_sinfo=F32)
        gv = R.call_tir(cls.relu, (a,), out_sinfo=F32)
        gv1 = R.call_tir(cls.exp, (gv,), out_sinfo=F32)
        R.output(gv, gv1)
    return (gv, gv1)
"""


def test_block_outputs_are_not_fused_into_their_consumers():
    """TVM's rule (FuseOps' default): a block output ends its group."""
    before = parse(_OUTPUT_READ_IN_BLOCK)
    after = rt.FuseOps()(before)
    names = sorted(gv.name_hint for gv in after.functions if "fused" in gv.name_hint)
    assert names == ["fused_exp_relu"]
    assert_same_results(before, after, "main", random_inputs([(4, 8)]))


def test_block_outputs_read_in_the_block_fuse_into_their_consumers_and_stay_outputs():
    # (minitvm's fuse_read_outputs, relax.build's pipeline: a Relax function returns a
    # tuple, so the group returns the output beside its own result)
    fuse_check(_OUTPUT_READ_IN_BLOCK, """
@R.function(private=True)
def fused_exp_relu_exp(x: F32) -> R.Tuple(F32, F32):
    R.func_attr({"Primitive": 1})
    cls = Module
    with R.dataflow():
        a = R.call_tir(cls.exp, (x,), out_sinfo=F32)
        gv = R.call_tir(cls.relu, (a,), out_sinfo=F32)
        gv1 = R.call_tir(cls.exp, (gv,), out_sinfo=F32)
        R.output(gv, gv1)
    return (gv, gv1)

@R.function
def main(x: F32) -> R.Tuple(F32, F32):
    cls = Module
    with R.dataflow():
        lv: R.Tuple(F32, F32) = cls.fused_exp_relu_exp(x)
        gv: F32 = lv[0]
        gv1: F32 = lv[1]
        R.output(gv, gv1)
    return (gv, gv1)
""", fuse_read_outputs=True)


def test_a_block_output_read_nowhere_in_the_block_still_ends_its_group():
    before = parse("""
@R.function
def main(x: F32) -> R.Tuple(F32, F32):
    cls = Module
    with R.dataflow():
        a = R.call_tir(cls.exp, (x,), out_sinfo=F32)
        gv = R.call_tir(cls.relu, (a,), out_sinfo=F32)
        b = R.call_tir(cls.exp, (a,), out_sinfo=F32)
        gv1 = R.call_tir(cls.opaque_copy, (b,), out_sinfo=F32)
        R.output(gv, gv1)
    return (gv, gv1)
""")
    after = rt.FuseOps(fuse_read_outputs=True)(before)
    # ``a`` feeds the output ``gv`` and ``b`` (read by an opaque op): no common post-dominator
    names = sorted(gv.name_hint for gv in after.functions if "fused" in gv.name_hint)
    assert names == []
    assert_same_results(before, after, "main", random_inputs([(4, 8)]))


def test_non_dataflow_blocks_are_not_touched():
    before = parse("""
@R.function
def main(x: F32) -> F32:
    cls = Module
    a = R.call_tir(cls.exp, (x,), out_sinfo=F32)
    b = R.call_tir(cls.relu, (a,), out_sinfo=F32)
    return b
""")
    tvm.ir.assert_structural_equal(rt.FuseOps()(before), before)


def test_registered_under_the_relax_name():
    p = tvm.transform.get_pass("relax.transform.FuseOps", fuse_opt_level=2)
    assert p.info.name == "FuseOps" and p.info.opt_level == 0


@pytest.mark.parametrize("level", [1, 3])
def test_levels_above_zero_fuse(level):
    before = parse(OPAQUE.replace("cls.opaque_copy, (x,)", "cls.exp, (x,)").replace(
        "cls.opaque_copy, (a,)", "cls.relu, (a,)"))
    after = rt.FuseOps(fuse_opt_level=level)(before)
    assert "fused_exp_relu" in [gv.name_hint for gv in after.functions]


def test_a_block_output_aliasing_a_value_the_block_reads_is_no_barrier():
    # an LSTM step: the new cell state ``c`` is an output (``gv = c``) and read by the new
    # hidden state; ``c``'s binding defines ``gv`` and all three ops are one group (``gv1 = h``
    # stays: nothing in the block reads ``h``)
    fuse_check("""
@R.function
def main(x: F32) -> R.Tuple(F32, F32):
    cls = Module
    with R.dataflow():
        a = R.call_tir(cls.exp, (x,), out_sinfo=F32)
        c = R.call_tir(cls.relu, (a,), out_sinfo=F32)
        h = R.call_tir(cls.add, (c, a), out_sinfo=F32)
        gv: F32 = c
        gv1: F32 = h
        R.output(gv, gv1)
    return (gv, gv1)
""", """
@R.function(private=True)
def fused_exp_relu_add(x: F32) -> R.Tuple(F32, F32):
    R.func_attr({"Primitive": 1})
    cls = Module
    with R.dataflow():
        a = R.call_tir(cls.exp, (x,), out_sinfo=F32)
        gv = R.call_tir(cls.relu, (a,), out_sinfo=F32)
        gv1 = R.call_tir(cls.add, (gv, a), out_sinfo=F32)
        R.output(gv, gv1)
    return (gv, gv1)

@R.function
def main(x: F32) -> R.Tuple(F32, F32):
    cls = Module
    with R.dataflow():
        lv: R.Tuple(F32, F32) = cls.fused_exp_relu_add(x)
        gv: F32 = lv[0]
        lv1: F32 = lv[1]
        gv1: F32 = lv1
        R.output(gv, gv1)
    return (gv, gv1)
""", fuse_read_outputs=True)

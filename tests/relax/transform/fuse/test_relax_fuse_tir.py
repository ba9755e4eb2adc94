"""relax.transform.FuseTIR on TVMScript Before/Expected modules, the seed's fused print, and
numerical equivalence of the fused PrimFuncs (compiled natively) with the unfused program."""

import pathlib

import numpy as np
import pytest
from fuse_prims import PRIMS, module_text
from fuse_test_util import assert_same_results, check, random_inputs, run

import minitvm as tvm
from minitvm.relax import transform as rt
from minitvm.relax.transform.fuse_tir import FuseTIRError
from minitvm.script import from_source

F = 'R.Tensor((4, 8), dtype="float32")'
H = 'R.Tensor((4, 4), dtype="float32")'
SEED = pathlib.Path(__file__).parents[2] / "seed"
# the patterns AnnotateTIROpPattern gives the seed's PrimFuncs
SEED_PATTERNS = {"add": 0, "add1": 0, "relu": 0, "transpose": 2, "transpose1": 2, "matmul": 4,
                 "matmul1": 4}


def parse(relax_text: str, prims: str = PRIMS) -> tvm.IRModule:
    return from_source(module_text(relax_text.replace("F32", F).replace("H16", H), prims))


def annotated_seed() -> tvm.IRModule:
    mod = from_source((SEED / "seed003_legalized.txt").read_text())
    for gv, func in list(mod.functions.items()):
        if gv.name_hint in SEED_PATTERNS:
            mod[gv] = func.with_attr("op_pattern", SEED_PATTERNS[gv.name_hint])
    return mod


def _lines(text: str) -> list:
    return [line.rstrip() for line in text.splitlines() if line.strip()]


def test_seed003_fuses_as_printed():
    before = annotated_seed()
    after = tvm.transform.Sequential([rt.FuseOps(), rt.FuseTIR()])(before)
    expected = (SEED / "seed003_fused.txt").read_text()
    assert _lines(after.script()) == _lines(expected)
    tvm.ir.assert_structural_equal(after, from_source(expected))
    for n in (1, 7):
        inputs = random_inputs([(n, 784), (128, 784), (128,), (10, 128), (10,)], seed=n)
        assert_same_results(before, after, "forward", inputs, rtol=1e-4, atol=1e-4)
        x, w1, b1, w2, b2 = (a.astype("float64") for a in inputs)
        want = np.maximum(x @ w1.T + b1, 0) @ w2.T + b2
        # (outputs reach ~500 from sums of 784 products: an element near 0 carries float32
        # rounding of that scale, whatever order the kernel sums in)
        np.testing.assert_allclose(run(after, "forward", *inputs), want, rtol=1e-4,
                                   atol=1e-6 * np.abs(want).max())


CHAIN = """
@R.function
def main(x: F32) -> F32:
    cls = Module
    with R.dataflow():
        lv: F32 = cls.fused_exp_relu(x)
        gv: F32 = lv
        R.output(gv)
    return gv

@R.function(private=True)
def fused_exp_relu(x: F32) -> F32:
    R.func_attr({"Primitive": 1})
    cls = Module
    with R.dataflow():
        a = R.call_tir(cls.exp, (x,), out_sinfo=F32)
        gv = R.call_tir(cls.relu, (a,), out_sinfo=F32)
        R.output(gv)
    return gv
"""

CHAIN_FUSED = '''
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def fused_exp_relu(x: T.Buffer((T.int64(4), T.int64(8)), "float32"), y_intermediate: T.Buffer((T.int64(4), T.int64(8)), "float32")):
        T.func_attr({"tir.noalias": T.bool(True)})
        y_tmp = T.alloc_buffer((T.int64(4), T.int64(8)))
        for i, j in T.grid(T.int64(4), T.int64(8)):
            with T.block("compute"):
                vi, vj = T.axis.remap("SS", [i, j])
                T.reads(x[vi, vj])
                T.writes(y_tmp[vi, vj])
                y_tmp[vi, vj] = T.exp(x[vi, vj])
        for i, j in T.grid(T.int64(4), T.int64(8)):
            with T.block("compute_1"):
                vi, vj = T.axis.remap("SS", [i, j])
                T.reads(y_tmp[vi, vj])
                T.writes(y_intermediate[vi, vj])
                y_intermediate[vi, vj] = T.max(y_tmp[vi, vj], T.float32(0.0))

    @R.function
    def main(x: R.Tensor((4, 8), dtype="float32")) -> R.Tensor((4, 8), dtype="float32"):
        cls = Module
        with R.dataflow():
            gv = R.call_tir(cls.fused_exp_relu, (x,), out_sinfo=R.Tensor((4, 8), dtype="float32"))
            R.output(gv)
        return gv
'''


def test_chain_merges_into_one_prim_func_and_unused_functions_go():
    before = parse(CHAIN)
    after = check(rt.FuseTIR(), before, from_source(CHAIN_FUSED))
    assert_same_results(before, after, "main", random_inputs([(4, 8)]))
    # the output handle and buffer are named as TVM names them
    prim = after["fused_exp_relu"]
    assert [p.name for p in prim.params] == ["p_x", "p_output0"]
    assert prim.buffer_map[prim.params[1]].name == "y_intermediate"


def test_a_callee_used_twice_keeps_its_loops_distinct():
    before = parse("""
@R.function
def main(x: F32) -> F32:
    cls = Module
    with R.dataflow():
        gv: F32 = cls.fused_exp_exp_add(x)
        R.output(gv)
    return gv

@R.function(private=True)
def fused_exp_exp_add(x: F32) -> F32:
    R.func_attr({"Primitive": 1})
    cls = Module
    with R.dataflow():
        a = R.call_tir(cls.exp, (x,), out_sinfo=F32)
        b = R.call_tir(cls.exp, (a,), out_sinfo=F32)
        gv = R.call_tir(cls.add, (a, b), out_sinfo=F32)
        R.output(gv)
    return gv
""")
    after = rt.FuseTIR()(before)
    text = after["fused_exp_exp_add"].script()
    assert 'T.block("compute")' in text and 'T.block("compute_1")' in text
    assert text.count("T.alloc_buffer") == 2
    loops = [s.loop_var for s in tvm.tir.stmt_functor.walk_stmts(after["fused_exp_exp_add"].body)
             if isinstance(s, tvm.tir.For)]
    assert len({id(v) for v in loops}) == len(loops) == 6
    assert_same_results(before, after, "main", random_inputs([(4, 8)]))
    # a parse round trip of the printed function gives the same function
    tvm.ir.assert_structural_equal(from_source(after.script()), after)


def test_two_outputs_become_two_output_buffers():
    before = parse("""
@R.function
def main(x: F32) -> R.Tuple(F32, F32):
    cls = Module
    with R.dataflow():
        t: R.Tuple(F32, F32) = cls.fused_exp_relu(x)
        a: F32 = t[0]
        b: F32 = t[1]
        gv = R.call_tir(cls.add, (a, b), out_sinfo=F32)
        gv1 = (gv, a)
        R.output(gv1)
    return gv1

@R.function(private=True)
def fused_exp_relu(x: F32) -> R.Tuple(F32, F32):
    R.func_attr({"Primitive": 1})
    cls = Module
    with R.dataflow():
        gv = R.call_tir(cls.exp, (x,), out_sinfo=F32)
        gv1 = R.call_tir(cls.relu, (gv,), out_sinfo=F32)
        R.output(gv, gv1)
    return (gv, gv1)
""")
    after = rt.FuseTIR()(before)
    prim = after["fused_exp_relu"]
    assert [p.name for p in prim.params] == ["p_x", "p_output0", "p_output1"]
    assert "T.alloc_buffer" not in prim.script()
    call = after["main"].body.blocks[0].bindings[0].value
    assert call.op.name == "relax.call_tir" and len(call.sinfo_args[0].fields) == 2
    assert_same_results(before, after, "main", random_inputs([(4, 8)]))


def test_tuple_parameter_is_passed_field_by_field():
    before = parse("""
@R.function
def main(x: F32) -> R.Tuple(H16, H16):
    cls = Module
    with R.dataflow():
        sp = R.call_tir(cls.split, (x,), out_sinfo=[H16, H16])
        lo: H16 = sp[0]
        hi: H16 = sp[1]
        a = R.call_tir(cls.mul4, (lo, lo), out_sinfo=H16)
        b = R.call_tir(cls.mul4, (hi, hi), out_sinfo=H16)
        gv = (a, b)
        R.output(gv)
    return gv
""")
    fused = rt.FuseOps()(before)
    after = rt.FuseTIR()(fused)
    assert [p.name for p in after["fused_mul4"].params] == ["p_sp_0", "p_sp_1", "p_output0"]
    assert_same_results(before, after, "main", random_inputs([(4, 8)]))


def test_symbolic_dims_and_renamed_callee_vars():
    before = parse("""
@R.function
def main(x: R.Tensor(("n", 8), dtype="float32")) -> R.Tensor(("n", 8), dtype="float32"):
    n = T.int64()
    cls = Module
    with R.dataflow():
        a = R.call_tir(cls.dyn_exp, (x,), out_sinfo=R.Tensor((n, 8), dtype="float32"))
        b = R.call_tir(cls.dyn_exp, (a,), out_sinfo=R.Tensor((n, 8), dtype="float32"))
        gv = R.call_tir(cls.dyn_add, (a, b), out_sinfo=R.Tensor((n, 8), dtype="float32"))
        R.output(gv)
    return gv
""")
    after = tvm.transform.Sequential([rt.FuseOps(), rt.FuseTIR()])(before)
    prim = after["fused_dyn_exp_dyn_exp_dyn_add"]
    text = prim.script()
    # one symbolic dimension, bound by the input's match_buffer (the callees' n and m are gone)
    assert "n = T.int64()" in text and "m = T.int64()" not in text
    assert "x = T.match_buffer(p_x, (n, T.int64(8)))" in text
    for n in (1, 6):
        assert_same_results(before, after, "main", random_inputs([(n, 8)], seed=n))


def test_non_call_tir_binding_is_a_clear_error():
    mod = parse("""
@R.function
def main(x: F32) -> F32:
    cls = Module
    with R.dataflow():
        gv: F32 = cls.fused_bad(x)
        R.output(gv)
    return gv

@R.function(private=True)
def fused_bad(x: F32) -> F32:
    R.func_attr({"Primitive": 1})
    cls = Module
    with R.dataflow():
        a = R.call_tir(cls.exp, (x,), out_sinfo=F32)
        gv = R.add(a, a)
        R.output(gv)
    return gv
""")
    with pytest.raises(FuseTIRError, match="fused_bad: binding 'gv' is neither a call_tir"):
        rt.FuseTIR()(mod)


def test_module_without_primitive_functions_is_unchanged():
    mod = parse("""
@R.function
def main(x: F32) -> F32:
    cls = Module
    with R.dataflow():
        gv = R.call_tir(cls.exp, (x,), out_sinfo=F32)
        R.output(gv)
    return gv
""")
    tvm.ir.assert_structural_equal(rt.FuseTIR()(mod), mod)


ADD_SCALAR = '''
    @T.prim_func(private=True)
    def add_scalar(x: T.Buffer((T.int64(4), T.int64(8)), "float32"), y: T.Buffer((T.int64(4), T.int64(8)), "float32"), k: T.int64):
        T.func_attr({"op_pattern": 0, "tir.noalias": T.bool(True)})
        for i, j in T.grid(T.int64(4), T.int64(8)):
            with T.block("add_k"):
                vi, vj = T.axis.remap("SS", [i, j])
                T.reads(x[vi, vj])
                T.writes(y[vi, vj])
                y[vi, vj] = x[vi, vj] + T.Cast("float32", k)
'''


def test_free_symbolic_vars_travel_as_tir_vars():
    before = parse("""
@R.function
def main(x: F32, s: R.Shape(["k"])) -> F32:
    k = T.int64()
    cls = Module
    with R.dataflow():
        a = R.call_tir(cls.exp, (x,), out_sinfo=F32)
        gv = R.call_tir(cls.add_scalar, (a,), out_sinfo=F32, tir_vars=R.shape([k]))
        R.output(gv)
    return gv
""", PRIMS + ADD_SCALAR)
    fused = rt.FuseOps()(before)
    func = fused["fused_exp_add_scalar"]
    assert [p.name_hint for p in func.params] == ["x", "tir_vars"]
    after = rt.FuseTIR()(fused)
    prim = after["fused_exp_add_scalar"]
    assert [p.name for p in prim.params][-1] == "k" and prim.params[-1].dtype == "int64"
    call = after["main"].body.blocks[0].bindings[0].value
    assert len(call.args) == 3  # the tir_vars of call_tir
    x = random_inputs([(4, 8)])[0]
    assert_same_results(before, after, "main", [x, (3,)])
    np.testing.assert_allclose(run(after, "main", x, (3,)), np.exp(x) + 3, rtol=1e-5)

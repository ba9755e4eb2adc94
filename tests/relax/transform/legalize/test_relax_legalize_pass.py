"""LegalizeOps as a pass: the produced module against TVMScript Expected modules, calls it leaves
alone, customize_legalize_map, errors, the input left unchanged, and a 100,000-binding
function at the default recursion limit."""

import sys
import warnings

import numpy as np
import pytest
from legalize_util import bindings, one_op_module, run_legalized, tensor

import minitvm as tvm
from minitvm import relax, tir, topi
from minitvm.relax import op as R
from minitvm.relax.transform import LegalizeOps
from minitvm.relax.transform.legalize_ops import LegalizeError, legalizations
from minitvm.script import from_source


def check(before: str, expected: str):
    mod = from_source(before)
    text = mod.script()
    after = LegalizeOps()(mod)
    assert mod.script() == text  # the input module is not modified
    tvm.ir.assert_structural_equal(after, from_source(expected))
    tvm.ir.assert_structural_equal(from_source(after.script()), after)  # round trip
    return after


def test_add_symbolic_broadcast():
    check("""
@I.ir_module
class Before:
    @R.function
    def main(x: R.Tensor(("n", 4), "float32"), y: R.Tensor((4,), "float32")):
        n = T.int64()
        gv: R.Tensor((n, 4), "float32") = R.add(x, y)
        return gv
""", """
@I.ir_module
class Expected:
    @T.prim_func(private=True)
    def add(var_x: T.handle, y: T.Buffer((T.int64(4),), "float32"), var_T_add: T.handle):
        T.func_attr({"tir.noalias": T.bool(True)})
        n = T.int64()
        x = T.match_buffer(var_x, (n, T.int64(4)))
        T_add = T.match_buffer(var_T_add, (n, T.int64(4)))
        for ax0, ax1 in T.grid(n, T.int64(4)):
            with T.block("T_add"):
                v_ax0, v_ax1 = T.axis.remap("SS", [ax0, ax1])
                T.reads(x[v_ax0, v_ax1], y[v_ax1])
                T.writes(T_add[v_ax0, v_ax1])
                T_add[v_ax0, v_ax1] = x[v_ax0, v_ax1] + y[v_ax1]

    @R.function
    def main(x: R.Tensor(("n", 4), "float32"), y: R.Tensor((4,), "float32")):
        n = T.int64()
        cls = Expected
        gv = R.call_tir(cls.add, (x, y), out_sinfo=R.Tensor((n, 4), "float32"))
        return gv
""")


def test_matmul_batched_broadcast():
    check("""
@I.ir_module
class Before:
    @R.function
    def main(x: R.Tensor((2, 3, 4), "float32"), w: R.Tensor((4, 5), "float32")):
        gv: R.Tensor((2, 3, 5), "float32") = R.matmul(x, w)
        return gv
""", """
@I.ir_module
class Expected:
    @T.prim_func(private=True)
    def matmul(x: T.Buffer((T.int64(2), T.int64(3), T.int64(4)), "float32"), w: T.Buffer((T.int64(4), T.int64(5)), "float32"), matmul: T.Buffer((T.int64(2), T.int64(3), T.int64(5)), "float32")):
        T.func_attr({"tir.noalias": T.bool(True)})
        for i0, i1, i2, k in T.grid(T.int64(2), T.int64(3), T.int64(5), T.int64(4)):
            with T.block("matmul"):
                v_i0, v_i1, v_i2, v_k = T.axis.remap("SSSR", [i0, i1, i2, k])
                T.reads(x[v_i0, v_i1, v_k], w[v_k, v_i2])
                T.writes(matmul[v_i0, v_i1, v_i2])
                with T.init():
                    matmul[v_i0, v_i1, v_i2] = T.float32(0.0)
                matmul[v_i0, v_i1, v_i2] = matmul[v_i0, v_i1, v_i2] + x[v_i0, v_i1, v_k] * w[v_k, v_i2]

    @R.function
    def main(x: R.Tensor((2, 3, 4), "float32"), w: R.Tensor((4, 5), "float32")):
        cls = Expected
        gv = R.call_tir(cls.matmul, (x, w), out_sinfo=R.Tensor((2, 3, 5), "float32"))
        return gv
""")


def test_sum_and_relu_names():
    check("""
@I.ir_module
class Before:
    @R.function
    def main(x: R.Tensor((3, 4), "float32")):
        with R.dataflow():
            lv = R.nn.relu(x)
            gv = R.sum(lv, axis=[1])
            R.output(gv)
        return gv
""", """
@I.ir_module
class Expected:
    @T.prim_func(private=True)
    def relu(x: T.Buffer((T.int64(3), T.int64(4)), "float32"), compute: T.Buffer((T.int64(3), T.int64(4)), "float32")):
        T.func_attr({"tir.noalias": T.bool(True)})
        for i0, i1 in T.grid(T.int64(3), T.int64(4)):
            with T.block("compute"):
                v_i0, v_i1 = T.axis.remap("SS", [i0, i1])
                T.reads(x[v_i0, v_i1])
                T.writes(compute[v_i0, v_i1])
                compute[v_i0, v_i1] = T.max(x[v_i0, v_i1], T.float32(0.0))

    @T.prim_func(private=True)
    def sum(lv: T.Buffer((T.int64(3), T.int64(4)), "float32"), lv_red: T.Buffer((T.int64(3),), "float32")):
        T.func_attr({"tir.noalias": T.bool(True)})
        for ax0, k1 in T.grid(T.int64(3), T.int64(4)):
            with T.block("lv_red"):
                v_ax0, v_k1 = T.axis.remap("SR", [ax0, k1])
                T.reads(lv[v_ax0, v_k1])
                T.writes(lv_red[v_ax0])
                with T.init():
                    lv_red[v_ax0] = T.float32(0.0)
                lv_red[v_ax0] = lv_red[v_ax0] + lv[v_ax0, v_k1]

    @R.function
    def main(x: R.Tensor((3, 4), "float32")):
        cls = Expected
        with R.dataflow():
            lv = R.call_tir(cls.relu, (x,), out_sinfo=R.Tensor((3, 4), "float32"))
            gv = R.call_tir(cls.sum, (lv,), out_sinfo=R.Tensor((3,), "float32"))
            R.output(gv)
        return gv
""")


def test_same_signature_reuses_primfunc_and_names_suffix():
    x = relax.Var("x", tensor((3, 4)))
    y = relax.Var("y", tensor((5,)))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, y]):
        with bb.dataflow():
            a = bb.emit(R.add(x, x))
            b = bb.emit(R.add(a, x))
            c = bb.emit(R.add(y, y))
            gv = bb.emit_output(relax.Tuple([b, c]))
        bb.emit_func_output(gv)
    after = LegalizeOps()(bb.get())
    names = sorted(gv.name_hint for gv, f in after.functions.items()
                   if isinstance(f, tir.PrimFunc))
    assert names == ["add", "add1"]
    calls = [b.value.args[0].name_hint for b in bindings(after["main"])
             if isinstance(b.value, relax.Call)]
    assert calls == ["add", "add", "add1"]


def test_unknown_shape_and_call_tir_left_alone():
    mod = from_source("""
@I.ir_module
class Before:
    @R.function
    def main(x: R.Tensor(dtype="float32", ndim=2), y: R.Tensor((2, 3), "float32")):
        a = R.add(x, x)
        b = R.add(y, y)
        return (a, b)
""")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        after = LegalizeOps()(mod)
    ops = [b.value.op.name for b in bindings(after["main"])]
    assert ops == ["relax.add", "relax.call_tir"]
    again = LegalizeOps()(after)  # call_tir is never legalized (and no warning)
    tvm.ir.assert_structural_equal(again, after)


def test_op_without_legalization_warns_and_stays():
    from minitvm.relax.op.base import register_op_rule

    op = register_op_rule("relax.test_legalize_missing", lambda call, ctx: call.args[0].struct_info,
                          num_inputs=1)
    mod = one_op_module(lambda x: relax.Call(op, [x]), [tensor((2,))])
    with pytest.warns(UserWarning, match="no legalization function for relax.test_legalize_miss"):
        after = LegalizeOps()(mod)
    assert bindings(after["main"])[0].value.op is op
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        LegalizeOps(enable_warning=False)(mod)


def test_customize_legalize_map():
    def add_as_subtract(bb, call):
        return bb.call_te(topi.broadcast.subtract, call.args[0], call.args[1],
                          primfunc_name_hint="my_sub")

    mod = one_op_module(R.add, [tensor((4,)), tensor((4,))])
    after = LegalizeOps({"relax.add": add_as_subtract})(mod)
    assert "my_sub" in [gv.name_hint for gv in after.functions]
    a, b = np.arange(4, dtype="float32"), np.ones(4, "float32")
    np.testing.assert_allclose(run_legalized(after, [a, b]), a - b)
    with pytest.raises(TypeError, match="customize_legalize_map maps op names"):
        LegalizeOps({"relax.add": 3})


def test_error_names_the_op():
    lo = relax.Var("lo", relax.PrimStructInfo("float32"))
    x = relax.Var("x", tensor((3,)))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, lo]):
        gv = bb.emit(R.clip(x, lo, relax.PrimValue(tir.FloatImm("float32", 1.0))))
        bb.emit_func_output(gv)
    with pytest.raises(LegalizeError, match="relax.clip: argument 1 must be a known scalar"):
        LegalizeOps()(bb.get())


def test_registry_covers_the_op_library():
    names = set(legalizations())
    for op in ("relax.add", "relax.matmul", "relax.nn.conv2d", "relax.nn.softmax",
               "relax.nn.layer_norm", "relax.reshape", "relax.take", "relax.argmax",
               "relax.nn.attention", "relax.nn.adaptive_avg_pool2d", "relax.arange"):
        assert op in names
    assert tvm.transform.get_pass("LegalizeOps") is not None


def test_100k_bindings_default_recursion_limit():
    assert sys.getrecursionlimit() <= 1000
    n = tir.Var("n", "int64")
    x = relax.Var("x", tensor([n, 4]))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            v = x
            for i in range(100_000):
                v = bb.emit(R.add(v, x) if i % 2 else R.nn.relu(v))
            gv = bb.emit_output(v)
        bb.emit_func_output(gv)
    after = LegalizeOps()(bb.get())
    prims = sorted(g.name_hint for g, f in after.functions.items() if isinstance(f, tir.PrimFunc))
    assert prims == ["add", "relu"]
    bs = bindings(after["main"])
    assert len(bs) == 100_001
    assert all(b.value.op.name == "relax.call_tir" for b in bs[:-1])


def test_scalar_constant_arguments_are_part_of_the_reuse_key():
    """power(x, 3.0) and power(y, 0.5) on equal shapes fold different exponents into their
    PrimFuncs: they must not share one (they did, and the second cubed instead of rooting),
    while a repeated power(., 3.0) still reuses its PrimFunc."""
    x = relax.Var("x", tensor((2, 3)))
    bb = relax.BlockBuilder()
    three, half = (relax.const(np.array(v, "float32"), "float32") for v in (3.0, 0.5))
    with bb.function("main", [x]):
        with bb.dataflow():
            a = bb.emit(R.power(x, three))
            b = bb.emit(R.power(a, half))
            c = bb.emit(R.power(b, three))
            gv = bb.emit_output(c)
        bb.emit_func_output(gv)
    after = LegalizeOps()(bb.get())
    calls = [b.value.args[0].name_hint for b in bindings(after["main"])
             if isinstance(b.value, relax.Call)]
    assert calls == ["power", "power1", "power"]
    xv = np.random.default_rng(0).uniform(0.5, 1.5, (2, 3)).astype("float32")
    vm = relax.VirtualMachine(relax.build(bb.get(), "llvm"), tvm.cpu())
    np.testing.assert_allclose(vm["main"](tvm.nd.array(xv)).numpy(), (xv ** 1.5) ** 3,
                               rtol=1e-5)


def test_a_lowered_function_is_scanned_not_rebuilt():
    """A normalized function of flat call_tir / global calls and tuples (LegalizeOps run again
    on its own output) is left as the same object, equal to what the full visit gives; an op
    to legalize, an op that warns, or a non-normalized function still takes the visit."""
    from minitvm.relax.transform.legalize_ops.pass_ import _Legalizer

    mod = from_source("""
@I.ir_module
class Before:
    @R.function
    def main(x: R.Tensor((2, 3), "float32"), y: R.Tensor((2, 3), "float32")):
        with R.dataflow():
            a = R.add(x, y)
            b = R.multiply(a, x)
            t = (a, b)
            c = t[1]
            R.output(c)
        return c
""")
    lowered = LegalizeOps()(mod)
    func = lowered["main"]
    legalizer = _Legalizer(lowered, {}, True)
    assert not legalizer.has_work(func)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = LegalizeOps()(lowered)
    assert again["main"] is func
    tvm.ir.assert_structural_equal(legalizer.visit_expr(func), func)  # the visit agrees
    assert legalizer.has_work(mod["main"])  # R.add, R.multiply: to legalize
    from minitvm.relax.op.base import register_op_rule

    op = register_op_rule("relax.test_legalize_scan_warns",
                          lambda call, ctx: call.args[0].struct_info, num_inputs=1)
    quiet_less = one_op_module(lambda v: relax.Call(op, [v]), [tensor((2,))])
    assert _Legalizer(quiet_less, {}, True).has_work(quiet_less["main"])  # it must warn
    x = relax.Var("x", relax.TensorStructInfo([2], "float32"))
    gv = lowered.get_global_var("main")
    bare = relax.Function([x], relax.SeqExpr([], relax.Call(gv, [x])))  # body not a leaf...
    assert _Legalizer(lowered, {}, True).has_work(bare)  # ...no struct info: not normalized

"""Regression tests (Relax II fixes): ``R.call_tir_inplace`` (struct info checks, TVMScript,
CallTIRRewrite, relax.build + VM) and ``relax.transform.RemovePurityChecking``."""

import sys

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax
from minitvm.relax import op as R
from minitvm.relax import transform as rt
from minitvm.relax.op.base import StructInfoError
from minitvm.script import from_source

T4 = 'R.Tensor((4,), dtype="float32")'
PRIMS = '''
    @T.prim_func(private=True)
    def add_inplace(a: T.Buffer((T.int64(4),), "float32"), b: T.Buffer((T.int64(4),), "float32")):
        T.func_attr({"tir.noalias": T.bool(True)})
        for i in range(T.int64(4)):
            with T.block("T_add"):
                vi = T.axis.spatial(T.int64(4), i)
                a[vi] = a[vi] + b[vi]

    @T.prim_func(private=True)
    def add_and_neg(a: T.Buffer((T.int64(4),), "float32"), b: T.Buffer((T.int64(4),), "float32"), c: T.Buffer((T.int64(4),), "float32")):
        T.func_attr({"tir.noalias": T.bool(True)})
        for i in range(T.int64(4)):
            with T.block("T_add"):
                vi = T.axis.spatial(T.int64(4), i)
                c[vi] = T.float32(0) - a[vi]
                a[vi] = a[vi] + b[vi]
'''

SRC = f'''
@I.ir_module
class Module:{PRIMS}
    @R.function
    def main(x: {T4}, y: {T4}) -> {T4}:
        cls = Module
        with R.dataflow():
            z = R.exp(x)
            w = R.call_tir_inplace(cls.add_inplace, (z, y), out_sinfo={T4}, inplace_indices=[0])
            gv = R.multiply(w, y)
            R.output(gv)
        return gv
'''

TWO = f'''
@I.ir_module
class Module:{PRIMS}
    @R.function
    def main(x: {T4}, y: {T4}) -> R.Tuple({T4}, {T4}):
        cls = Module
        with R.dataflow():
            z = R.exp(x)
            w = R.call_tir_inplace(cls.add_and_neg, (z, y), out_sinfo=[{T4}, {T4}], inplace_indices=[0, -1])
            R.output(w)
        return w
'''

REWRITTEN = f'''
@I.ir_module
class Module:{PRIMS}
    @R.function
    def main(x: {T4}, y: {T4}) -> R.Tuple({T4}, {T4}):
        cls = Module
        z = R.exp(x)
        alloc = R.builtin.alloc_tensor(R.shape([4]), R.dtype("float32"), R.prim_value(0), R.str("global"))
        _ = cls.add_and_neg(z, y, alloc)
        w = (z, alloc)
        return w
'''


def _inputs():
    rng = np.random.default_rng(3)
    return rng.random(4).astype("float32"), rng.random(4).astype("float32")


def test_call_tir_inplace_round_trips_and_infers():
    mod = from_source(SRC)
    w = mod["main"].body.blocks[0].bindings[1]
    assert w.value.op.name == "relax.call_tir_inplace"
    assert list(w.value.attrs.inplace_indices) == [0]
    tvm.ir.assert_structural_equal(w.var.struct_info, relax.TensorStructInfo([4], "float32"))
    tvm.ir.assert_structural_equal(from_source(mod.script()), mod)


def test_call_tir_rewrite_allocates_only_fresh_outputs():
    mod = rt.ToNonDataflow()(from_source(TWO))
    after = rt.CallTIRRewrite()(mod)
    tvm.ir.assert_structural_equal(after["main"], from_source(REWRITTEN)["main"])


@pytest.mark.parametrize("src", [SRC, TWO], ids=["one_output", "inplace_and_fresh"])
def test_build_and_run(src):
    x, y = _inputs()
    x0 = x.copy()
    vm = relax.VirtualMachine(relax.build(from_source(src), "llvm"), tvm.cpu())
    out = vm["main"](x, y)
    if src is SRC:
        np.testing.assert_allclose(out.numpy(), (np.exp(x) + y) * y, rtol=1e-5)
    else:
        a, b = out
        np.testing.assert_allclose(a.numpy(), np.exp(x) + y, rtol=1e-5)
        np.testing.assert_allclose(b.numpy(), -np.exp(x), rtol=1e-5)
    np.testing.assert_array_equal(x, x0)  # only the intermediate was written


@pytest.mark.parametrize("indices, out, match", [
    ([-1], [relax.TensorStructInfo([4], "float32")], "at least one in-place output"),
    ([2], [relax.TensorStructInfo([4], "float32")], "index 2 is out of range for 2"),
    ([0, 0], [relax.TensorStructInfo([4], "float32")] * 2, "index 0 is used for more than one"),
    ([0], [relax.TensorStructInfo([5], "float32")], "output 0 is written into argument 0"),
    ([0, 1], [relax.TensorStructInfo([4], "float32")], "1 output.* but 2 inplace_indices"),
])
def test_call_tir_inplace_errors(indices, out, match):
    x = relax.Var("x", relax.TensorStructInfo([4], "float32"))
    y = relax.Var("y", relax.TensorStructInfo([4], "float32"))
    gv = relax.GlobalVar("f")
    bb = relax.BlockBuilder()
    with bb.function("main", [x, y]):
        with pytest.raises(StructInfoError, match=match):
            bb.emit(R.call_tir_inplace(gv, (x, y), indices, out if len(out) > 1 else out[0]))
        bb.emit_func_output(x)
    with pytest.raises(TypeError, match="GlobalVar callee"):
        R.call_tir_inplace("f", (x,), 0, relax.TensorStructInfo([4], "float32"))


# ----------------------------------------------------------------------- RemovePurityChecking
PURE = f'''
@I.ir_module
class Module:
    @R.function
    def main(x: {T4}) -> {T4}:
        y = R.call_pure_packed("test_relax_ii.double", x, sinfo_args=({T4},))

        @R.function
        def inner(a: {T4}) -> {T4}:
            b = R.call_pure_packed("test_relax_ii.double", a, sinfo_args=({T4},))
            return b

        z = R.invoke_pure_closure(inner, (y,), sinfo_args=({T4},))
        return z
'''

UNCHECKED = f'''
@I.ir_module
class Module:
    @R.function
    def main(x: {T4}) -> {T4}:
        R.func_attr({{"relax.force_pure": True}})
        y = R.call_packed("test_relax_ii.double", x, sinfo_args=({T4},))

        @R.function
        def inner(a: {T4}) -> {T4}:
            R.func_attr({{"relax.force_pure": True}})
            b = R.call_packed("test_relax_ii.double", a, sinfo_args=({T4},))
            return b

        z = R.invoke_closure(inner, (y,), sinfo_args=({T4},))
        return z
'''


def test_remove_purity_checking_structure():
    after = rt.RemovePurityChecking()(from_source(PURE))
    tvm.ir.assert_structural_equal(after, from_source(UNCHECKED))
    again = rt.RemovePurityChecking()(after)  # idempotent
    tvm.ir.assert_structural_equal(again, after)


def test_remove_purity_checking_keeps_impure_functions_unmarked():
    src = PURE.replace("@R.function\n    def main", "@R.function(pure=False)\n    def main")
    after = rt.RemovePurityChecking()(from_source(src))
    assert "relax.force_pure" not in (after["main"].attrs or {})


def test_remove_purity_checking_same_results():
    tvm.register_func("test_relax_ii.double", lambda a: a * 2,
                      override=True)
    x = np.arange(4, dtype="float32")
    before = from_source(PURE)
    after = rt.RemovePurityChecking()(before)
    for mod in (before, after):
        vm = relax.VirtualMachine(relax.build(rt.LambdaLift()(mod), "llvm"), tvm.cpu())
        np.testing.assert_allclose(vm["main"](x).numpy(), x * 4)


def test_remove_purity_checking_large_function():
    n = 100_000
    x = relax.Var("x", relax.TensorStructInfo([4], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        v = x
        for _ in range(n):
            v = bb.emit(R.call_pure_packed("f", v, sinfo_args=relax.TensorStructInfo([4],
                                                                                  "float32")))
        bb.emit_func_output(v)
    assert sys.getrecursionlimit() <= 10_000
    after = rt.RemovePurityChecking()(bb.get())
    binds = after["main"].body.blocks[0].bindings
    assert len(binds) == n and isinstance(binds[-1].value.op, relax.ExternFunc)

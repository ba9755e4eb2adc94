"""relax.transform.RemoveUnusedOutputs and AttachGlobalSymbol."""

import numpy as np
from relax_pass_util import T, assert_equal, assert_same_results

import minitvm as tvm
from minitvm import relax, tir
from minitvm.relax import op as R
from minitvm.relax import transform as rt


def _func(bb, name, params, fn, private=False):
    with bb.function(name, params, private=private):
        return bb.emit_func_output(fn(bb))


def _callee(bb, private=True):
    a = relax.Var("a", T(2))
    return _func(bb, "callee", [a], lambda b: relax.Tuple([
        b.emit(R.exp(a)), b.emit(R.add(a, a)), b.emit(R.multiply(a, a))]), private)


def test_unused_outputs_removed():
    bb = relax.BlockBuilder()
    callee = _callee(bb)
    x = relax.Var("x", T(2))

    def main(b):
        r = b.emit(relax.Call(callee, [x]))
        f0 = b.emit(relax.TupleGetItem(r, 0))
        f2 = b.emit(relax.TupleGetItem(r, 2))
        return b.emit(R.add(f0, f2))

    _func(bb, "main", [x], main)
    mod = bb.get()
    after = rt.RemoveUnusedOutputs()(mod)

    exp_bb = relax.BlockBuilder()
    a = relax.Var("a", T(2))
    new_callee = _func(exp_bb, "callee", [a], lambda b: relax.Tuple([
        b.emit(R.exp(a)), b.emit(R.multiply(a, a))]), private=True)
    x2 = relax.Var("x", T(2))

    def expected_main(b):
        r = b.emit(relax.Call(new_callee, [x2]))
        f0 = b.emit(relax.TupleGetItem(r, 0))
        f2 = b.emit(relax.TupleGetItem(r, 1))
        return b.emit(R.add(f0, f2))

    _func(exp_bb, "main", [x2], expected_main)
    assert_equal(after, exp_bb.get())
    assert_same_results(mod, after, "main", np.random.rand(2).astype("float32"))


def test_single_remaining_output_is_returned_directly():
    bb = relax.BlockBuilder()
    callee = _callee(bb)
    x = relax.Var("x", T(2))
    _func(bb, "main", [x], lambda b: b.emit(relax.TupleGetItem(
        b.emit(relax.Call(callee, [x])), 1)))
    mod = bb.get()
    after = rt.RemoveUnusedOutputs()(mod)
    assert tvm.ir.structural_equal(after["callee"].ret_struct_info, T(2))
    assert len(after["callee"].body.blocks[0].bindings) == 1
    (binding,) = after["main"].body.blocks[0].bindings
    assert binding.value.op.name_hint == "callee"
    assert_same_results(mod, after, "main", np.random.rand(2).astype("float32"))


def test_public_callee_and_whole_tuple_use_are_kept():
    bb = relax.BlockBuilder()
    callee = _callee(bb, private=False)
    x = relax.Var("x", T(2))
    _func(bb, "main", [x], lambda b: b.emit(relax.TupleGetItem(
        b.emit(relax.Call(callee, [x])), 1)))
    mod = bb.get()
    assert rt.RemoveUnusedOutputs()(mod)["callee"] is mod["callee"]

    bb = relax.BlockBuilder()
    callee = _callee(bb)
    _func(bb, "main", [x], lambda b: b.emit(relax.Call(callee, [x])))
    mod = bb.get()
    assert rt.RemoveUnusedOutputs()(mod)["callee"] is mod["callee"]


def test_attach_global_symbol():
    bb = relax.BlockBuilder()
    x = relax.Var("x", T(2))
    _func(bb, "helper", [x], lambda b: b.emit(R.exp(x)), private=True)
    y = relax.Var("y", T(2))
    _func(bb, "main", [y], lambda b: b.emit(R.exp(y)))
    mod = bb.get()
    prim = tir.PrimFunc([], tir.stmt.Evaluate(tir.IntImm("int32", 0)))
    mod["kernel"] = prim
    after = rt.AttachGlobalSymbol()(mod)
    for name in ("helper", "main", "kernel"):
        assert after[name].attrs["global_symbol"] == name
    assert after["main"] is mod["main"]  # already had its symbol

    mod.attrs["system_lib_prefix"] = "lib_"
    pre = rt.AttachGlobalSymbol()(mod)
    assert sorted(g.name_hint for g in pre.functions) == ["helper", "lib_kernel", "main"]
    assert pre["lib_kernel"].attrs["global_symbol"] == "lib_kernel"


def test_attach_global_symbol_renames_references():
    bb = relax.BlockBuilder()
    mod = bb.get()
    prim = tir.PrimFunc([], tir.stmt.Evaluate(tir.IntImm("int32", 0)))
    mod["kernel"] = prim
    kernel = mod.get_global_var("kernel")
    x = relax.Var("x", T(2))
    bb = relax.BlockBuilder(mod)
    _func(bb, "main", [x], lambda b: b.emit(relax.op.call_tir(kernel, [x], T(2))))
    mod = bb.get()
    mod.attrs["system_lib_prefix"] = "lib_"
    after = rt.AttachGlobalSymbol()(mod)
    (binding,) = after["main"].body.blocks[0].bindings
    assert binding.value.args[0].name_hint == "lib_kernel"
    assert binding.value.args[0] is after.get_global_var("lib_kernel")
    assert_equal(after["lib_kernel"].body, prim.body)

"""The lowering passes of relax.build: transformed IR (structure / printed form) and numerics
(the lowered module built and run against numpy)."""

import re

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, te, tir
from minitvm.ir.structural import structural_equal
from minitvm.relax.op import builtin, memory
from minitvm.relax.transform.rewrite_dataflow_reshape import is_reshape_prim_func


def _add(a, b):
    return te.compute(a.shape, lambda *i: a[i] + b[i], name="T_add")


def _mul2(a):
    return te.compute(a.shape, lambda *i: a[i] * 2.0, name="T_mul")


def _chain(shape, length=4, dataflow=True):
    """main(x, y): length elementwise kernels in a chain."""
    x = relax.Var("x", relax.TensorStructInfo(shape, "float32"))
    y = relax.Var("y", relax.TensorStructInfo(shape, "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, y]):
        with bb.dataflow():
            v = bb.emit_te(_add, x, y)
            for k in range(length - 1):
                v = bb.emit_te(_mul2, v) if k % 2 == 0 else bb.emit_te(_add, v, y)
            gv = bb.emit_output(v)
        bb.emit_func_output(gv)
    mod = bb.get()
    return relax.transform.ToNonDataflow()(mod) if not dataflow else mod


def _chain_ref(x, y, length=4):
    v = x + y
    for k in range(length - 1):
        v = v * 2 if k % 2 == 0 else v + y
    return v


def _run(mod, *args, pipeline=None):
    ex = relax.build(mod, "llvm", pipeline=pipeline)
    return relax.VirtualMachine(ex, tvm.cpu())["main"](*args)


def _count(text: str, what: str) -> int:
    return text.count(what)


def test_call_tir_rewrite_structure_and_numerics():
    mod = _chain((2, 3), 1, dataflow=False)
    after = relax.transform.CallTIRRewrite()(mod)
    gv_add = mod.get_global_var("_add")
    x, y = mod["main"].params
    alloc_call = builtin.alloc_tensor(relax.ShapeExpr([2, 3]), "float32", 0, "global")
    bb = relax.BlockBuilder(mod)
    with bb.function("main", [x, y]):
        alloc = bb.emit(alloc_call, "alloc")
        call = relax.Call(gv_add, [x, y, alloc])
        call._checked_type = relax.TupleStructInfo([])
        bb.emit(call, "_")
        lv = bb.emit(alloc, "lv")
        gv = bb.emit(lv, "gv")
        new_gv = bb.emit_func_output(gv)
    expected = bb.get()[new_gv]
    assert structural_equal(after["main"], expected)
    assert "relax.call_tir" not in after["main"].script()
    assert "R.builtin.alloc_tensor(R.shape([2, 3])" in after["main"].script()
    a, b = np.random.rand(2, 3).astype("float32"), np.random.rand(2, 3).astype("float32")
    np.testing.assert_allclose(_run(after, a, b).numpy(), a + b, rtol=1e-6)
    assert "relax.call_tir" in mod["main"].script() or "R.call_tir" in mod["main"].script()


def test_call_tir_rewrite_tuple_output_and_dps_packed():
    def two(a):
        return [te.compute(a.shape, lambda i: a[i] + 1.0, name="p"),
                te.compute(a.shape, lambda i: a[i] * 3.0, name="q")]

    tvm.register_func("test_relax_vm.negate", lambda a, out: np.negative(a, out=out),
                      override=True)
    x = relax.Var("x", relax.TensorStructInfo([5], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            t = bb.emit_te(two, x)
            p = bb.emit(relax.TupleGetItem(t, 0))
            q = bb.emit(relax.TupleGetItem(t, 1))
            n = bb.emit(relax.op.call_dps_packed(
                "test_relax_vm.negate", (q,), relax.TensorStructInfo([5], "float32")))
            gv = bb.emit_output(relax.Tuple([p, n]))
        bb.emit_func_output(gv)
    mod = bb.get()
    after = relax.transform.CallTIRRewrite()(relax.transform.ToNonDataflow()(mod))
    text = after["main"].script()
    assert _count(text, "R.builtin.alloc_tensor") == 3
    assert re.search(r'R.call_packed\("test_relax_vm.negate", \w+, alloc\d*\)', text)
    a = np.random.rand(5).astype("float32")
    out = _run(mod, a, pipeline="zero")
    np.testing.assert_allclose(out[0].numpy(), a + 1, rtol=1e-6)
    np.testing.assert_allclose(out[1].numpy(), -a * 3, rtol=1e-6)


def test_static_plan_block_memory_reuses_storage_static():
    mod = relax.transform.CallTIRRewrite()(_chain((4, 8), 5, dataflow=False))
    planned = relax.transform.StaticPlanBlockMemory()(mod)
    text = planned["main"].script()
    # 4 intermediates alternate between two storages; the output keeps its own allocation
    assert _count(text, "R.memory.alloc_storage(R.shape([128])") == 2
    assert _count(text, "R.memory.alloc_tensor(") == 4
    assert _count(text, "R.builtin.alloc_tensor(") == 1
    a, b = np.random.rand(4, 8).astype("float32"), np.random.rand(4, 8).astype("float32")
    np.testing.assert_allclose(_run(planned, a, b).numpy(), _chain_ref(a, b, 5), rtol=1e-5)


def test_static_plan_block_memory_symbolic_sizes():
    n = tir.Var("n", "int64")
    mod = relax.transform.CallTIRRewrite()(_chain((n, 4), 5, dataflow=False))
    planned = relax.transform.StaticPlanBlockMemory()(mod)
    text = planned["main"].script()
    assert _count(text, "R.memory.alloc_storage(R.shape([n * 16])") == 2
    ex = relax.build(planned, "llvm", pipeline=None)
    vm = relax.VirtualMachine(ex, tvm.cpu())
    for rows in (1, 7, 64):
        a = np.random.rand(rows, 4).astype("float32")
        b = np.random.rand(rows, 4).astype("float32")
        np.testing.assert_allclose(vm["main"](a, b).numpy(), _chain_ref(a, b, 5), rtol=1e-5)


def test_static_plan_upper_bound_attr():
    n = tir.Var("n", "int64")
    mod = relax.transform.CallTIRRewrite()(_chain((n, 4), 3, dataflow=False))
    gv = mod.get_global_var("main")
    mod[gv] = mod[gv].with_attr("tir_var_upper_bound", {"n": 32})
    text = relax.transform.StaticPlanBlockMemory()(mod)["main"].script()
    assert "R.memory.alloc_storage(R.shape([512])" in text


def test_lower_alloc_tensor_and_kill_after_last_use():
    mod = relax.transform.CallTIRRewrite()(_chain((2, 2), 2, dataflow=False))
    lowered = relax.transform.LowerAllocTensor()(mod)
    text = lowered["main"].script()
    assert "R.builtin.alloc_tensor" not in text
    assert _count(text, 'R.memory.alloc_storage(R.shape([16]), R.prim_value(0), R.str("global"), '
                        'R.dtype("float32"))') == 2
    killed = relax.transform.KillAfterLastUse()(lowered)
    ktext = killed["main"].script()
    assert _count(ktext, "R.memory.kill_storage(") == 2
    # each allocation's register is dropped after its last use; the returned value never
    assert _count(ktext, "R.memory.kill_tensor(") == 2
    assert "kill_tensor(gv)" not in ktext and "kill_tensor(lv1)" not in ktext
    lines = [ln.strip() for ln in ktext.splitlines()]
    bound = next(k for k, ln in enumerate(lines) if ln.startswith("lv:"))
    assert lines.index("R.memory.kill_tensor(alloc)") == bound + 1
    a, b = np.random.rand(2, 2).astype("float32"), np.random.rand(2, 2).astype("float32")
    np.testing.assert_allclose(_run(killed, a, b).numpy(), _chain_ref(a, b, 2), rtol=1e-6)


def test_vm_builtin_lower_forms():
    x = relax.Var("x", relax.TensorStructInfo([2, 3], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        s = bb.emit(memory.alloc_storage(relax.ShapeExpr([24]), 0, "global", "float32"))
        t = bb.emit(memory.alloc_tensor(s, 0, relax.ShapeExpr([2, 3]), "float32"))
        bb.emit(memory.kill_storage(s))
        r = bb.emit(relax.op.reshape(x, [3, 2]))
        sh = bb.emit(relax.op.shape_of(r))
        bb.emit_func_output(relax.Tuple([t, sh]))
    text = relax.transform.VMBuiltinLower()(bb.get())["main"].script()
    assert 'R.vm.alloc_storage(R.shape([24]), R.prim_value(0), R.dtype("float32"), ' \
           'R.str("global"))' in text
    assert "R.vm.alloc_tensor(lv, R.prim_value(0), R.shape([2, 3])" in text
    assert "R.vm.kill_object(lv)" in text
    assert 'R.call_packed("vm.builtin.reshape", x, R.shape([3, 2])' in text
    assert 'R.call_packed("vm.builtin.shape_of", lv3' in text


def test_vm_shape_lower_checks_and_heap():
    n = tir.Var("n", "int64")
    mod = relax.transform.CallTIRRewrite()(_chain((n, 4), 1, dataflow=False))
    mod = relax.transform.LowerAllocTensor()(mod)
    out = relax.transform.VMShapeLower()(mod)
    text = out.script()
    assert 'R.call_builtin_with_ctx("vm.builtin.alloc_shape_heap", (R.prim_value(2),)' in text
    assert 'R.call_packed("vm.builtin.check_tensor_info", x, R.prim_value(2), ' \
           'R.dtype("float32"), R.str("ErrorContext(fn=main, loc=param[0], param=x' in text
    # x stores n to the heap (code 1), y asserts it (code 3)
    assert 'R.call_packed("vm.builtin.match_shape", x, shape_heap, R.prim_value(2), ' \
           'R.prim_value(1), R.prim_value(0), R.prim_value(0), R.prim_value(4)' in text
    assert 'R.call_packed("vm.builtin.match_shape", y, shape_heap, R.prim_value(2), ' \
           'R.prim_value(3), R.prim_value(0), R.prim_value(0), R.prim_value(4)' in text
    assert "def shape_func(H: T.Buffer((T.int64(2),), \"int64\"))" in text
    assert "H[T.int64(1)] = H[T.int64(0)] * T.int64(16)" in text
    assert 'R.call_packed("vm.builtin.make_shape", shape_heap, R.prim_value(2), ' \
           'R.prim_value(1), R.prim_value(0), R.prim_value(0), R.prim_value(4)' in text


def test_vm_shape_lower_undefined_symbolic_var_is_an_error():
    n = tir.Var("n", "int64")
    x = relax.Var("x", relax.TensorStructInfo([n * 2], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        bb.emit_func_output(x)
    with pytest.raises(ValueError, match=r"param=x.*symbolic variable\(s\) n that no parameter"):
        relax.transform.VMShapeLower()(bb.get())


def test_vm_shape_lower_keeps_unchanged_bindings_of_a_100k_chain():
    """A binding whose value needs no heap read is kept as it is (the same object), not rebuilt;
    a 100,000-binding chain is lowered at the default recursion limit, its checks first."""
    import sys

    from minitvm.relax.transform.vm_shape_lower import vm_shape_lower

    limit = sys.getrecursionlimit()
    sinfo = relax.TensorStructInfo((1, 16), "float32")
    x = relax.Var("x", sinfo)
    prev, bindings = x, []
    for i in range(100_000):
        v = relax.Var(f"v{i}", sinfo)
        bindings.append(relax.VarBinding(v, prev))
        prev = v
    func = relax.Function([x], relax.SeqExpr([relax.BindingBlock(bindings)], prev), sinfo)
    mod = tvm.IRModule({"main": func})
    out = vm_shape_lower(func, "main", mod, mod.shallow_copy())
    assert sys.getrecursionlimit() == limit
    (block,) = out.body.blocks
    checks, kept = block.bindings[:-100_000], block.bindings[-100_000:]
    assert all(a is b for a, b in zip(kept, bindings, strict=True))
    # the shape heap, then x's checks (its constant dims asserted)
    assert [getattr(c.value.op, "global_symbol", None) or c.value.op.name for c in checks] == [
        "relax.call_builtin_with_ctx", "vm.builtin.check_tensor_info", "vm.builtin.match_shape"]
    assert out.body.body is prev


def test_rewrite_dataflow_reshape():
    n = tir.Var("n", "int64")
    x = relax.Var("x", relax.TensorStructInfo([n, 4, 6], "float32"))

    def reshape_te(a):
        return te.compute((a.shape[0], 24), lambda i, j: a[i, j // 6, j % 6], name="T_reshape")

    def not_reshape(a):
        return te.compute((a.shape[0], 24), lambda i, j: a[i, j % 4, j // 4], name="T_perm")

    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            r = bb.emit_te(reshape_te, x)
            p = bb.emit_te(not_reshape, x)
            gv = bb.emit_output(relax.Tuple([r, p]))
        bb.emit_func_output(gv)
    mod = bb.get()
    assert is_reshape_prim_func(mod["reshape_te"])
    assert not is_reshape_prim_func(mod["not_reshape"])
    after = relax.transform.RewriteDataflowReshape()(mod)
    text = after["main"].script()
    assert "R.reshape(x, R.shape([n, 24]))" in text
    assert "R.call_tir(not_reshape, (x,)" in text
    a = np.random.rand(3, 4, 6).astype("float32")
    for m in (mod, after):
        out = _run(m, a)
        np.testing.assert_allclose(out[0].numpy(), a.reshape(3, 24))
        np.testing.assert_allclose(out[1].numpy(),
                                   a.transpose(0, 2, 1).reshape(3, 24))


def test_pipelines_listed():
    assert isinstance(relax.get_pipeline("zero"), tvm.transform.Pass)
    assert isinstance(relax.get_pipeline("default_build"), tvm.transform.Pass)
    with pytest.raises(ValueError, match="unknown Relax pipeline 'nope'"):
        relax.get_pipeline("nope")
    for name in ("CallTIRRewrite", "StaticPlanBlockMemory", "LowerAllocTensor",
                 "KillAfterLastUse", "VMBuiltinLower", "VMShapeLower", "RewriteDataflowReshape"):
        assert tvm.transform.get_pass(name).info.name == name

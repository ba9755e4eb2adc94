"""The lowering passes' memo shortcuts (big60) give what the full paths give: allocation struct
info inferred once per shape node (``AllocSinfo``), variables and kill / kernel calls made
without the constructors' checks (``typed_var`` / ``typed_call``), the Namer's names in one
walk (``binding_names``), VMShapeLower's plain-argument and result struct-info checks,
KillAfterLastUse's flat-call reads. Each pass is run with the shortcut and with the full path
patched in, on static, symbolic and branching programs: the printed IR is the same."""

import sys

import numpy as np
import pytest
from relax_pass_util import add_chain, te_add

import minitvm as tvm
from minitvm import relax, tir
from minitvm.ir.op import Op
from minitvm.relax import transform as rt
from minitvm.relax.expr import Call, Var
from minitvm.relax.transform import call_tir_rewrite as ctr
from minitvm.relax.transform import kill_after_last_use as kalu
from minitvm.relax.transform import lower_utils as lu
from minitvm.relax.transform import static_plan_block_memory as spbm
from minitvm.relax.transform import vm_shape_lower as vsl
from minitvm.relax.transform.utils import iter_bindings


def _branching():
    """main(x, flag): y = x + x; r = if flag: {z = y + x; z} else: {y}; r + y."""
    n = tir.Var("n", "int64")
    x = relax.Var("x", relax.TensorStructInfo([n], "float32"))
    flag = relax.Var("flag", relax.TensorStructInfo([], "bool"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, flag]):
        y = bb.emit_te(te_add, x, x)
        first = bb.lookup_binding(y)
        c = bb.normalize(relax.op.call_tir(first.args[0], (y, x), first.sinfo_args[0]))
        z = relax.Var("z", c.struct_info)
        then = relax.SeqExpr([relax.BindingBlock([relax.VarBinding(z, c)])], z)
        r = bb.emit(relax.If(flag, bb.normalize(then), bb.normalize(relax.SeqExpr([], y))))
        bb.emit_func_output(bb.emit_te(te_add, r, y))
    return bb.get()


def _programs():
    return [add_chain(5), add_chain(5, tir.Var("n", "int64")), _branching()]


_LOWER = (rt.LegalizeOps(), rt.ToNonDataflow(), rt.CallTIRRewrite(), rt.StaticPlanBlockMemory(),
          rt.LowerAllocTensor(), rt.KillAfterLastUse(), rt.VMBuiltinLower(), rt.VMShapeLower())


def _text(mod) -> str:
    with tvm.transform.PassContext():
        return tvm.transform.Sequential(list(_LOWER))(mod).script()


def _full_alloc_call(self, op, args, shape, dtype):
    return lu.normalized(Call(op, list(args)), self.mod)


def _full_typed_call(op, args, sinfo, span=None):
    c = relax.BlockBuilder().normalize(Call(op, list(args), span=span))
    assert tvm.ir.structural_equal(c.struct_info, sinfo)
    return c


def _full_binding_names(expr):
    return [b.var.name_hint for b in iter_bindings(expr)]


@pytest.mark.parametrize("k", range(3))
def test_lowering_prints_as_with_every_shortcut_on_the_full_path(k, monkeypatch):
    fast = _text(_programs()[k])
    monkeypatch.setattr(lu.AllocSinfo, "call", _full_alloc_call)
    for mod in (lu, ctr, kalu):
        if hasattr(mod, "typed_var"):
            monkeypatch.setattr(mod, "typed_var", lambda name, sinfo: Var(name, sinfo))
        if hasattr(mod, "typed_call"):
            monkeypatch.setattr(mod, "typed_call", _full_typed_call)
    monkeypatch.setattr(lu, "binding_names", _full_binding_names)
    monkeypatch.setattr(vsl._Lowerer, "plain_args", staticmethod(lambda args, static: False))
    monkeypatch.setattr(vsl._Lowerer, "names_no_variable", lambda self, sinfo: False)
    assert _text(_programs()[k]) == fast


def test_alloc_sinfo_infers_once_per_shape_node_and_dtype():
    op = Op.get("relax.builtin.alloc_tensor")
    leaves = lu.Leaves()
    shape = relax.ShapeExpr([2, 3])
    memo = lu.AllocSinfo()

    def args(s, dtype="float32"):
        return (s, leaves.dtype(dtype), leaves.prim(0), leaves.string("global"))

    a, b = memo.call(op, args(shape), shape, "float32"), memo.call(op, args(shape), shape,
                                                                    "float32")
    full = lu.normalized(Call(op, list(args(shape))))
    for c in (a, b):
        assert tvm.ir.structural_equal(c, full) and c.args == full.args
        assert tvm.ir.structural_equal(c.struct_info, full.struct_info)
    assert b.struct_info is a.struct_info  # (inferred once)
    other = relax.ShapeExpr([2, 3])  # another node: inferred again, its own shape
    c = memo.call(op, args(other), other, "float32")
    assert c.struct_info.shape is other
    d = memo.call(op, args(shape, "int8"), shape, "int8")
    assert d.struct_info.dtype == "int8" and a.struct_info.dtype == "float32"


def test_typed_var_and_call_are_what_the_constructors_make():
    s = relax.TensorStructInfo([4], "float32")
    v, w = lu.typed_var("a", s), Var("a", s)
    assert (v.name_hint, v.struct_info, v.span, v.virtual_device_) == \
        (w.name_hint, w.struct_info, w.span, w.virtual_device_)
    op = Op.get("relax.memory.kill_tensor")
    sinfo = relax.TupleStructInfo([])
    c, full = lu.typed_call(op, (v,), sinfo), relax.BlockBuilder().normalize(Call(op, [v]))
    assert tvm.ir.structural_equal(c, full) and c.attrs is full.attrs is None
    assert c.sinfo_args == full.sinfo_args and tvm.ir.structural_equal(c.struct_info,
                                                                       full.struct_info)


def test_binding_names_are_every_bound_name_deep_programs_included():
    for mod in _programs():
        f = mod["main"]
        assert sorted(lu.binding_names(f.body)) == sorted(_full_binding_names(f.body))
    limit = sys.getrecursionlimit()
    big = add_chain(100_000 // 20)  # (a long chain: the walk is a loop, no recursion)
    assert len(lu.binding_names(big["main"].body)) == 100_000 // 20 + 1
    assert sys.getrecursionlimit() == limit


def _kill_sites_full(func) -> list:
    """(binding index, killed name) of every kill, found with vars_used on every value."""
    bindings = [b for bl in func.body.blocks for b in bl.bindings]
    killable, last = {}, {}
    for i, b in enumerate(bindings):
        for u in lu.vars_used(b.value):
            if u in killable:
                last[u] = i
        if isinstance(b.value, Call) and getattr(b.value.op, "name", None) in (
                "relax.memory.alloc_storage", "relax.memory.alloc_tensor"):
            killable[b.var] = True
            last.setdefault(b.var, i)
    for u in lu.vars_used(func.body.body):
        last.pop(u, None)
    return sorted((i, v.name_hint) for v, i in last.items())


def test_kills_follow_the_last_reads_a_full_walk_finds():
    for mod in _programs()[:2]:
        with tvm.transform.PassContext():
            before = tvm.transform.Sequential(list(_LOWER[:5]))(mod)
            after = rt.KillAfterLastUse()(before)
        expect = _kill_sites_full(before["main"])
        got, i = [], -1
        for b in after["main"].body.blocks[0].bindings:
            v = b.value
            if isinstance(v, Call) and getattr(v.op, "name", "").startswith("relax.memory.kill"):
                got.append((i, v.args[0].name_hint))
            else:
                i += 1
        assert sorted(got) == expect and expect


def test_spbm_sizes_and_kernel_answers_once_and_numbers_unchanged():
    mod = add_chain(6)
    with tvm.transform.PassContext():
        low = tvm.transform.Sequential(list(_LOWER[:4]))(mod)
    tensors = [b.value for b in low["main"].body.blocks[0].bindings
               if isinstance(b.value, Call) and
               getattr(b.value.op, "name", "") == "relax.memory.alloc_tensor"]
    assert len(tensors) >= 4
    by_shape = {}  # one struct info per shape node (emit_te makes a node per call)
    for t in tensors:
        assert by_shape.setdefault(id(t.args[2]), t.struct_info) is t.struct_info
        assert t.struct_info.shape is t.args[2]
    assert spbm.plan_memory(low["main"], low)[1] == 0  # (already planned: nothing left)
    ex = relax.build(add_chain(6), "llvm")
    a = np.arange(4, dtype="float32")
    np.testing.assert_allclose(relax.VirtualMachine(ex, tvm.cpu())["main"](a).numpy(), a * 7)

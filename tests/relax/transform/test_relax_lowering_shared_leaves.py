"""The lowering passes' per-binding shortcuts (bigbuild4): CallTIRRewrite and
StaticPlanBlockMemory share their allocations' constant leaves (``lower_utils.Leaves``),
KillAfterLastUse types its kills from the op's own rule, VMShapeLower keeps unchanged bindings
of static shapes. The printed IR is what the passes printed before, and the program still
computes the same numbers."""

import numpy as np
from relax_pass_util import add_chain

import minitvm as tvm
from minitvm import relax, tir
from minitvm.relax import transform as rt
from minitvm.relax.expr import Call, DataTypeImm, PrimValue, StringImm
from minitvm.relax.transform.lower_utils import Leaves


def _lowered(mod, *passes):
    seq = [rt.LegalizeOps(), rt.ToNonDataflow(), rt.CallTIRRewrite(), *passes]
    with tvm.transform.PassContext():
        return tvm.transform.Sequential(seq)(mod)


def _calls(mod, name):
    out = []
    for b in mod["main"].body.blocks[0].bindings:
        v = b.value
        if isinstance(v, Call) and getattr(v.op, "name", None) == name:
            out.append(v)
    return out


def test_leaves_are_made_once_per_value():
    leaves = Leaves()
    assert leaves.prim(0) is leaves.prim(0) and leaves.prim(0) is not leaves.prim(1)
    assert isinstance(leaves.prim(0), PrimValue) and leaves.prim(0).value.value == 0
    assert leaves.dtype("float32") is leaves.dtype("float32")
    assert isinstance(leaves.dtype("int8"), DataTypeImm) and leaves.dtype("int8").value == "int8"
    assert isinstance(leaves.string("global"), StringImm)
    assert leaves.string("global") is leaves.string("global")


def test_call_tir_rewrite_allocations_share_their_constant_leaves():
    mod = _lowered(add_chain(3))
    allocs = _calls(mod, "relax.builtin.alloc_tensor")
    assert len(allocs) == 3
    for k in (1, 2, 3):
        assert all(a.args[k] is allocs[0].args[k] for a in allocs)
    text = mod.script()
    assert text.count('R.builtin.alloc_tensor(R.shape([4]), R.dtype("float32"), R.prim_value(0), '
                      'R.str("global"))') == 3


def test_planned_allocations_share_their_constant_leaves_and_kills_are_typed():
    planned = _lowered(add_chain(4), rt.StaticPlanBlockMemory())
    tensors = _calls(planned, "relax.memory.alloc_tensor")
    assert len(tensors) == 3  # (the returned tensor keeps its own allocation)
    assert all(t.args[1] is tensors[0].args[1] and t.args[3] is tensors[0].args[3]
               for t in tensors)
    assert planned.script().count('R.prim_value(0), R.shape([4]), R.dtype("float32"))') == 3
    mod = _lowered(add_chain(4), rt.StaticPlanBlockMemory(), rt.LowerAllocTensor(),
                   rt.KillAfterLastUse())
    kills = _calls(mod, "relax.memory.kill_tensor") + _calls(mod, "relax.memory.kill_storage")
    assert kills and all(isinstance(k.struct_info, relax.TupleStructInfo) and
                         not k.struct_info.fields for k in kills)
    assert "R.memory.kill_tensor(" in mod.script()


def test_static_and_symbolic_chains_build_and_run():
    for dim in (4, tir.Var("n", "int64")):
        mod = add_chain(5, dim)
        ex = relax.build(mod, "llvm")
        vm = relax.VirtualMachine(ex, tvm.cpu())
        a = np.arange(4, dtype="float32")
        np.testing.assert_allclose(vm["main"](a).numpy(), a * 6)

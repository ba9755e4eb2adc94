"""Per-binding shortcuts of Relax passes every build runs on each binding (big59): the
normal-form check reads a call of leaves by its nodes' types, FoldConstant's "nothing to fold"
scan tests operand types first, dead-code elimination takes a call of leaves' own purity,
ToNonDataflow copies renamed calls and tuples with their struct info (``with_operands`` /
``with_fields``), VMBuiltinLower shares the struct info of its allocations and kills. Each
gives what the full path gives on small programs."""

import inspect
import re

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, te
from minitvm.ir.op import Op
from minitvm.relax import op as R
from minitvm.relax import transform as rt
from minitvm.relax.expr import (
    Call,
    Constant,
    DataflowVar,
    ExternFunc,
    GlobalVar,
    PrimValue,
    ShapeExpr,
    Tuple,
    TupleGetItem,
    VarBinding,
)
from minitvm.relax.op import debug
from minitvm.relax.transform import dead_code_elimination as dce
from minitvm.relax.transform import fold_constant as fc
from minitvm.relax.transform import normalize as nz
from minitvm.relax.transform import vm_builtin_lower as vbl
from minitvm.relax.transform.lower_utils import normalized, rewrite_function_seqs
from minitvm.relax.transform.utils import contains_impure_call


def T(*shape):
    return relax.TensorStructInfo(list(shape), "float32")


def _add(a, b):
    return te.compute(a.shape, lambda i: a[i] + b[i], name="add")


def _chain(length: int = 4):
    x = relax.Var("x", T(4))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            v = bb.emit_te(_add, x, x)
            for _ in range(length - 1):
                v = bb.emit_te(_add, v, x)
            gv = bb.emit_output(v)
        bb.emit_func_output(gv)
    return bb.get()


def _ops_program():
    x = relax.Var("x", T(2, 3))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            a = bb.emit(R.add(x, x))
            b = bb.emit(R.reshape(a, (3, 2)))
            c = bb.emit(R.add(relax.const(np.ones((2, 3), "float32")), x))
            t = bb.emit(Tuple([a, c]))
            d = bb.emit(TupleGetItem(t, 1))
            bb.emit(R.exp(x))  # unused
            gv = bb.emit_output(Tuple([b, d]))
        bb.emit_func_output(gv)
    return bb.get()


def _lower(mod, *passes):
    with tvm.transform.PassContext():
        return tvm.transform.Sequential(list(passes))(mod)


_TO_VM = (rt.LegalizeOps(), rt.ToNonDataflow(), rt.CallTIRRewrite(), rt.StaticPlanBlockMemory(),
          rt.LowerAllocTensor(), rt.KillAfterLastUse())


def _programs():
    return [_chain(), _ops_program(), _lower(_chain(), *_TO_VM),
            _lower(_ops_program(), *_TO_VM)]


# ------------------------------------------------------------------- is_normalized
def _fn(blocks, body):
    f = relax.Function([], relax.SeqExpr(blocks, body), T(2, 3))
    f._checked_type = relax.FuncStructInfo([], T(2, 3))
    f.body._checked_type = T(2, 3)
    return f


def test_leaf_calls_are_normal_exactly_where_the_full_check_says_so(monkeypatch):
    x, y = relax.Var("x", T(2, 3)), relax.Var("y", T(2, 3))
    add = Op.get("relax.add")
    typed = Call(add, [x, y])
    typed._checked_type = T(2, 3)
    args = Tuple([x, y])
    args._checked_type = None  # (a tuple the normalizer has not typed)
    untyped_tuple = Call(Op.get("relax.call_tir"), [GlobalVar("f"), args])
    untyped_tuple._checked_type = T(2, 3)
    nested = Call(add, [typed, y])
    nested._checked_type = T(2, 3)
    bare = Call(add, [x, y])
    values = [typed, untyped_tuple, nested, bare]
    for v in values:
        lv = relax.Var("lv", T(2, 3))
        f = _fn([relax.BindingBlock([VarBinding(lv, v)])], lv)
        fast = nz.is_normalized(f)
        with monkeypatch.context() as m:
            m.setattr(nz, "_leaf_call", lambda v: False)
            full = nz.is_normalized(f)
        assert fast == full
        if nz._leaf_call(v):
            assert nz._value_normal(v) is None
    assert nz._leaf_call(typed) and not nz._leaf_call(untyped_tuple) and \
        not nz._leaf_call(nested) and not nz._leaf_call(bare)
    for mod in _programs():
        fast = nz.is_normalized(mod["main"])
        with monkeypatch.context() as m:
            m.setattr(nz, "_leaf_call", lambda v: False)
            assert nz.is_normalized(mod["main"]) == fast is None


# ------------------------------------------------------------------- FoldConstant
def _nothing_to_fold_full(func) -> bool:
    """``fold_constant._nothing_to_fold`` as it read before its type-first operand loop."""
    body = func.body
    if not isinstance(body, relax.SeqExpr) or not isinstance(body.body, fc._LEAVES):
        return False
    for block in body.blocks:
        for b in block.bindings:
            v = b.value
            if isinstance(v, Call):
                if not isinstance(v.op, Op | GlobalVar | ExternFunc | relax.Var):
                    return False
                if isinstance(v.op, Op) and v.args and all(
                        isinstance(a, Constant | ShapeExpr | PrimValue) for a in v.args):
                    return False
                if not all(fc._plain_operand(a) for a in v.args):
                    return False
            elif isinstance(v, TupleGetItem):
                if not isinstance(v.tuple_value, relax.Var):
                    return False
            elif not fc._plain_operand(v):
                return False
    return True


def test_nothing_to_fold_answers_as_the_full_scan_and_the_folder_agrees():
    x = relax.Var("x", T(2, 3))
    prim = PrimValue(1)
    shape_of = Op.get("relax.shape_of")
    values = [Call(shape_of, [prim]), Call(shape_of, [prim, x]), Call(shape_of, []),
              Call(shape_of, [ShapeExpr([2, 3])]), Call(shape_of, [Tuple([x, prim])]),
              Call(shape_of, [Tuple([x, Constant(np.ones(2, "float32"))])]),
              Call(GlobalVar("g"), [prim]), Call(x, [x]),
              Call(shape_of, [relax.const(np.ones(2, "float32"))])]
    for v in values:
        lv = DataflowVar("lv")
        f = relax.Function([x], relax.SeqExpr([relax.DataflowBlock([VarBinding(lv, v)])], lv))
        assert fc._nothing_to_fold(f) == _nothing_to_fold_full(f), v
    answers = [fc._nothing_to_fold(f) for f in (m["main"] for m in _programs())]
    assert answers == [_nothing_to_fold_full(m["main"]) for m in _programs()]
    assert answers[0] and not answers[1]
    for mod in _programs():
        func = mod["main"]
        if fc._nothing_to_fold(func):
            folder = fc._ConstantFolder(mod)
            assert tvm.ir.structural_equal(folder.visit_expr(func), func)
            assert folder.folded == 0


# ------------------------------------------------------------------- dead code
def _unused_full(func) -> set:
    ud = dce._UseDef()
    ud.run(func)
    live = set(ud.outputs) | {v for v, value in ud.bound.items() if contains_impure_call(value)}
    todo = list(live)
    while todo:
        for u in ud.uses.get(todo.pop(), ()):
            if u not in live:
                live.add(u)
                todo.append(u)
    return {v for v in ud.bound if v not in live}


def test_unused_bindings_as_with_every_value_walked_for_impure_calls():
    x = relax.Var("x", T(2, 3))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        a = bb.emit(R.add(x, x))
        bb.emit(debug.print(a, format="a"))  # impure: kept
        bb.emit(R.exp(a))  # pure, unused
        bb.emit_func_output(x)
    effects = bb.get()
    seen_flat = 0
    for mod in [*_programs(), effects]:
        func = mod["main"]
        ud = dce._UseDef()
        ud.run(func)
        seen_flat += len(ud.flat)
        assert dce._unused_vars(func) == _unused_full(func)
    assert seen_flat  # (the shortcut was taken)
    assert len(dce._unused_vars(effects["main"])) == 1


# ------------------------------------------------------------------- ToNonDataflow
def test_with_operands_and_with_fields_copy_as_the_constructors_do():
    x, y = relax.Var("x", T(2, 3)), relax.Var("y", T(2, 3))
    z = relax.Var("z", T(2, 3))
    bb = relax.BlockBuilder()
    tup = bb.normalize(Tuple([x, y]))
    call = bb.normalize(Call(Op.get("relax.add"), [x, y], None, [T(2, 3)], span=None))
    assert call.with_operands(call.op, (x, y)) is call
    assert tup.with_fields((x, y)) is tup
    new_call = call.with_operands(call.op, (z, y))
    want = Call(call.op, [z, y], call.attrs, call.sinfo_args, call.span)
    want._checked_type = call._checked_type
    assert tvm.ir.structural_equal(new_call, want)
    assert new_call._checked_type is call._checked_type and new_call.args == (z, y)
    assert new_call.sinfo_args == call.sinfo_args and new_call.virtual_device_ is not None
    new_tup = tup.with_fields((y, z))
    assert new_tup.fields == (y, z) and new_tup._checked_type is tup._checked_type
    assert tvm.ir.structural_equal(new_tup, bb.normalize(Tuple([y, z])))


def test_to_non_dataflow_prints_and_runs_as_before():
    mod = _chain(3)
    out = rt.ToNonDataflow()(mod)
    text = out.script()
    assert "R.dataflow" not in text and text.count("R.call_tir(") == 3
    calls = 0
    for b in out["main"].body.blocks[0].bindings:
        assert type(b.var) is relax.Var
        if isinstance(b.value, Call):
            calls += 1
            assert all(type(f) is relax.Var for f in b.value.args[1].fields)
            assert tvm.ir.structural_equal(b.value.args[1].struct_info,
                                           relax.TupleStructInfo([T(4), T(4)]))
    assert calls == 3
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    a = np.arange(4, dtype="float32")
    np.testing.assert_allclose(vm["main"](a).numpy(), a * 4)


# ------------------------------------------------------------------- VMBuiltinLower
def _vm_builtin_lower_full(func, mod):
    """VMBuiltinLower with the normalizer typing every lowered call (its path before big59)."""
    def rewrite(bindings, body, _top):
        out = []
        for b in bindings:
            v = b.value
            new = vbl._lower_call(v, mod) if isinstance(b, VarBinding) and \
                isinstance(v, Call) else None
            out.append(b if new is None else VarBinding(b.var, normalized(new, mod), b.span))
        return out, body

    return rewrite_function_seqs(func, rewrite)


@pytest.mark.parametrize("make", [_chain, _ops_program])
def test_vm_builtin_lower_equals_the_normalizing_path(make, monkeypatch):
    mod = _lower(make(), *_TO_VM)
    fast, count = vbl.vm_builtin_lower(mod["main"], mod)
    assert count
    full = _vm_builtin_lower_full(mod["main"], mod)
    assert tvm.ir.structural_equal(fast, full)
    a = tvm.IRModule({GlobalVar("main"): fast})
    b = tvm.IRModule({GlobalVar("main"): full})
    assert a.script() == b.script()
    for b1, b2 in zip(fast.body.blocks[0].bindings, full.body.blocks[0].bindings, strict=True):
        assert tvm.ir.structural_equal(b1.value.struct_info, b2.value.struct_info)
    # every operator lowered goes through the one set lookup
    with monkeypatch.context() as m:
        m.setattr(vbl, "_LOWERED", _AllNames())
        again, n = vbl.vm_builtin_lower(mod["main"], mod)
    assert n == count and tvm.ir.structural_equal(again, fast)


class _AllNames:
    def __contains__(self, name):
        return True


def test_lowered_set_names_every_operator_the_rewrite_compares():
    names = set(re.findall(r'"(relax\.[a-z_.]+)"', inspect.getsource(vbl._lower_call)))
    assert names == set(vbl._LOWERED)

"""InferType / InferTypeLocal: every expression kind, errors with context, deep programs."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.ir.diagnostics import RelayTypeError, format_type
from minitvm.ir.type import FuncType, RelayRefType, TensorType, TupleType, TypeCall, TypeVar
from minitvm.relay.adt import (
    Clause,
    Constructor,
    Match,
    PatternConstructor,
    PatternVar,
    PatternWildcard,
    TypeData,
)
from minitvm.relay.expr import (
    Call,
    Function,
    If,
    Let,
    RefCreate,
    RefRead,
    RefWrite,
    Tuple,
    TupleGetItem,
    Var,
)
from minitvm.tir.expr import Any, SizeVar


def T(shape, dtype="float32"):
    return TensorType(shape, dtype)


def infer(expr_or_mod):
    mod = expr_or_mod
    if not isinstance(mod, tvm.IRModule):
        mod = tvm.IRModule()
        mod["main"] = expr_or_mod
    return relay.transform.InferType()(mod)


def test_pass_info():
    p = relay.transform.InferType()
    assert p.info.name == "InferType"
    assert p.info.opt_level == 0


def test_op_call_and_checked_type_on_every_node():
    x = relay.var("x", shape=(2, 3))
    y = relay.var("y", shape=(3,))
    c = relay.const(np.ones((1, 3), "float32"))
    e = relay.exp(x)
    s = relay.add(e, y)
    out = relay.multiply(s, c)
    f = Function([x, y], out)
    mod = infer(f)
    assert mod["main"].body is out  # the body's nodes are typed in place
    f = mod["main"]
    for node in (x, y, e, s, out):
        assert node.checked_type == T((2, 3)) or node is y
    assert y.checked_type == T((3,))
    assert c.checked_type == T((1, 3))
    assert f.checked_type == FuncType([T((2, 3)), T((3,))], T((2, 3)))
    gv = mod.get_global_var("main")
    assert gv.checked_type == f.checked_type


def test_input_module_not_replaced():
    x = relay.var("x", shape=(4,))
    mod = tvm.IRModule.from_expr(Function([x], relay.exp(x)))
    before = dict(mod.functions)
    out = relay.transform.InferType()(mod)
    assert out is not mod
    assert mod.functions == before


def test_tuple_and_tuple_getitem():
    x = relay.var("x", shape=(2,))
    y = relay.var("y", shape=(3,), dtype="int32")
    t = Tuple([x, y])
    g = TupleGetItem(t, 1)
    f = Function([x, y], Tuple([g, TupleGetItem(t, 0)]))
    infer(f)
    assert t.checked_type == TupleType([T((2,)), T((3,), "int32")])
    assert g.checked_type == T((3,), "int32")
    assert f.body.checked_type == TupleType([T((3,), "int32"), T((2,))])


def test_tuple_getitem_out_of_range():
    x = relay.var("x", shape=(2,))
    f = Function([x], TupleGetItem(Tuple([x]), 3))
    with pytest.raises(TypeError, match=r"tuple index 3 is out of range for \(Tensor\[\(2,\), "):
        infer(f)


def test_let_infers_unannotated_var():
    x = relay.var("x", shape=(5,))
    v = Var("v")
    body = Let(v, relay.exp(x), relay.add(v, v))
    f = Function([x], body)
    infer(f)
    assert v.checked_type == T((5,))
    assert body.checked_type == T((5,))


def test_let_annotation_mismatch():
    x = relay.var("x", shape=(5,))
    v = relay.var("v", shape=(6,))
    f = Function([x], Let(v, x, v))
    with pytest.raises(TypeError, match=r"value bound to %v does not match its type.*dimension 0"):
        infer(f)


def test_if_branches_unify():
    c = relay.var("c", shape=(), dtype="bool")
    x = relay.var("x", shape=(2, 2))
    ite = If(c, x, relay.exp(x))
    f = Function([c, x], ite)
    infer(f)
    assert ite.checked_type == T((2, 2))


def test_if_condition_must_be_bool_scalar():
    c = relay.var("c", shape=(2,), dtype="bool")
    x = relay.var("x", shape=(2, 2))
    f = Function([c, x], If(c, x, x))
    with pytest.raises(TypeError, match=r"condition of an if must be a bool scalar"):
        infer(f)


def test_if_branch_mismatch():
    c = relay.var("c", shape=(), dtype="bool")
    x = relay.var("x", shape=(2, 2))
    y = relay.var("y", shape=(2, 2), dtype="int32")
    f = Function([c, x, y], If(c, x, y))
    with pytest.raises(TypeError, match=r"branches of the if have different types.*"
                                        r"dtype float32 vs int32"):
        infer(f)


def test_broadcast_failure_names_op_and_types():
    x = relay.var("x", shape=(2, 3))
    y = relay.var("y", shape=(4,))
    f = Function([x, y], relay.add(x, y))
    with pytest.raises(TypeError, match=r"add.*incompatible broadcast shapes.*argument types: "
                                        r"Tensor\[\(2, 3\), float32\], Tensor\[\(4,\), float32\]"):
        infer(f)


def test_error_is_diagnostic_with_expression():
    x = relay.var("x", shape=(2, 3))
    y = relay.var("y", shape=(4,))
    bad = relay.add(x, y)
    f = Function([x, y], relay.exp(bad))
    with pytest.raises(RelayTypeError) as info:
        infer(f)
    assert info.value.expr is bad
    assert info.value.root is f
    assert "add(%x, %y)" in str(info.value)
    assert bad._checked_type is None and x._checked_type is None  # nothing written on failure


def test_op_wrong_arity():
    x = relay.var("x", shape=(2,))
    call = Call(tvm.ir.Op.get("add"), [x])
    with pytest.raises(TypeError, match=r"add expects 2 argument\(s\)|add.*argument"):
        infer(Function([x], call))


def test_function_call_wrong_arity():
    x = relay.var("x", shape=(2,))
    a = relay.var("a", shape=(2,))
    g = Function([a], a)
    with pytest.raises(TypeError, match=r"expects 1 argument\(s\) but is given 2"):
        infer(Function([x], Call(g, [x, x])))


def test_unbound_variable():
    x = relay.var("x", shape=(2,))
    z = relay.var("z", shape=(2,))
    f = Function([x], relay.add(x, z))
    with pytest.raises(TypeError, match=r"unbound variable %z"):
        infer(f)


def test_variable_out_of_scope():
    x = relay.var("x", shape=(2,))
    v = relay.var("v", shape=(2,))
    inner = Let(v, x, v)
    f = Function([x], Tuple([inner, v]))
    with pytest.raises(TypeError, match=r"%v is used outside the scope"):
        infer(f)


def test_cannot_infer_param():
    x = Var("x")
    y = relay.var("y", shape=(2,))
    f = Function([x, y], relay.add(x, y))
    with pytest.raises(TypeError, match=r"cannot infer the type of %x"):
        infer(f)


def test_param_inferred_through_call():
    # fn (%a) { %a } applied to a tensor: %a's type comes from the call.
    a = Var("a")
    ident = Function([a], a)
    x = relay.var("x", shape=(3,))
    f = Function([x], relay.exp(Call(ident, [x])))
    infer(f)
    assert a.checked_type == T((3,))
    assert ident.checked_type == FuncType([T((3,))], T((3,)))


def test_closure_and_higher_order():
    x = relay.var("x", shape=(3,))
    fv = Var("f")
    y = relay.var("y", shape=(3,))
    inc = Function([y], relay.add(y, x))  # captures x
    apply = Function([fv], Call(fv, [x]))
    f = Function([x], Call(apply, [inc]))
    infer(f)
    assert fv.checked_type == FuncType([T((3,))], T((3,)))
    assert f.body.checked_type == T((3,))


def test_polymorphic_identity():
    tv = TypeVar("A")
    a = relay.var("a", tv)
    ident = Function([a], a, tv, [tv])
    mod = tvm.IRModule()
    gid = tvm.ir.GlobalVar("id")
    mod[gid] = ident
    x = relay.var("x", shape=(2,))
    k = relay.var("k", shape=(), dtype="int32")
    c1 = Call(gid, [x])
    c2 = Call(gid, [k])
    c3 = Call(gid, [Tuple([x, k])])
    mod["main"] = Function([x, k], Tuple([c1, c2, c3]))
    mod = relay.transform.InferType()(mod)
    assert ident.checked_type == FuncType([tv], tv, [tv])
    assert gid.checked_type == ident.checked_type
    assert c1.checked_type == T((2,))
    assert c2.checked_type == T((), "int32")
    assert c3.checked_type == TupleType([T((2,)), T((), "int32")])


def test_polymorphic_body_is_rigid():
    tv = TypeVar("A")
    a = relay.var("a", tv)
    f = Function([a], relay.add(a, a), None, [tv])
    with pytest.raises(TypeError, match=r"add: argument 0 must be a tensor"):
        infer(f)


def _sum_to_n(annotated: bool):
    mod = tvm.IRModule()
    gv = tvm.ir.GlobalVar("sum_to")
    n = relay.var("n", shape=(), dtype="int32") if annotated else Var("n")
    zero = relay.const(0, "int32")
    one = relay.const(1, "int32")
    body = If(relay.equal(n, zero), zero, relay.add(n, Call(gv, [relay.subtract(n, one)])))
    ret = T((), "int32") if annotated else None
    mod[gv] = Function([n], body, ret)
    m = relay.var("m", shape=(), dtype="int32")
    mod["main"] = Function([m], Call(gv, [m]))
    return mod, gv


def test_recursion_annotated():
    mod, gv = _sum_to_n(annotated=True)
    out = relay.transform.InferType()(mod)
    assert gv.checked_type == FuncType([T((), "int32")], T((), "int32"))
    assert out["main"].body.checked_type == T((), "int32")


def test_mutual_recursion_without_return_annotations():
    mod = tvm.IRModule()
    even, odd = tvm.ir.GlobalVar("even"), tvm.ir.GlobalVar("odd")
    zero, one = relay.const(0, "int32"), relay.const(1, "int32")
    n1 = relay.var("n", shape=(), dtype="int32")
    n2 = relay.var("n", shape=(), dtype="int32")
    mod[even] = Function([n1], If(relay.equal(n1, zero), relay.const(True),
                                  Call(odd, [relay.subtract(n1, one)])))
    mod[odd] = Function([n2], If(relay.equal(n2, zero), relay.const(False),
                                 Call(even, [relay.subtract(n2, one)])))
    relay.transform.InferType()(mod)
    assert even.checked_type == FuncType([T((), "int32")], T((), "bool"))
    assert odd.checked_type == even.checked_type


def test_undefined_global():
    gv = tvm.ir.GlobalVar("nowhere")
    x = relay.var("x", shape=(2,))
    with pytest.raises(TypeError, match=r"@nowhere is not defined in the module"):
        infer(Function([x], Call(gv, [x])))


def _list_module():
    mod = tvm.IRModule()
    lst = tvm.ir.GlobalTypeVar("List")
    a = TypeVar("A")
    cons = Constructor("Cons", [a, TypeCall(lst, [a])], lst)
    nil = Constructor("Nil", [], lst)
    mod[lst] = TypeData(lst, [a], [cons, nil])
    return mod, lst, cons, nil


def test_adt_constructors_and_length_by_recursion():
    mod, lst, cons, nil = _list_module()
    length = tvm.ir.GlobalVar("length")
    b = TypeVar("B")
    xs = relay.var("xs", TypeCall(lst, [b]))
    tail = Var("tail")
    m = Match(xs, [
        Clause(PatternConstructor(cons, [PatternWildcard(), PatternVar(tail)]),
               relay.add(relay.const(1, "int32"), Call(length, [tail]))),
        Clause(PatternConstructor(nil, []), relay.const(0, "int32")),
    ])
    mod[length] = Function([xs], m, T((), "int32"), [b])
    x = relay.var("x", shape=(2,))
    built = Call(cons, [x, Call(cons, [x, Call(nil, [])])])
    call = Call(length, [built])
    mod["main"] = Function([x], call)
    relay.transform.InferType()(mod)
    assert tail.checked_type == TypeCall(lst, [b])
    assert m.checked_type == T((), "int32")
    assert built.checked_type == TypeCall(lst, [T((2,))])
    assert call.checked_type == T((), "int32")
    td = mod[lst]
    assert cons.checked_type == FuncType(cons.inputs, TypeCall(lst, td.type_vars), td.type_vars)


def test_adt_constructor_argument_mismatch():
    mod, lst, cons, nil = _list_module()
    x = relay.var("x", shape=(2,))
    k = relay.var("k", shape=(), dtype="int32")
    mod["main"] = Function([x, k], Call(cons, [x, Call(cons, [k, Call(nil, [])])]))
    with pytest.raises(TypeError, match=r"argument 1 of Cons.*type argument 0"):
        relay.transform.InferType()(mod)


def test_match_binds_field_types():
    mod, lst, cons, nil = _list_module()
    xs = relay.var("xs", TypeCall(lst, [T((3,))]))
    hd = Var("hd")
    m = Match(xs, [Clause(PatternConstructor(cons, [PatternVar(hd), PatternWildcard()]),
                          relay.exp(hd)),
                   Clause(PatternWildcard(), relay.zeros((3,), "float32"))])
    mod["main"] = Function([xs], m)
    relay.transform.InferType()(mod)
    assert hd.checked_type == T((3,))
    assert m.checked_type == T((3,))


def test_references():
    x = relay.var("x", shape=(2,))
    r = Var("r")
    create = RefCreate(x)
    read = RefRead(r)
    write = RefWrite(r, relay.exp(read))
    body = Let(r, create, Let(Var("_"), write, RefRead(r)))
    f = Function([x], body)
    infer(f)
    assert create.checked_type == RelayRefType(T((2,)))
    assert r.checked_type == RelayRefType(T((2,)))
    assert read.checked_type == T((2,))
    assert write.checked_type == TupleType([])
    assert body.checked_type == T((2,))


def test_ref_write_mismatch():
    x = relay.var("x", shape=(2,))
    y = relay.var("y", shape=(3,))
    f = Function([x, y], RefWrite(RefCreate(x), y))
    with pytest.raises(TypeError, match=r"writing a reference"):
        infer(f)


def test_any_and_symbolic_dims_flow_through_relations():
    n = SizeVar("n")
    x = relay.var("x", shape=(n, 4))
    y = relay.var("y", shape=(Any(), 4))
    a = relay.exp(x)
    b = relay.add(y, relay.const(np.ones((1, 4), "float32")))
    f = Function([x, y], Tuple([a, b]))
    infer(f)
    assert a.checked_type.shape[0] is n
    assert isinstance(b.checked_type.shape[0], Any)


def test_relation_exception_is_wrapped():
    op = tvm.ir.op.register_op("test.buggy_rel")
    op.num_inputs = 1
    op.set_attr("FTypeRelation", lambda types, attrs: types[5].shape)
    x = relay.var("x", shape=(2,))
    with pytest.raises(TypeError, match=r"test\.buggy_rel: list index out of range"):
        infer(Function([x], Call(op, [x])))


def test_infer_type_local_reuses_existing_types():
    x = relay.var("x", shape=(2, 2))
    inner = relay.exp(x)
    assert relay.transform.InferTypeLocal(inner) == T((2, 2))
    outer = relay.add(inner, inner)
    assert relay.transform.InferTypeLocal(outer) == T((2, 2))
    assert outer.checked_type == T((2, 2))


def test_rerun_is_incremental():
    x = relay.var("x", shape=(2,))
    f = Function([x], relay.exp(x))
    mod = infer(f)
    f = mod["main"]
    f.body._checked_type = T((99,))  # a stale marker: a re-run must not walk f again
    mod2 = relay.transform.InferType()(mod)
    assert mod2["main"] is f
    assert f.body._checked_type == T((99,))


def test_rerun_rechecks_callers_of_changed_callee():
    mod = tvm.IRModule()
    g = tvm.ir.GlobalVar("g")
    a = relay.var("a", shape=(2,))
    mod[g] = Function([a], relay.exp(a))
    x = relay.var("x", shape=(2,))
    call = Call(g, [x])
    mod["main"] = Function([x], call)
    mod = relay.transform.InferType()(mod)
    assert call.checked_type == T((2,))
    main = mod["main"]
    # a new callee with the same type: the caller is reused as it is
    b = relay.var("b", shape=(2,))
    mod[g] = Function([b], relay.negative(b))
    mod = relay.transform.InferType()(mod)
    assert mod["main"] is main
    # a callee whose type changed: the caller is checked again (and its inferred
    # return annotation, filled in by the first run as TVM does, no longer holds)
    c = relay.var("c", shape=(2,))
    mod[g] = Function([c], relay.cast(c, "int32"))
    with pytest.raises(TypeError, match=r"does not match its annotated return type"):
        relay.transform.InferType()(mod)


def test_non_relay_functions_are_skipped():
    class FakePrimFunc(tvm.ir.BaseFunc):
        __slots__ = ()

    mod = tvm.IRModule()
    fake = FakePrimFunc()
    mod["kernel"] = fake
    x = relay.var("x", shape=(2,))
    mod["main"] = Function([x], relay.exp(x))
    out = relay.transform.InferType()(mod)
    assert out["kernel"] is fake
    assert out["main"].checked_type == FuncType([T((2,))], T((2,)))


def test_seed_example_types():
    if not hasattr(relay.nn, "conv2d"):
        pytest.skip("nn.conv2d is not registered yet")
    shape = (1, 64, 54, 54)
    c = relay.const(np.empty(shape).astype("float32"))
    weight = relay.var("weight", shape=(64, 64, 3, 3))
    x = relay.var("x", relay.TensorType((1, 64, 56, 56), "float32"))
    conv = relay.nn.conv2d(x, weight)
    y = relay.add(c, c)
    y = relay.multiply(y, relay.const(2, "float32"))
    y = relay.add(conv, y)
    z = relay.add(y, c)
    z1 = relay.add(y, c)
    z2 = relay.add(z, z1)
    f = Function([x], z2)  # weight is free: from_expr makes it a parameter, as the seed shows
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(f))
    assert mod["main"].body.checked_type == T((1, 64, 54, 54))
    assert [p.name_hint for p in mod["main"].params] == ["x", "weight"]
    assert format_type(conv.checked_type) == "Tensor[(1, 64, 54, 54), float32]"
    # InferTypeLocal accepts the free variable of the seed's Function([x], z2)
    assert relay.transform.InferTypeLocal(z2) == T((1, 64, 54, 54))


def test_conv2d_channel_mismatch():
    if not hasattr(relay.nn, "conv2d"):
        pytest.skip("nn.conv2d is not registered yet")
    x = relay.var("x", shape=(1, 3, 8, 8))
    w = relay.var("w", shape=(4, 5, 3, 3))
    with pytest.raises(TypeError, match=r"nn\.conv2d.*argument types: Tensor\[\(1, 3, 8, 8\)"):
        infer(Function([x, w], relay.nn.conv2d(x, w)))


# --------------------------------------------------------------------------- big programs
def test_deep_add_chain():
    # the first add broadcasts to (3, 2); only a type carried through all 100k nodes gives that
    x = relay.var("x", shape=(2,))
    z = relay.var("z", shape=(3, 1))
    e = relay.add(x, z)
    nodes = [e]
    for _ in range(100_000):
        e = relay.add(e, x)
        nodes.append(e)
    mod = infer(Function([x, z], e))
    assert mod["main"].checked_type == FuncType([T((2,)), T((3, 1))], T((3, 2)))
    assert mod["main"].body.checked_type == T((3, 2))
    assert e.checked_type == T((3, 2))
    assert all(n.checked_type == T((3, 2)) for n in nodes[::997])


def test_deep_let_chain():
    x = relay.var("x", shape=(2,))
    vs = [Var(f"v{i}") for i in range(100_000)]
    body = vs[-1]
    for i in range(len(vs) - 1, -1, -1):
        prev = vs[i - 1] if i else x
        body = Let(vs[i], relay.add(prev, x), body)
    f = Function([x], body)
    infer(f)
    assert f.checked_type == FuncType([T((2,))], T((2,)))
    assert vs[0].checked_type == T((2,))


def test_deep_error_is_reported_without_recursion():
    x = relay.var("x", shape=(2,))
    y = relay.var("y", shape=(3,))
    e = x
    for _ in range(20_000):
        e = relay.add(e, x)
    e = relay.add(e, y)
    with pytest.raises(TypeError, match="incompatible broadcast"):
        infer(Function([x, y], e))


def test_missing_annotations_are_filled_like_tvm():
    x = relay.var("x", shape=(2,))
    v = Var("v")
    f = Function([x], Let(v, relay.exp(x), v))
    typed = infer(f)["main"]
    assert typed.ret_type == T((2,))
    assert typed.body.var.type_annotation == T((2,))


def test_recursive_let_bound_function():
    i = relay.var("i", shape=(), dtype="int32")
    loop = Var("loop")
    body = If(relay.less(i, relay.const(10)), Call(loop, [relay.add(i, relay.const(1))]), i)
    x = relay.var("x", shape=(), dtype="int32")
    f = infer(Function([x], Let(loop, Function([i], body), Call(loop, [x]))))["main"]
    assert loop.checked_type == FuncType([T((), "int32")], T((), "int32"))
    assert f.checked_type == FuncType([T((), "int32")], T((), "int32"))


def test_deferred_relations_solved_after_unification():
    # %p is unknown when exp(%p) and %t.1 are met; later uses fix it.
    p, tmp, t = Var("p"), Var("tmp"), Var("t")
    q = relay.var("q", shape=(4,))
    g = Function([relay.var("a", shape=(4,))], relay.const(0.0))
    inner = Function([p], Let(tmp, relay.exp(p), Tuple([tmp, Call(g, [p])])))
    h = Function([t], relay.exp(TupleGetItem(t, 1)))
    body = Tuple([TupleGetItem(Call(inner, [q]), 0), Call(h, [Tuple([q, q])])])
    f = infer(Function([q], body))["main"]
    assert f.checked_type.ret_type == TupleType([T((4,)), T((4,))])
    assert tmp.checked_type == T((4,))


def test_self_application_is_an_infinite_type():
    a = Var("a")
    q = relay.var("q", shape=(4,))
    with pytest.raises(TypeError, match=r"a type cannot contain itself"):
        infer(Function([q], Call(Function([a], Call(a, [a])), [q])))

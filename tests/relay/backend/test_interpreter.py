"""The debug interpreter: every expression kind, closures, recursion, ADTs, references, errors."""

import weakref

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.ir.op import Op, OpPattern
from minitvm.ir.type import GlobalTypeVar, TensorType, TypeCall, TypeVar
from minitvm.relay.backend.interpreter import InterpreterError, Machine, use_counts
from minitvm.relay.backend.values import ADT, ConstructorValue, RefValue


def run(func, *args, mod=None, kind="debug"):
    mod = mod if mod is not None else tvm.IRModule()
    return relay.create_executor(kind, mod=mod).evaluate(func)(*args)


def scalar(name, dtype="int32"):
    return relay.var(name, shape=(), dtype=dtype)


# --------------------------------------------------------------------------- expression kinds
def test_call_constant_var():
    x = relay.var("x", shape=(2, 3))
    f = relay.Function([x], relay.add(x, relay.const(1.5)))
    out = run(f, np.arange(6, dtype="float32").reshape(2, 3))
    assert isinstance(out, tvm.nd.NDArray)
    np.testing.assert_array_equal(out.numpy(), np.arange(6).reshape(2, 3) + 1.5)


def test_main_of_module_and_kwargs():
    x, y = relay.var("x", shape=(3,)), relay.var("y", shape=(3,))
    mod = tvm.IRModule.from_expr(relay.Function([x, y], relay.subtract(x, y)))
    f = relay.create_executor("debug", mod=mod).evaluate()
    a, b = np.ones(3, "float32"), np.full(3, 2.0, "float32")
    np.testing.assert_array_equal(f(a, b).numpy(), a - b)
    np.testing.assert_array_equal(f(y=b, x=a).numpy(), a - b)
    np.testing.assert_array_equal(f(tvm.nd.array(a), y=tvm.nd.array(b)).numpy(), a - b)


def test_tuple_and_getitem():
    x = relay.var("x", shape=(2,))
    t = relay.Tuple([x, relay.add(x, x)])
    f = relay.Function([x], relay.Tuple([relay.TupleGetItem(t, 1), t]))
    out = run(f, np.array([1, 2], "float32"))
    assert isinstance(out, ADT) and len(out) == 2
    np.testing.assert_array_equal(out[0].numpy(), [2, 4])
    assert isinstance(out[1], ADT)
    np.testing.assert_array_equal(out[1][0].numpy(), [1, 2])
    np.testing.assert_array_equal(out[1][1].numpy(), [2, 4])


def test_tuple_argument():
    t = relay.var("t", relay.TupleType([TensorType((2,), "float32")] * 2))
    f = relay.Function([t], relay.add(relay.TupleGetItem(t, 0), relay.TupleGetItem(t, 1)))
    a = np.array([1, 2], "float32")
    np.testing.assert_array_equal(run(f, (a, a)).numpy(), [2, 4])


def test_let_and_if():
    x = scalar("x")
    v = relay.var("v")
    body = relay.Let(v, relay.multiply(x, relay.const(2)),
                     relay.If(relay.greater(v, relay.const(10)), v, relay.negative(v)))
    f = relay.Function([x], body)
    assert run(f, 7).numpy() == 14
    assert run(f, 3).numpy() == -6


def test_evaluate_plain_expression_and_binds():
    ex = relay.create_executor("debug")
    out = ex.evaluate(relay.add(relay.const(2.0), relay.const(3.0)))
    assert float(out.numpy()) == 5.0
    x = relay.var("x", shape=(), dtype="float32")
    out = ex.evaluate(relay.multiply(x, x), binds={x: np.array(4.0, "float32")})
    assert float(out.numpy()) == 16.0


def test_closure_captures_environment():
    x = scalar("x")
    y = scalar("y")
    adder = relay.Function([y], relay.add(x, y))  # captures x
    f_var = relay.var("f")
    body = relay.Let(f_var, adder, relay.Tuple([f_var(relay.const(1)), f_var(relay.const(2))]))
    out = run(relay.Function([x], body), 10)
    assert [int(v.numpy()) for v in out] == [11, 12]


def test_closure_returned_and_passed():
    x, y = scalar("x"), scalar("y")
    make_adder = relay.Function([x], relay.Function([y], relay.add(x, y)))
    g = relay.var("g")
    z = scalar("z")
    apply = relay.Function([g, z], g(z))
    a = relay.var("a")
    main = relay.Function([], relay.Let(a, make_adder(relay.const(5)), apply(a, relay.const(7))))
    assert int(run(main).numpy()) == 12
    # A closure can also be returned to Python.
    clo = run(make_adder, 3)
    assert type(clo).__name__ == "Closure"


def test_primitive_function_call():
    p0, p1 = relay.var("p0", shape=(2,)), relay.var("p1", shape=(2,))
    fused = relay.Function([p0, p1], relay.add(relay.multiply(p0, p1), p1)).with_attr(
        "Primitive", 1)
    x = relay.var("x", shape=(2,))
    f = relay.Function([x], fused(x, x))
    np.testing.assert_array_equal(run(f, np.array([2, 3], "float32")).numpy(), [6, 12])


def _sum_module(tail: bool):
    mod = tvm.IRModule()
    gv = relay.GlobalVar("sum")
    n, acc = scalar("n"), scalar("acc")
    zero, one = relay.const(0), relay.const(1)
    if tail:
        body = relay.If(relay.equal(n, zero), acc,
                        gv(relay.subtract(n, one), relay.add(acc, n)))
        mod[gv] = relay.Function([n, acc], body)
    else:
        body = relay.If(relay.equal(n, zero), zero, relay.add(n, gv(relay.subtract(n, one))))
        mod[gv] = relay.Function([n], body)
    return mod, gv


def test_recursive_global_tail_call_10000():
    mod, gv = _sum_module(tail=True)
    out = relay.create_executor("debug", mod=mod).evaluate(gv)(10000, 0)
    assert int(out.numpy()) == 10000 * 10001 // 2


def test_recursive_global_non_tail_10000():
    mod, gv = _sum_module(tail=False)
    out = relay.create_executor("debug", mod=mod).evaluate(gv)(10000)
    assert int(out.numpy()) == 10000 * 10001 // 2


def test_let_bound_recursive_closure():
    f = relay.var("f")
    n = scalar("n")
    fn = relay.Function([n], relay.If(relay.equal(n, relay.const(0)), relay.const(1),
                                      relay.multiply(n, f(relay.subtract(n, relay.const(1))))))
    main = relay.Function([], relay.Let(f, fn, f(relay.const(5))))
    assert int(run(main).numpy()) == 120


# --------------------------------------------------------------------------- ADTs
def _list_module():
    mod = tvm.IRModule()
    a = TypeVar("a")
    lst = GlobalTypeVar("List")
    cons = relay.Constructor("Cons", [a, TypeCall(lst, [a])], lst)
    nil = relay.Constructor("Nil", [], lst)
    mod[lst] = relay.TypeData(lst, [a], [cons, nil])
    return mod, cons, nil


def test_adt_list_length_map_and_build():
    mod, cons, nil = _list_module()
    # @length(l) = match l { Cons(_, t) => 1 + @length(t), Nil => 0 }
    length = relay.GlobalVar("length")
    l, t = relay.var("l"), relay.var("t")
    mod[length] = relay.Function([l], relay.Match(l, [
        relay.Clause(relay.PatternConstructor(cons, [relay.PatternWildcard(),
                                                     relay.PatternVar(t)]),
                     relay.add(relay.const(1), length(t))),
        relay.Clause(relay.PatternConstructor(nil), relay.const(0)),
    ]))
    # @build(n, acc) = if n == 0 then acc else @build(n - 1, Cons(n, acc))
    build = relay.GlobalVar("build")
    n, acc = scalar("n"), relay.var("acc")
    mod[build] = relay.Function([n, acc], relay.If(
        relay.equal(n, relay.const(0)), acc,
        build(relay.subtract(n, relay.const(1)), cons(n, acc))))
    # @map(f, l)
    lmap = relay.GlobalVar("map")
    f, h, t2 = relay.var("f"), relay.var("h"), relay.var("t2")
    mod[lmap] = relay.Function([f, l], relay.Match(l, [
        relay.Clause(relay.PatternConstructor(cons, [relay.PatternVar(h), relay.PatternVar(t2)]),
                     cons(f(h), lmap(f, t2))),
        relay.Clause(relay.PatternWildcard(), nil()),
    ]))
    x = scalar("x")
    double = relay.Function([x], relay.multiply(x, relay.const(2)))
    mod["main"] = relay.Function([], relay.Tuple([
        length(build(relay.const(10000), nil())),
        lmap(double, build(relay.const(3), nil())),
    ]))
    out = relay.create_executor("debug", mod=mod).evaluate()()
    assert int(out[0].numpy()) == 10000
    lst = out[1]
    got = []
    while lst.tag == cons.tag:
        assert isinstance(lst, ConstructorValue) and lst.constructor is cons
        got.append(int(lst.fields[0].numpy()))
        lst = lst.fields[1]
    assert lst.constructor is nil and got == [2, 4, 6]


def test_long_adt_list_output_converts_iteratively():
    mod, cons, nil = _list_module()
    build = relay.GlobalVar("build")
    n, acc = scalar("n"), relay.var("acc")
    mod[build] = relay.Function([n, acc], relay.If(
        relay.equal(n, relay.const(0)), acc,
        build(relay.subtract(n, relay.const(1)), cons(n, acc))))
    out = relay.create_executor("debug", mod=mod).evaluate(build)(20000, ConstructorValue(
        nil.tag, [], nil))
    count = 0
    while out.constructor is cons:
        count += 1
        out = out.fields[1]
    assert count == 20000


def test_match_tuple_and_nested_patterns_and_failure():
    mod, cons, nil = _list_module()
    p = relay.var("p")
    a, b = relay.var("a"), relay.var("b")
    # match (p) { (Cons(a, Cons(b, _)), _) => a - b, (_, c) => c }
    c = relay.var("c")
    m = relay.Match(p, [
        relay.Clause(relay.PatternTuple([
            relay.PatternConstructor(cons, [relay.PatternVar(a), relay.PatternConstructor(
                cons, [relay.PatternVar(b), relay.PatternWildcard()])]),
            relay.PatternWildcard()]), relay.subtract(a, b)),
        relay.Clause(relay.PatternTuple([relay.PatternWildcard(), relay.PatternVar(c)]), c),
    ])
    f = relay.Function([p], m)
    ex = relay.create_executor("debug", mod=mod)
    lst = relay.Tuple([cons(relay.const(9), cons(relay.const(4), nil())), relay.const(-1)])
    assert int(ex.evaluate(f(lst)).numpy()) == 5
    short = relay.Tuple([cons(relay.const(9), nil()), relay.const(-1)])
    assert int(ex.evaluate(f(short)).numpy()) == -1
    incomplete = relay.Function([p], relay.Match(p, [
        relay.Clause(relay.PatternConstructor(nil), relay.const(0))], complete=False))
    with pytest.raises(InterpreterError, match="match failed"):
        ex.evaluate(incomplete(cons(relay.const(1), nil())))


# --------------------------------------------------------------------------- references
def test_references_counter():
    r = relay.var("r")
    u1, u2 = relay.var("u1"), relay.var("u2")
    one = relay.const(1)

    def incr():  # two distinct nodes: a shared node is evaluated once (graph normal form)
        return relay.RefWrite(r, relay.add(relay.RefRead(r), one))

    body = relay.Let(r, relay.RefCreate(relay.const(0)),
                     relay.Let(u1, incr(), relay.Let(u2, incr(), relay.RefRead(r))))
    assert int(run(relay.Function([], body)).numpy()) == 2
    ref = run(relay.Function([], relay.RefCreate(relay.const(3))))
    assert isinstance(ref, RefValue) and int(ref.value.numpy()) == 3


def test_ref_write_returns_empty_tuple():
    out = run(relay.Function([], relay.RefWrite(relay.RefCreate(relay.const(1)), relay.const(2))))
    assert isinstance(out, ADT) and len(out) == 0


# --------------------------------------------------------------------------- DAGs and depth
_COUNT = {"n": 0}


def _counting_impl(attrs, args, out_type):
    _COUNT["n"] += 1
    return args[0] + 1


try:
    Op.get("test_interp.count")
except Exception:  # noqa: BLE001 - the registry raises when the op is unknown
    from minitvm.relay.op.op import define_op

    define_op("test_interp.count", lambda ts, attrs: ts[0], _counting_impl,
              OpPattern.ELEMWISE, num_inputs=1)


def test_shared_subexpression_is_computed_once():
    x = relay.var("x", shape=(2,))
    shared = relay.Call(Op.get("test_interp.count"), [x])
    f = relay.Function([x], relay.add(shared, relay.multiply(shared, shared)))
    _COUNT["n"] = 0
    out = run(f, np.array([1, 2], "float32"))
    np.testing.assert_array_equal(out.numpy(), [2 + 4, 3 + 9])
    assert _COUNT["n"] == 1
    assert use_counts(f.body)[shared] == 3


_RECORDED: list = []


def _record_impl(attrs, args, out_type):
    out = args[0] + 1
    _RECORDED.append(weakref.ref(out))
    return out


def _probe_impl(attrs, args, out_type):
    _RECORDED.append(_RECORDED[0]() is None)  # was the recorded value already freed?
    return args[0]


for _name, _impl in (("test_interp.record", _record_impl), ("test_interp.probe", _probe_impl)):
    try:
        Op.get(_name)
    except Exception:  # noqa: BLE001
        from minitvm.relay.op.op import define_op

        define_op(_name, lambda ts, attrs: ts[0], _impl, OpPattern.OPAQUE, num_inputs=1)


def test_memo_dropped_after_last_use():
    x = relay.var("x", shape=(2,))
    shared = relay.Call(Op.get("test_interp.record"), [x])
    body = relay.Call(Op.get("test_interp.probe"), [relay.multiply(shared, shared)])
    _RECORDED.clear()
    out = Machine().eval_expr(body, {x: np.array([1, 2], "float32")})
    np.testing.assert_array_equal(out, [4, 9])
    assert _RECORDED[1] is True


def test_deep_dataflow_chain():
    x = relay.var("x", shape=(), dtype="float32")
    y = x
    for _ in range(100_000):
        y = relay.add(y, relay.const(1.0))
    f = relay.Function([x], y)
    assert float(run(f, np.float32(0)).numpy()) == 100_000.0


def test_deep_let_chain():
    x = relay.var("x", shape=(), dtype="int32")
    vs = [relay.var(f"v{i}") for i in range(100_000)]
    body = vs[-1]
    for i in range(len(vs) - 1, -1, -1):
        prev = vs[i - 1] if i else x
        body = relay.Let(vs[i], relay.add(prev, relay.const(1)), body)
    f = relay.Function([x], body)
    assert int(run(f, 5).numpy()) == 100_005


def test_deep_tuple_nesting():
    x = relay.var("x", shape=(), dtype="int32")
    t = x
    for _ in range(50_000):
        t = relay.TupleGetItem(relay.Tuple([t]), 0)
    assert int(run(relay.Function([x], t), 3).numpy()) == 3


# --------------------------------------------------------------------------- executors, errors
@pytest.mark.parametrize("kind", ["debug", "graph", "vm", "aot"])
def test_executor_kinds_agree(kind):
    x = relay.var("x", shape=(2, 2))
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.multiply(x, x)))
    a = np.array([[1, 2], [3, 4]], "float32")
    out = relay.create_executor(kind, mod=mod, device=tvm.cpu(0), target="llvm").evaluate()(a)
    np.testing.assert_array_equal(out.numpy(), a * a)


def test_unknown_kind():
    with pytest.raises(ValueError, match="unknown executor kind 'jit'"):
        relay.create_executor("jit")


def test_params_are_bound_by_name():
    x, w = relay.var("x", shape=(2,)), relay.var("w", shape=(2,))
    mod = tvm.IRModule.from_expr(relay.Function([x, w], relay.multiply(x, w)))
    ex = relay.create_executor("debug", mod=mod, params={"w": np.array([3, 4], "float32")})
    out = ex.evaluate()(np.array([1, 2], "float32"))
    np.testing.assert_array_equal(out.numpy(), [3, 8])
    assert len(mod["main"].params) == 2  # the caller's module is unchanged


def _xy_main():
    x = relay.var("x", shape=(1, 3))
    y = relay.var("y", shape=(1, 3), dtype="int32")
    mod = tvm.IRModule.from_expr(relay.Function([x, y], relay.add(x, relay.cast(y, "float32"))))
    return relay.create_executor("debug", mod=mod).evaluate()


def test_wrong_shape():
    f = _xy_main()
    with pytest.raises(ValueError, match=r"main\(\) argument 'x': expected Tensor\[\(1, 3\), "
                                         r"float32\], got shape \(2, 3\) float32"):
        f(np.zeros((2, 3), "float32"), np.zeros((1, 3), "int32"))


def test_wrong_dtype():
    f = _xy_main()
    with pytest.raises(ValueError, match=r"argument 'y': expected Tensor\[\(1, 3\), int32\], "
                                         r"got shape \(1, 3\) float32"):
        f(np.zeros((1, 3), "float32"), np.zeros((1, 3), "float32"))


def test_wrong_count_and_keywords():
    f = _xy_main()
    with pytest.raises(ValueError, match=r"main\(\) takes 2 argument\(s\) \(x, y\), got 1"):
        f(np.zeros((1, 3), "float32"))
    with pytest.raises(ValueError, match="unexpected keyword argument 'z'"):
        f(np.zeros((1, 3), "float32"), z=1)
    with pytest.raises(ValueError, match="given both by position"):
        f(np.zeros((1, 3), "float32"), np.zeros((1, 3), "int32"), x=1)


def test_free_variable_function_rejected():
    x, y = relay.var("x"), relay.var("y")
    with pytest.raises(ValueError, match="free variables: %y"):
        relay.create_executor().evaluate(relay.Function([x], relay.add(x, y)))


@pytest.mark.parametrize("kind", ["debug", "graph", "vm", "aot"])
def test_free_variables_rejected_by_every_kind_when_evaluated(kind):
    # the interpreter looks for them once its type check fails; the lazily building kinds
    # before they return a callable: the same error either way, at evaluate()
    x, y = relay.var("x", shape=(2,)), relay.var("y", shape=(2,))
    inner = relay.Function([], relay.add(x, y))  # free in a nested closure too
    fn = relay.Function([x], relay.Call(inner, []))
    with pytest.raises(ValueError, match="free variables: %y"):
        relay.create_executor(kind, mod=tvm.IRModule(), target="llvm").evaluate(fn)


def _raising_impl(attrs, args, out_type):
    raise ValueError("boom")


def _wrong_shape_impl(attrs, args, out_type):
    return np.zeros((7,), "float32")


for _name, _impl in (("test_interp.fail", _raising_impl), ("test_interp.bad", _wrong_shape_impl)):
    try:
        Op.get(_name)
    except Exception:  # noqa: BLE001
        from minitvm.relay.op.op import define_op

        define_op(_name, lambda ts, attrs: ts[0], _impl, OpPattern.OPAQUE, num_inputs=1)


def test_op_error_names_the_call():
    x = relay.var("x", shape=(2, 3))
    f = relay.Function([x], relay.Call(Op.get("test_interp.fail"), [relay.add(x, x)]))
    with pytest.raises(InterpreterError, match=r"test_interp.fail\(Tensor\[\(2, 3\), float32\]\)"
                                               r".*ValueError: boom"):
        run(f, np.zeros((2, 3), "float32"))


def test_op_result_checked_against_its_type():
    x = relay.var("x", shape=(2, 3))
    f = relay.Function([x], relay.Call(Op.get("test_interp.bad"), [x]))
    with pytest.raises(InterpreterError, match=r"test_interp.bad returned Tensor\[\(7\), float32\] "
                                               r"but its type is Tensor\[\(2, 3\), float32\]"):
        run(f, np.zeros((2, 3), "float32"))


def test_non_scalar_if_condition():
    c = relay.var("c", shape=(2,), dtype="bool")
    # The type checker rejects this program; the machine itself checks too.
    e = relay.If(c, relay.const(1), relay.const(2))
    with pytest.raises(InterpreterError, match="scalar boolean"):
        Machine().eval_expr(e, {c: np.array([True, False])})


def test_dynamic_shape_parameter():
    x = relay.var("x", shape=(relay.Any(), 3))
    f = relay.Function([x], relay.nn.relu(relay.add(x, relay.const(1.0))))
    ex = relay.create_executor("debug", mod=tvm.IRModule.from_expr(f)).evaluate()
    for n in (1, 4):
        out = ex(np.full((n, 3), -0.5, "float32"))
        np.testing.assert_array_equal(out.numpy(), np.full((n, 3), 0.5, "float32"))
    with pytest.raises(ValueError, match=r"expected Tensor\[\(\?, 3\), float32\], got shape "
                                         r"\(2, 4\) float32"):
        ex(np.zeros((2, 4), "float32"))


def test_function_evaluated_next_to_an_existing_main():
    mod = tvm.IRModule()
    a = relay.var("a", shape=(2,))
    double = relay.GlobalVar("double")
    mod[double] = relay.Function([a], relay.add(a, a))
    b = relay.var("b", shape=(2,))
    mod["main"] = relay.Function([b], relay.negative(b))
    ex = relay.create_executor("debug", mod=mod)
    c = relay.var("c", shape=(2,))
    other = relay.Function([c], double(mod.get_global_var("main")(c)))
    np.testing.assert_array_equal(ex.evaluate(other)(np.array([1, 2], "float32")).numpy(),
                                  [-2, -4])
    np.testing.assert_array_equal(ex.evaluate(double)(np.array([1, 2], "float32")).numpy(), [2, 4])
    assert "__interpreter_entry" not in mod  # the caller's module is unchanged


def test_adt_ref_and_tuple_values_as_arguments():
    mod, cons, nil = _list_module()
    lst_type = TypeCall(mod.get_global_type_var("List"), [TensorType((), "float32")])

    def ident(t):
        v = relay.var("v", t)
        return relay.Function([v], v)

    ex = relay.create_executor("debug", mod=mod)
    nil_value = ConstructorValue(nil.tag, [], nil)
    cons_value = ConstructorValue(cons.tag, [tvm.nd.array(np.float32(1.5)), nil_value], cons)
    res = ex.evaluate(ident(lst_type))(cons_value)
    assert res.tag == cons.tag and float(res.fields[0].numpy()) == 1.5
    assert res.fields[1].tag == nil.tag
    ref_type = relay.RefType(TensorType((3,), "int64"))
    res = ex.evaluate(ident(ref_type))(RefValue(tvm.nd.array(np.arange(3))))
    np.testing.assert_array_equal(res.value.numpy(), np.arange(3))
    from minitvm.runtime import container

    tup = container.tuple_object([tvm.nd.array(np.float32(i)) for i in range(4)])
    res = ex.evaluate(ident(relay.TupleType([TensorType((), "float32")] * 4)))(tup)
    assert isinstance(res, container.ADT) and [float(f.numpy()) for f in res] == [0, 1, 2, 3]


def test_tail_calls_run_in_constant_stack():
    mod, gv = _sum_module(tail=True)
    m = Machine(mod)
    out = m.call(m.global_closure(gv), [np.array(10000, "int32"), np.array(0, "int32")])
    assert int(out) == 50005000 and m.peak_tasks < 10
    mod, gv = _sum_module(tail=False)
    m = Machine(mod)
    assert int(m.call(m.global_closure(gv), [np.array(10000, "int32")])) == 50005000
    assert m.peak_tasks > 10000  # a non-tail recursion keeps its frames, on the heap

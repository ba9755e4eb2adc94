"""gradient, LazyGradientInit, to_cps/un_cps and Defunctionalization on TVM v0.19's own cases
(test_pass_gradient.py, test_pass_lazy_gradient_init.py, test_pass_to_cps.py,
test_pass_defunctionalization.py), restated in our own words. TVM checks these passes by the
type of the result and by running it, so these tests do the same: the exact function type TVM
asserts, and the values (forward result and gradients) on random inputs."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.relay import op, transform
from minitvm.relay.analysis import free_vars
from minitvm.relay.prelude import Prelude
from minitvm.relay.testing import check_grad, rand, run_infer_type, run_opt_pass
from minitvm.relay.transform import gradient, to_cps, un_cps

SHAPE = (10, 10)
T = relay.TensorType(SHAPE, "float32")


def _grad_type(ins, out):
    return relay.FuncType(ins, relay.TupleType([out, relay.TupleType(ins)]))


def _evaluate(func, *args, mod=None):
    return relay.create_executor(mod=mod).evaluate(func)(*args)


def _nat_expr(mod, n):
    _, z, s = mod.get_type("nat")
    out = z()
    for _ in range(n):
        out = s(out)
    return out


# --- gradient (test_pass_gradient.py) ------------------------------------------------------


@pytest.mark.parametrize("mode", ["first_order", "higher_order"])
def test_gradient_of_identity(mode):
    x = relay.var("x", T)
    back = run_infer_type(gradient(run_infer_type(relay.Function([x], x)), mode=mode))
    assert back.checked_type == _grad_type([T], T)
    xv = rand("float32", *SHAPE)
    fwd, (g,) = _evaluate(back, xv)
    np.testing.assert_allclose(fwd.numpy(), xv.numpy())
    np.testing.assert_allclose(g.numpy(), np.ones(SHAPE, "float32"))


def test_gradient_of_relu_type_checks():
    x = relay.var("x", T)
    back = run_infer_type(gradient(run_infer_type(relay.Function([x], op.nn.relu(x)))))
    assert back.checked_type == _grad_type([T], T)


@pytest.mark.parametrize("build, fwd_scale, grad_scale", [
    (lambda x: x + x, 2, 2), (lambda x: x - x, 0, 0)])
def test_gradient_of_add_and_subtract_of_one_input(build, fwd_scale, grad_scale):
    x = relay.var("x", T)
    back = run_infer_type(gradient(run_infer_type(relay.Function([x], build(x)))))
    assert back.checked_type == _grad_type([T], T)
    xv = rand("float32", *SHAPE)
    fwd, (g,) = _evaluate(back, xv)
    np.testing.assert_allclose(fwd.numpy(), fwd_scale * xv.numpy())
    np.testing.assert_allclose(g.numpy(), grad_scale * np.ones(SHAPE, "float32"))


def test_check_grad_of_sum():
    x, y = relay.var("x", T), relay.var("y", T)
    check_grad(relay.Function([x, y], x + y))


def test_gradient_through_a_let():
    x = relay.var("x", T)
    sb = relay.ScopeBuilder()
    y = sb.let("y", x + x)
    sb.ret(y + y)
    back = run_infer_type(gradient(run_infer_type(relay.Function([x], sb.get()))))
    assert back.checked_type == _grad_type([T], T)
    xv = rand("float32", *SHAPE)
    fwd, (g,) = _evaluate(back, xv)
    np.testing.assert_allclose(fwd.numpy(), 4 * xv.numpy(), rtol=1e-6)
    np.testing.assert_allclose(g.numpy(), 4 * np.ones(SHAPE, "float32"))


@pytest.mark.parametrize("build, sign", [(lambda a, b: a + b, 1.0), (lambda a, b: a - b, -1.0)])
def test_gradient_of_broadcasting_binary_ops(build, sign):
    t1, t2 = relay.TensorType((3, 4, 1), "float32"), relay.TensorType((1, 5), "float32")
    x, y = relay.var("x", t1), relay.var("y", t2)
    back = run_infer_type(gradient(run_infer_type(relay.Function([x, y], build(x, y)))))
    assert back.checked_type == relay.FuncType(
        [t1, t2], relay.TupleType([relay.TensorType((3, 4, 5), "float32"),
                                   relay.TupleType([t1, t2])]))
    xv, yv = rand("float32", 3, 4, 1), rand("float32", 1, 5)
    fwd, (gx, gy) = _evaluate(back, xv, yv)
    ones = np.ones((3, 4, 5), "float32")
    np.testing.assert_allclose(fwd.numpy(), build(xv.numpy(), yv.numpy()), rtol=1e-6)
    np.testing.assert_allclose(gx.numpy(), ones.sum(axis=2, keepdims=True))
    np.testing.assert_allclose(gy.numpy(),
                               sign * ones.sum(axis=(0, 1), keepdims=True).squeeze(axis=0))


@pytest.mark.parametrize("mode", ["higher_order", "first_order"])
def test_gradient_of_tuple_projections(mode):
    x, y, z = relay.var("x", T), relay.var("y", T), relay.var("z", T)
    if mode == "higher_order":
        tup = relay.Var("tup")
        body = relay.Let(tup, relay.Tuple([x, y, z]), relay.TupleGetItem(tup, 0)
                         + relay.TupleGetItem(tup, 1) - relay.TupleGetItem(tup, 2))
    else:
        tup = relay.Tuple([x, y, z])
        body = relay.TupleGetItem(tup, 0) + relay.TupleGetItem(tup, 1) - relay.TupleGetItem(
            tup, 2)
    back = run_infer_type(gradient(run_infer_type(relay.Function([x, y, z], body)), mode=mode))
    assert back.checked_type == _grad_type([T, T, T], T)
    vals = [rand("float32", *SHAPE) for _ in range(3)]
    fwd, (gx, gy, gz) = _evaluate(back, *vals)
    a, b, c = (v.numpy() for v in vals)
    np.testing.assert_allclose(fwd.numpy(), a + b - c, rtol=1e-6)
    np.testing.assert_allclose(gx.numpy(), np.ones(SHAPE))
    np.testing.assert_allclose(gy.numpy(), np.ones(SHAPE))
    np.testing.assert_allclose(gz.numpy(), -np.ones(SHAPE))


def test_gradient_of_a_prelude_iteration():
    mod = tvm.IRModule()
    Prelude(mod)
    nat_iterate = mod.get_global_var("nat_iterate")
    x, i = relay.var("x", T), relay.var("i", T)
    double = relay.Function([x], x + x)
    mod["main"] = relay.Function([i], nat_iterate(double, _nat_expr(mod, 3))(i))
    mod = transform.InferType()(mod)
    mod["main"] = gradient(mod["main"], mod=mod)
    back = transform.InferType()(mod)["main"]
    assert back.checked_type == _grad_type([T], T)
    iv = rand("float32", *SHAPE)
    fwd, (g,) = _evaluate(back, iv, mod=mod)
    np.testing.assert_allclose(fwd.numpy(), 8 * iv.numpy(), rtol=1e-6)
    np.testing.assert_allclose(g.numpy(), 8 * np.ones(SHAPE))


def test_gradient_through_a_reference():
    x = relay.var("x", T)
    r, u = relay.Var("r"), relay.Var("u")
    body = relay.Let(u, relay.RefWrite(r, relay.RefRead(r) + relay.RefRead(r)), relay.RefRead(r))
    func = run_infer_type(relay.Function([x], relay.Let(r, relay.RefCreate(x), body)))
    back = run_infer_type(gradient(func))
    assert back.checked_type == _grad_type([T], T)
    xv = rand("float32", *SHAPE)
    fwd, (g,) = _evaluate(back, xv)
    np.testing.assert_allclose(fwd.numpy(), 2 * xv.numpy())
    np.testing.assert_allclose(g.numpy(), 2 * np.ones(SHAPE))


def test_second_order_gradient_of_square():
    x, y = relay.var("x", T), relay.var("y", T)
    back = run_infer_type(gradient(run_infer_type(relay.Function([x], x * x))))
    first = run_infer_type(relay.Function(
        [y], relay.TupleGetItem(relay.TupleGetItem(back(y), 1), 0)))
    back2 = run_infer_type(gradient(first))
    assert back.checked_type == _grad_type([T], T)
    xv = rand("float32", *SHAPE)
    fwd, (g,) = _evaluate(back2, xv)
    np.testing.assert_allclose(fwd.numpy(), 2 * xv.numpy(), rtol=1e-6)
    np.testing.assert_allclose(g.numpy(), 2 * np.ones(SHAPE))


def test_gradient_of_if_type_checks():
    x = relay.var("x", shape=(1, 16, 64, 64))
    y = relay.var("y", shape=(1, 16, 64, 64))
    cond = relay.var("cond", shape=(), dtype="bool")  # TVM spells it uint1, the same dtype there
    net = relay.log(relay.If(cond, x, y))
    func = run_infer_type(relay.Function(free_vars(net), net))
    back = run_infer_type(gradient(func, mode="higher_order"))
    t = relay.TensorType((1, 16, 64, 64), "float32")
    assert back.checked_type == relay.FuncType(
        [relay.TensorType((), "bool"), t, t],
        relay.TupleType([t, relay.TupleType([relay.TensorType((), "bool"), t, t])]))


def test_gradient_with_a_tuple_result():
    x = relay.var("x", T)
    sb = relay.ScopeBuilder()
    y = sb.let("y", x + x)
    sb.ret(relay.Tuple([y + y, y]))
    back = run_infer_type(gradient(run_infer_type(relay.Function([x], sb.get()))))
    assert back.checked_type == relay.FuncType(
        [T], relay.TupleType([relay.TupleType([T, T]), relay.TupleType([T])]))
    xv = rand("float32", *SHAPE)
    (four, two), (g,) = _evaluate(back, xv)
    np.testing.assert_allclose(four.numpy(), 4 * xv.numpy(), rtol=1e-6)
    np.testing.assert_allclose(two.numpy(), 2 * xv.numpy(), rtol=1e-6)
    np.testing.assert_allclose(g.numpy(), 4 * np.ones(SHAPE))


def test_gradient_of_concatenate_type():
    x = relay.var("x", T)
    back = run_infer_type(gradient(run_infer_type(
        relay.Function([x], op.concatenate([x, x], axis=1)))))
    tvm.ir.assert_structural_equal(back.checked_type,
                                   _grad_type([T], relay.TensorType((10, 20), "float32")))


def test_first_order_gradient_does_not_duplicate_the_forward_pass():
    x = relay.Var("x", relay.TensorType([12, 12]))
    y = relay.Var("y", relay.TensorType([12, 12]))
    xy = relay.nn.dense(x, y)
    fn = run_infer_type(relay.Function([x, y], relay.sum(xy - relay.sum(xy, keepdims=True))))
    back = gradient(fn, mode="first_order")
    dense = []
    relay.analysis.post_order_visit(back, lambda e: dense.append(e) if isinstance(
        e, relay.Call) and getattr(e.op, "name", None) == "nn.dense" else None)
    assert len(dense) == 3  # one forward, two backward


def test_gradient_of_a_global_function():
    m = tvm.IRModule()
    x, y = relay.Var("x", T), relay.Var("y", T)
    d, q, g = relay.GlobalVar("double"), relay.GlobalVar("q"), relay.GlobalVar("grad")
    m[d] = relay.Function([x], x + x)
    m[q] = relay.Function([y], d(d(y)))
    m = transform.InferType()(m)
    m[g] = gradient(q, m)
    m = transform.InferType()(m)
    back = m[g]
    assert back.checked_type == _grad_type([T], T)
    xv = rand("float32", *SHAPE)
    fwd, (gr,) = _evaluate(back, xv, mod=m)
    np.testing.assert_allclose(fwd.numpy(), 4 * xv.numpy(), rtol=1e-6)
    np.testing.assert_allclose(gr.numpy(), 4 * np.ones(SHAPE))


# --- LazyGradientInit (test_pass_lazy_gradient_init.py) -------------------------------------


def _lazy(func, pre=(), post=()):
    mod = tvm.IRModule()
    mod["main"] = func
    mod = tvm.transform.Sequential([*pre, transform.LazyGradientInit(), *post])(
        transform.InferType()(mod) if not pre else mod)
    # TVM's DeadCodeElimination is a function pass and leaves the module typed; ours does not
    return transform.InferType()(mod) if post else mod


def test_lazy_keeps_the_function_type():
    x1, x2 = relay.var("x1", relay.TensorType((20, 20))), relay.var("x2", relay.TensorType(
        (20, 20)))
    mod = _lazy(relay.Function([x1, x2], (x1 - x2) * x2))
    t = relay.TensorType((20, 20))
    assert mod["main"].checked_type == relay.FuncType([t, t], t)


@pytest.mark.parametrize("build, ref", [
    (lambda x: x + x, lambda v: v + v), (lambda x: x * x, lambda v: v * v),
    (lambda x: x + relay.zeros(SHAPE, "float32"), lambda v: v),
    (lambda x: x + relay.ones(SHAPE, "float32"), lambda v: v + 1),
    (lambda x: x + relay.zeros_like(x), lambda v: v),
    (lambda x: x + relay.ones_like(x), lambda v: v + 1)])
def test_lazy_single_input_programs(build, ref):
    x = relay.var("x", T)
    mod = _lazy(relay.Function([x], build(x)))
    assert mod["main"].checked_type == relay.FuncType([T], T)
    xv = rand("float32", *SHAPE)
    np.testing.assert_allclose(_evaluate(mod["main"], xv, mod=mod).numpy(), ref(xv.numpy()),
                               rtol=1e-6)


def test_lazy_tuple_input_and_tuple_result():
    tt = relay.TupleType([T, T])
    x = relay.var("x", tt)
    mod = _lazy(relay.Function([x], relay.TupleGetItem(x, 0) + relay.TupleGetItem(x, 1)))
    assert mod["main"].checked_type == relay.FuncType([tt], T)
    a, b = rand("float32", *SHAPE), rand("float32", *SHAPE)
    np.testing.assert_allclose(_evaluate(mod["main"], (a, b), mod=mod).numpy(),
                               a.numpy() + b.numpy(), rtol=1e-6)

    y = relay.var("y", T)
    mod = _lazy(run_infer_type(relay.Function([y], relay.Tuple([y, y * relay.const(2.0)]))))
    assert mod["main"].checked_type == relay.FuncType([T], tt)
    first, second = _evaluate(mod["main"], a, mod=mod)
    np.testing.assert_allclose(first.numpy(), a.numpy())
    np.testing.assert_allclose(second.numpy(), 2 * a.numpy())


def test_lazy_broadcasting_add():
    t1, t2 = relay.TensorType((3, 4, 1)), relay.TensorType((1, 5))
    x1, x2 = relay.var("x1", t1), relay.var("x2", t2)
    mod = _lazy(run_infer_type(relay.Function([x1, x2], x1 + x2)))
    assert mod["main"].checked_type == relay.FuncType([t1, t2], relay.TensorType((3, 4, 5)))
    a, b = rand("float32", 3, 4, 1).numpy(), rand("float32", 1, 5).numpy()
    np.testing.assert_allclose(_evaluate(mod["main"], a, b, mod=mod).numpy(), a + b, rtol=1e-6)


def test_lazy_after_reverse_mode_gradients():
    x = relay.var("x", T)
    back = run_infer_type(gradient(run_infer_type(relay.Function([x], x))))
    mod = _lazy(back)
    assert mod["main"].checked_type == _grad_type([T], T)
    xv = rand("float32", *SHAPE)
    fwd, (g,) = _evaluate(mod["main"], xv, mod=mod)
    np.testing.assert_allclose(fwd.numpy(), xv.numpy())
    np.testing.assert_allclose(g.numpy(), np.ones(SHAPE))

    y = relay.var("y", T)
    ones = relay.const(np.ones(SHAPE, "float32"))
    back = run_infer_type(gradient(run_infer_type(relay.Function([x, y], (x * y) * ones))))
    for pre, post in [((), ()),
                      ((transform.PartialEvaluate(), transform.InferType()),
                       (transform.DeadCodeElimination(),)),
                      ((), (transform.PartialEvaluate(), transform.DeadCodeElimination()))]:
        mod = _lazy(back, pre, post)
        assert mod["main"].checked_type == _grad_type([T, T], T)
        xv, yv = rand("float32", *SHAPE), rand("float32", *SHAPE)
        fwd, (gx, gy) = _evaluate(mod["main"], xv, yv, mod=mod)
        np.testing.assert_allclose(fwd.numpy(), xv.numpy() * yv.numpy(), rtol=1e-6)
        np.testing.assert_allclose(gx.numpy(), yv.numpy(), rtol=1e-6)
        np.testing.assert_allclose(gy.numpy(), xv.numpy(), rtol=1e-6)


def test_partial_evaluate_of_a_constant_gradient():
    back = run_infer_type(gradient(run_infer_type(
        relay.Function([], relay.const(np.ones(SHAPE, "float32"))))))
    mod = tvm.IRModule()
    mod["main"] = back
    out = transform.InferType()(transform.PartialEvaluate()(transform.InferType()(mod)))
    assert out["main"].checked_type == relay.FuncType([], relay.TupleType([T, relay.TupleType(
        [])]))


# --- to_cps / un_cps (test_pass_to_cps.py) --------------------------------------------------


def test_cps_of_identity_and_polymorphic_double_type_check():
    x = relay.var("x", shape=[])
    run_infer_type(to_cps(run_infer_type(relay.Function([x], x))))
    t = relay.TypeVar("t")
    y, f = relay.var("y", t), relay.var("f", relay.FuncType([t], t))
    run_infer_type(to_cps(run_infer_type(relay.Function([f, y], f(f(y)), t, [t]))))


def test_cps_round_trip_of_recursion():
    mod = tvm.IRModule()
    Prelude(mod)
    nat_iterate = mod.get_global_var("nat_iterate")
    x, i = relay.var("x", T), relay.var("i", T)
    mod["main"] = relay.Function([i], nat_iterate(relay.Function([x], x + x),
                                                  _nat_expr(mod, 3))(i))
    mod = transform.InferType()(mod)
    mod["main"] = to_cps(mod["main"], mod=mod)
    mod = transform.InferType()(mod)
    mod["main"] = un_cps(mod["main"])
    iv = rand("float32", *SHAPE)
    out = relay.create_executor(mod=mod).evaluate()(iv)
    np.testing.assert_allclose(out.numpy(), 8 * iv.numpy(), rtol=1e-6)


def _destroys_references(func):
    """CPS, then PartialEvaluate and DCE, leave no reference allocation (TVM's cps_pe)."""
    cps = run_infer_type(to_cps(run_infer_type(func)))
    run_infer_type(un_cps(cps))
    out = run_opt_pass(cps, tvm.transform.Sequential(
        [transform.PartialEvaluate(), transform.InferType(),
         transform.DeadCodeElimination(inline_once=True, ignore_impurity=True)]))
    refs = []
    relay.analysis.post_order_visit(out, lambda e: refs.append(e) if isinstance(
        e, relay.RefCreate) else None)
    assert not refs


def test_cps_then_partial_evaluation_removes_references():
    f_ref = relay.Var("f_ref")
    one, two = relay.const(1.0), relay.const(2.0)
    cond = relay.var(shape=(), dtype="bool", name_hint="cond")  # TVM: "uint1", its bool
    if_expr = relay.If(cond, relay.RefWrite(f_ref, relay.Function([], one)),
                       relay.RefWrite(f_ref, relay.Function([], two)))
    stmt = relay.Let(f_ref, relay.RefCreate(relay.Function([], relay.const(0.0))),
                     relay.Let(relay.Var("x"), if_expr, relay.Call(relay.RefRead(f_ref), [])))
    _destroys_references(relay.Function([cond], stmt))

    g = run_infer_type(relay.Function([cond], relay.If(cond, one, two)))
    _destroys_references(gradient(g))

    x, y, z = (relay.var(n, shape=(1, 16)) for n in "xyz")
    c2 = relay.var("cond", shape=(), dtype="bool")
    h = run_infer_type(relay.Function([c2, x, y, z], relay.add(relay.If(c2, x, y), z)))
    _destroys_references(gradient(h))


# --- Defunctionalization (test_pass_defunctionalization.py) ---------------------------------


def _first_order(mod):
    """No call of the defunctionalized program takes or returns a function."""
    mod = transform.InferType()(mod)
    seen = set()

    def has_func(t):
        found = []
        stack = [t]
        while stack:
            u = stack.pop()
            if isinstance(u, relay.FuncType):
                found.append(u)
            elif isinstance(u, relay.TupleType):
                stack.extend(u.fields)
            elif isinstance(u, relay.TypeCall):
                stack.extend(u.args)
        return bool(found)

    bad = []
    todo = [mod["main"]]
    while todo:
        fn = todo.pop()

        def check(e):
            if isinstance(e, relay.Call) and not isinstance(e.op, relay.Function):
                if has_func(e.checked_type) or any(has_func(a.checked_type) for a in e.args):
                    bad.append(e)
            if isinstance(e, relay.GlobalVar) and e not in seen and e in mod.functions:
                seen.add(e)
                todo.append(mod[e])

        relay.analysis.post_order_visit(fn, check)
    assert not bad, [b.astext() for b in bad]


def _defunctionalized(mod):
    mod = transform.InferType()(mod)
    mod["main"] = transform.Defunctionalization(mod["main"], mod)
    mod = transform.InferType()(mod)
    _first_order(mod)
    return mod


def _to_list(mod, value):
    cons = mod.get_type("List")[1]
    out = []
    while value.tag == cons.tag:
        out.append(value.fields[0].numpy())
        value = value.fields[1]
    return out


def _from_list(mod, arr):
    _, cons, nil = mod.get_type("List")
    lst = nil()
    for a in arr:
        lst = cons(relay.const(a), lst)
    return relay.create_executor(mod=mod).evaluate(lst)


def test_defunctionalize_a_polymorphic_apply():
    mod = tvm.relay.parse("""
#[version = "0.0.5"]
def @simple[A, B](%f: fn(A) -> B, %xs: A) -> B {
  %f(%xs)
}
def @main(%l: Tensor[(5, 5), float32]) -> Tensor[(5, 5), float32] {
  %0 = fn[A](%x: A) -> A {
    %x
  };
  @simple(%0, %l)
}
""")
    out = _defunctionalized(mod)
    v = np.random.rand(5, 5).astype("float32")
    np.testing.assert_equal(relay.create_executor("debug", mod=mod).evaluate()(v).numpy(),
                            relay.create_executor("debug", mod=out).evaluate()(v).numpy())


_LIST = """
#[version = "0.0.5"]
type List[A] {
  Cons(A, List[A]),
  Nil,
}
def @id[A](%x: A) -> A {
  %x
}
"""


def test_defunctionalize_a_recursive_global_map():
    mod = tvm.relay.parse(_LIST + """
def @map[A, B](%f: fn(A) -> B, %xs: List[A]) -> List[B] {
  match (%xs) {
    Cons(%x, %rest) => Cons(%f(%x), @map(%f, %rest)),
    Nil => Nil,
  }
}
def @main(%l: List[float32]) -> List[float32] {
  @map(@id, %l)
}
""")
    out = _defunctionalized(mod)
    v = np.random.rand(10).astype("float32")
    ref = relay.create_executor("debug", mod=mod).evaluate(mod["main"])(_from_list(mod, v))
    got = relay.create_executor("debug", mod=out).evaluate()(_from_list(out, v))
    np.testing.assert_array_equal(_to_list(mod, ref), _to_list(out, got))


def test_defunctionalize_closures_building_a_recursive_datatype():
    # TVM's text binds the closure graph-style (``%0 = fn ...;``) inside the clause, which our
    # parser does not accept there; a let is the same program
    mod = tvm.relay.parse(_LIST + """
def @sum(%f: fn(int32) -> int32, %k: List[int32]) -> int32 {
  match (%k) {
    Cons(%x, %rest) => {
      let %g = fn(%n) {
        %x + %f(%n)
      };
      @sum(%g, %rest)
    },
    Nil => %f(0),
  }
}
def @main(%l: List[int32]) -> int32 {
  @sum(@id, %l)
}
""")
    out = _defunctionalized(mod)
    v = np.random.randint(1, 100, 10).astype("int32")
    ref = relay.create_executor("debug", mod=mod).evaluate(mod["main"])(_from_list(mod, v))
    got = relay.create_executor("debug", mod=out).evaluate()(_from_list(out, v))
    np.testing.assert_allclose(ref.numpy(), got.numpy())

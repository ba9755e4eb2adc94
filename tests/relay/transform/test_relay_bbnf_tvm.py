"""ToBasicBlockNormalForm on TVM v0.19's remaining cases (let, if, references, recursion,
closures, higher-order results, gradient of an if), restated here: the exact program where TVM
checks one, otherwise the basic-block property and the value."""

import numpy as np

import minitvm as tvm
from minitvm import relay
from minitvm.relay import transform
from minitvm.relay.analysis import check_basic_block_normal_form


def _opt(expr, passes):
    passes = passes if isinstance(passes, list) else [passes]
    mod = tvm.IRModule.from_expr(expr)
    with tvm.transform.PassContext(opt_level=3):
        mod = tvm.transform.Sequential(passes)(mod)
    return mod["main"] if isinstance(expr, relay.Function) else mod["main"].body


def _value(expr, mod=None):
    return relay.create_executor("debug", mod=mod).evaluate(expr).numpy()


def test_lets_already_in_basic_blocks_are_kept():
    four, three = relay.const(4.0, "float32"), relay.const(3.0, "float32")
    x = relay.Var("x")
    y = relay.Var("y")
    z = relay.Var("z")
    for body in [relay.Let(x, four, x),
                 relay.Let(y, four, relay.add(y, y)),
                 relay.Let(y, three, relay.Let(x, four, relay.Let(z, x + y, x + z)))]:
        typed = _opt(body, transform.InferType())
        out = _opt(typed, transform.ToBasicBlockNormalForm())
        assert tvm.ir.structural_equal(typed, out)
        check_basic_block_normal_form(out)
        np.testing.assert_allclose(_value(out), _value(typed))


def test_let_of_a_variable_is_kept_and_used():
    # let %x = 4f; let %y = %x; %x   -->   let %x = 4f; let %y = %x; %y
    x, y = relay.Var("x"), relay.Var("y")
    four = relay.const(4.0, "float32")
    before = _opt(relay.Let(x, four, relay.Let(y, x, x)), transform.InferType())
    x2, y2 = relay.Var("x"), relay.Var("y")
    want = _opt(relay.Let(x2, four, relay.Let(y2, x2, y2)), transform.InferType())
    out = _opt(before, transform.ToBasicBlockNormalForm())
    assert tvm.ir.structural_equal(out, want)
    check_basic_block_normal_form(out)
    assert _value(out) == 4.0


def _if_program(x):
    one, two = relay.const(1, "float32"), relay.const(2, "float32")
    shared = relay.add(x, one)
    return relay.If(relay.equal(x, two), relay.multiply(shared, two),
                    relay.multiply(shared, one))


def _if_expected(x):
    # the value both branches share is bound before the if; the condition stays inline
    one, two = relay.const(1, "float32"), relay.const(2, "float32")
    v1 = relay.var("v1")
    body = relay.If(relay.equal(x, two), relay.multiply(v1, two), relay.multiply(v1, one))
    return relay.Let(v1, relay.add(x, one), body)


def test_value_shared_by_both_branches_is_bound_above_the_if():
    x = relay.var("x", shape=(), dtype="float32")
    passes = [transform.ToBasicBlockNormalForm(), transform.InferType()]
    out = _opt(_if_program(x), passes)
    want = _opt(_if_expected(x), transform.InferType())
    assert tvm.ir.structural_equal(out, want, map_free_vars=True)
    check_basic_block_normal_form(out)

    fn_out = _opt(relay.Function([x], _if_program(x)), passes)
    fn_want = _opt(relay.Function([x], _if_expected(x)), transform.InferType())
    assert tvm.ir.structural_equal(fn_out, fn_want)
    check_basic_block_normal_form(fn_out)
    for v in (2.0, 5.0):
        a = np.array(v, "float32")
        fb = relay.create_executor("debug").evaluate(fn_out)
        np.testing.assert_allclose(fb(a).numpy(), (v + 1) * (2 if v == 2.0 else 1))


def test_references():
    i, iv, u, uv = relay.Var("i"), relay.Var("iv"), relay.Var("u"), relay.Var("uv")
    body = relay.add(iv, uv)
    body = relay.Let(uv, relay.RefRead(i), body)
    body = relay.Let(u, relay.RefWrite(i, relay.const(2)), body)
    body = relay.Let(iv, relay.RefRead(i), body)
    body = relay.Let(i, relay.RefCreate(relay.const(1)), body)
    assert _value(body) == 3
    out = _opt(body, transform.ToBasicBlockNormalForm())
    check_basic_block_normal_form(out)
    assert _value(out) == 3


def test_recursive_global():
    mod = tvm.IRModule()
    i64 = relay.TensorType((), "int64")
    f = relay.GlobalVar("f")
    n = relay.Var("n", i64)
    m = n * relay.const(2, "int64")
    body = relay.If(relay.equal(n, relay.const(0, "int64")), m,
                    m + f(n - relay.const(1, "int64")))
    mod[f] = relay.Function([n], body, i64, [])
    assert _value(f(relay.const(5, "int64")), mod) == 30
    mod = transform.ToBasicBlockNormalForm()(mod)
    check_basic_block_normal_form(mod[f])
    assert _value(f(relay.const(5, "int64")), mod) == 30


def test_function_and_no_bind_needed():
    x = relay.Var("x", relay.TensorType((), "float32"))
    f = relay.Function([x], x + x)
    out = _opt(f, transform.ToBasicBlockNormalForm())
    assert isinstance(out, relay.Function)
    check_basic_block_normal_form(out)
    four = relay.const(4.0, "float32")
    assert _value(relay.Call(out, [four])) == 8.0


def test_closures_sharing_a_value():
    x = relay.var("x", shape=(1,), dtype="float32")
    y = relay.var("y", shape=(1,), dtype="float32")
    z = relay.var("z", shape=(1,), dtype="float32")
    x2 = relay.add(x, x)
    top = relay.Function([x], relay.Tuple([relay.Function([y], relay.add(x2, y)),
                                           relay.Function([z], relay.add(x2, z))]))
    out = _opt(top, transform.ToBasicBlockNormalForm())
    check_basic_block_normal_form(out)
    a, b = np.array([1.5], "float32"), np.array([0.25], "float32")
    closures = relay.Call(out, [relay.const(a)])
    for k in (0, 1):
        picked = relay.Call(relay.TupleGetItem(closures, k), [relay.const(b)])
        np.testing.assert_allclose(_value(picked), 2 * a + b)


def test_if_choosing_between_closures():
    x = relay.var("x", dtype="float32", shape=(1,))
    s = relay.var("s", dtype="float32", shape=(1,))
    shared = relay.add(s, s)
    f = relay.Var("f", relay.FuncType([], relay.scalar_type("bool")))
    zv = relay.Var("z")
    body = relay.If(f(), relay.Function([x], relay.add(x, shared)),
                    relay.Function([zv], relay.add(zv, shared)))
    out = _opt(relay.Function([f, s], body), transform.ToBasicBlockNormalForm())
    check_basic_block_normal_form(out)


def test_gradient_of_an_if():
    x = relay.var("a", shape=(1, 16))
    y = relay.var("y", shape=(1, 16))
    cond = relay.var("cond", shape=(), dtype="uint1")
    net = relay.Function([cond, x, y], relay.add(x, relay.If(cond, x, x)))
    mod = tvm.IRModule.from_expr(net)
    mod = transform.ToBasicBlockNormalForm()(mod)
    mod = transform.InferType()(mod)
    mod["main"] = transform.gradient(mod["main"], mode="higher_order")
    grad = transform.ToBasicBlockNormalForm()(mod)
    check_basic_block_normal_form(grad["main"])
    check_basic_block_normal_form(mod["main"])
    a = np.random.default_rng(0).standard_normal((1, 16)).astype("float32")
    res = relay.create_executor("debug", mod=grad).evaluate()(np.array(True), a, a)
    np.testing.assert_allclose(res[0].numpy(), 2 * a, rtol=1e-6)
    np.testing.assert_allclose(res[1][1].numpy(), np.full((1, 16), 2.0), rtol=1e-6)

"""LambdaLift against the cases of TVM v0.19's test_pass_lambda_lift.py (restated: a nested
function without captures, a closure returned by a function, a let-bound recursive loop that
captures a parameter), each as Before/Expected plus the interpreter before and after."""

import numpy as np

import minitvm as tvm
from minitvm import relay
from minitvm.ir.structural import structural_equal
from minitvm.testing.fuzz.differential import run_interpreter


def _lift(mod):
    mod = relay.transform.InferType()(mod)
    text = mod.astext()
    out = relay.transform.LambdaLift()(mod)
    assert mod.astext() == text  # the input is not modified
    return mod, out


def _lifted(out) -> list:
    return sorted((gv for gv in out.functions if gv.name_hint.startswith("lifted_name")),
                  key=lambda g: g.name_hint)


def test_function_without_captures_becomes_a_global():
    """main(a, b) calls a local fn(c, d) { c + d } directly: the local function becomes one
    global, called by name with main's arguments (two functions in all, as in TVM)."""
    a, b = relay.var("a", shape=(10, 5)), relay.var("b", shape=(1, 5))
    c, d = relay.var("c", shape=(10, 5)), relay.var("d", shape=(1, 5))
    inner = relay.Function([c, d], relay.add(c, d))
    before = tvm.IRModule.from_expr(relay.Function([a, b], relay.Call(inner, [a, b])))
    mod, out = _lift(before)
    (gv,) = _lifted(out)
    assert len(out.functions) == 2
    c2, d2 = relay.var("c", shape=(10, 5)), relay.var("d", shape=(1, 5))
    a2, b2 = relay.var("a", shape=(10, 5)), relay.var("b", shape=(1, 5))
    expected = tvm.IRModule()
    expected[gv] = relay.Function([c2, d2], relay.add(c2, d2))
    expected["main"] = relay.Function([a2, b2], relay.Call(gv, [a2, b2]))
    expected = relay.transform.InferType()(expected)
    assert structural_equal(relay.transform.InferType()(out)["main"], expected["main"])
    assert structural_equal(out[gv].body, expected[gv].body, map_free_vars=True)
    rng = np.random.default_rng(0)
    xs = [rng.normal(size=(10, 5)).astype("float32"), rng.normal(size=(1, 5)).astype("float32")]
    np.testing.assert_allclose(run_interpreter(out, xs)[0], run_interpreter(mod, xs)[0])


def test_returned_closure_is_lifted_with_its_capture():
    """main() = (fn(y) { fn(x) { x + y } })(ones)(zeros): the outer function (no captures)
    and the inner closure (captures y: a global marked Closure=1 taking y and returning the
    inner function) both become globals -- three functions, as in TVM."""
    x, y = relay.var("x", shape=(2,)), relay.var("y", shape=(2,))
    inner = relay.Function([x], relay.add(x, y))
    outer = relay.Function([y], inner)
    clo = relay.Call(outer, [relay.ones((2,), "float32")])
    before = tvm.IRModule.from_expr(relay.Function([], relay.Call(clo, [relay.zeros((2,),
                                                                                   "float32")])))
    mod, out = _lift(before)
    assert len(out.functions) == 3
    closures = [gv for gv in _lifted(out) if out[gv].get_attr("Closure")]
    (cgv,) = closures
    (ogv,) = [gv for gv in _lifted(out) if gv is not cgv]
    captured = out[cgv]
    assert len(captured.params) == 1 and isinstance(captured.body, relay.Function)
    # the outer global returns the closure global applied to its own parameter
    y2 = relay.var("y", shape=(2,))
    expect_outer = relay.Function([y2], relay.Call(cgv, [y2]))
    assert structural_equal(out[ogv].body, relay.Call(cgv, [out[ogv].params[0]]))
    assert len(out[ogv].params) == len(expect_outer.params)
    np.testing.assert_allclose(run_interpreter(out, [])[0], np.ones(2, "float32"))


def test_recursive_loop_calls_its_global():
    """A let-bound while loop that captures main's %x: lifted to one Closure global taking
    x; the loop's recursive call and main's call both go through that global (two functions,
    as in TVM)."""
    x = relay.var("x", shape=(2,))
    i = relay.var("i", shape=(), dtype="int32")
    s = relay.var("s", shape=(2,))
    loop = relay.var("while_loop")
    one, ten = relay.const(1, "int32"), relay.const(10, "int32")
    body = relay.If(relay.less(i, ten), relay.Call(loop, [relay.add(i, one), relay.add(s, x)]),
                    s)
    func = relay.Function([i, s], body)
    main = relay.Function([x], relay.Let(loop, func, relay.Call(
        loop, [relay.const(0, "int32"), relay.zeros((2,), "float32")])))
    mod, out = _lift(tvm.IRModule.from_expr(main))
    assert len(out.functions) == 2
    (gv,) = _lifted(out)
    lifted = out[gv]
    assert lifted.get_attr("Closure") == 1 and len(lifted.params) == 1
    # inside: the recursive call is the global applied to the captured x, then to (i+1, s+x)
    rec = lifted.body.body.true_branch
    assert isinstance(rec.op, relay.Call) and rec.op.op is gv
    assert rec.op.args[0] is lifted.params[0]
    # main binds the loop to the global applied to its x and calls it
    let = out["main"].body
    assert structural_equal(let.value, relay.Call(gv, [out["main"].params[0]]))
    xv = np.array([0.5, -1.0], "float32")
    np.testing.assert_allclose(run_interpreter(out, [xv])[0], run_interpreter(mod, [xv])[0])
    np.testing.assert_allclose(run_interpreter(out, [xv])[0], 10 * xv)

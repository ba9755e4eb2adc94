"""DeadCodeElimination against the cases of TVM v0.19's test_pass_dead_code_elimination.py
(restated in our words): Before -> pass -> Expected, compared up to renaming of the free
variables, plus the interpreter before and after where the program computes values."""

import numpy as np

import minitvm as tvm
from minitvm import relay
from minitvm.ir.structural import structural_equal
from minitvm.relay.analysis import free_vars
from minitvm.testing.fuzz.differential import run_interpreter

F32 = relay.TensorType((), "float32")
I32 = relay.TensorType((), "int32")


def _dce(expr, inline_once=False):
    """Run the pass on ``expr`` as main's body (its free variables become parameters)."""
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(expr))
    text = mod.astext()
    out = relay.transform.DeadCodeElimination(inline_once)(mod)
    assert mod.astext() == text
    return mod, out["main"]


def _same(fn, expected_body):
    expected = relay.Function(free_vars(expected_body), expected_body)
    assert structural_equal(relay.Function(free_vars(fn.body), fn.body), expected,
                            map_free_vars=True)


def test_unused_let_is_dropped():
    x, y, z = (relay.var(n, I32) for n in "xyz")
    _, fn = _dce(relay.Let(x, y, z))
    _same(fn, z)


def test_used_let_stays():
    c = relay.var("c", F32)
    one = relay.const(1.0)
    mod, fn = _dce(relay.Let(c, one, relay.add(c, c)))
    c2 = relay.var("c", F32)
    _same(fn, relay.Let(c2, one, relay.add(c2, c2)))
    assert run_interpreter(mod, [])[0] == run_interpreter(tvm.IRModule.from_expr(fn), [])[0] == 2


def test_inline_once_inlines_single_uses():
    a, b, c, d = (relay.var(n, F32) for n in "abcd")
    _, fn = _dce(relay.Let(a, b, relay.Let(c, d, c)), inline_once=True)
    _same(fn, d)


def test_chain_of_unused_lets():
    a, b, c, d, e = (relay.var(n, F32) for n in "abcde")
    _, fn = _dce(relay.Let(a, b, relay.Let(c, d, e)))
    _same(fn, e)


def _recursive(use):
    """``let %f = fn (%n: int32, %data: float32) -> float32 { if (%n == 0) { %data } else
    { %f(%n - 1, log(%data)) } }; use(%f)``."""
    f = relay.var("f")
    n, data = relay.var("n", I32), relay.var("data", F32)
    body = relay.If(relay.equal(n, relay.const(0)), data,
                    relay.Call(f, [relay.subtract(n, relay.const(1)), relay.log(data)]))
    return relay.Let(f, relay.Function([n, data], body, F32), use(f))


def test_recursive_binding_in_use_stays():
    before = _recursive(lambda f: relay.Call(f, [relay.const(2), relay.const(10000.0)]))
    mod, fn = _dce(before)
    assert structural_equal(fn, mod["main"])  # nothing is dead
    want = np.log(np.log(np.float32(10000.0)))
    np.testing.assert_allclose(run_interpreter(tvm.IRModule.from_expr(fn), [])[0], want,
                               rtol=1e-6)


def test_unused_recursive_binding_is_dropped():
    a = relay.var("a", F32)
    three = relay.const(3.0)
    _, fn = _dce(_recursive(lambda f: relay.Let(a, relay.const(1.0), three)))
    assert structural_equal(fn.body, three)


def test_let_inside_an_operand():
    a = relay.var("a", F32)
    _, fn = _dce(relay.add(relay.Let(a, relay.const(1.0), relay.const(3.0)), relay.const(2.0)))
    assert structural_equal(fn.body, relay.add(relay.const(3.0), relay.const(2.0)))


def test_tuple_get_item_of_a_dead_let():
    t = relay.var("t", relay.TupleType([F32, F32]))
    a = relay.var("a")
    g = relay.TupleGetItem(t, 0)
    _, fn = _dce(g)
    _same(fn, g)
    _, fn = _dce(relay.TupleGetItem(relay.Let(a, relay.const(1.0), t), 0))
    t2 = relay.var("t", relay.TupleType([F32, F32]))
    _same(fn, relay.TupleGetItem(t2, 0))

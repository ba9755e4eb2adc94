"""PartialEvaluate builds TVM's residual programs: TVM v0.19's cases (test_pass_partial_eval.py)
restated in our own words — PartialEvaluate, then DeadCodeElimination(inline_once) as TVM's
``dcpe`` helper does, compared structurally with TVM's expected program; the cases TVM only runs
(references through ``if``, closures invalidated by a write) compare outputs."""

import numpy as np

import minitvm as tvm
from minitvm import relay
from minitvm.relay import op, transform
from minitvm.relay.prelude import Prelude
from minitvm.relay.testing import run_infer_type


def _opt(expr, passes):
    """``passes`` over ``expr`` in a module of its own; the function or its body back."""
    passes = passes if isinstance(passes, list) else [passes]
    mod = tvm.IRModule.from_expr(expr)
    with tvm.transform.PassContext(opt_level=3):
        mod = tvm.transform.Sequential(passes)(mod)
    main = mod["main"]
    return main if isinstance(expr, relay.Function) else main.body


def _dcpe(expr, mod=None, grad=False, ignore_impurity=False):
    passes = [transform.PartialEvaluate(), transform.InferType(),
              transform.DeadCodeElimination(inline_once=True, ignore_impurity=ignore_impurity),
              transform.InferType()]
    if grad:
        expr = transform.gradient(run_infer_type(expr))
    if mod is None:
        return _opt(expr, passes)
    mod["main"] = expr
    return tvm.transform.Sequential(passes)(mod)["main"]


def _tipe(expr):
    return _opt(expr, [transform.PartialEvaluate(), transform.InferType()])


def _nat_module():
    """A prelude module with ``nat.rly`` imported, as TVM's tests build it."""
    mod = tvm.IRModule()
    p = Prelude(mod)
    mod.import_from_std("nat.rly")
    return mod, p


def _nat_adt(mod):
    """``nat`` as a type-call builder (TVM's GlobalTypeVar is callable; ours is not) and z, s."""
    nat, z, s = mod.get_type("nat")
    return (lambda: relay.TypeCall(nat, [])), z, s


def _nat(mod, n):
    """The Peano numeral ``s(s(...z()))`` with ``n`` successors."""
    _, z, s = mod.get_type("nat")
    out = z()
    for _ in range(n):
        out = s(out)
    return out


def _run(expr, *args, mod=None):
    return relay.create_executor(mod=mod).evaluate(expr)(*args).numpy()


def test_tuple_projection_of_a_literal_tuple():
    t = relay.TypeVar("t")
    x = relay.Var("x", t)
    f = relay.Function([x], relay.TupleGetItem(relay.Tuple([relay.const(4.0), x]), 1), None, [t])
    expected = _opt(relay.Function([x], x, None, [t]), transform.InferType())
    tvm.ir.assert_structural_equal(_dcpe(f), expected)


def test_call_of_a_known_function_on_a_constant_folds():
    d = relay.Var("d", relay.TensorType([], "float32"))
    orig = relay.Function([d], d + d)(relay.const(4.0))
    tvm.ir.assert_structural_equal(_dcpe(orig), relay.const(8.0))


def test_reference_read_and_write_disappear():
    t = relay.TensorType([], "float32")
    d = relay.Var("d", t)
    r = relay.Var("r", relay.RefType(t))
    x = relay.Var("x")
    body = relay.Let(x, relay.RefWrite(r, relay.RefRead(r) * relay.RefRead(r)), relay.RefRead(r))
    square = relay.Function([d], relay.Let(r, relay.RefCreate(d), body))
    expected = _opt(relay.Function([d], d * d), transform.InferType())
    got = _dcpe(square, ignore_impurity=True)
    tvm.ir.assert_structural_equal(got, expected)
    v = np.array(3.0, "float32")
    np.testing.assert_allclose(_run(got, v), _run(run_infer_type(square), v))


def test_gradient_of_identity():
    d = relay.Var("d", relay.TensorType((10, 10), "float32"))
    got = _dcpe(relay.Function([d], d), grad=True, ignore_impurity=True)
    expected = relay.Function([d], relay.Tuple([d, relay.Tuple([op.ones_like(d)])]))
    tvm.ir.assert_structural_equal(got, _opt(expected, transform.InferType()))


def test_gradient_of_square():
    d = relay.Var("d", relay.TensorType((10, 10), "float32"))
    got = _dcpe(relay.Function([d], d * d), grad=True, ignore_impurity=True)
    x, x1 = relay.Var("x"), relay.Var("x1")
    grad = (op.zeros_like(d) + op.collapse_sum_like(x1 * d, d)
            + op.collapse_sum_like(x1 * d, d))
    body = relay.Let(x1, op.ones_like(x), relay.Tuple([x, relay.Tuple([grad])]))
    expected = relay.Function([d], relay.Let(x, d * d, body))
    tvm.ir.assert_structural_equal(got, _opt(expected, transform.InferType()))
    v = np.random.default_rng(0).standard_normal((10, 10)).astype("float32")
    fwd, (g,) = relay.create_executor().evaluate(got)(v)
    np.testing.assert_allclose(fwd.numpy(), v * v, rtol=1e-6)
    np.testing.assert_allclose(g.numpy(), 2 * v, rtol=1e-6)


def test_reference_updated_in_both_branches_of_an_if():
    d = relay.Var("d", relay.TensorType((), "bool"))
    r, u, eff = relay.Var("r"), relay.Var("u"), relay.Var("eff")
    update = relay.Function([], relay.RefWrite(r, relay.RefRead(r) + relay.RefRead(r)))
    body = relay.Let(eff, relay.If(d, u(), u()), relay.RefRead(r))
    f = relay.Function([d], relay.Let(r, relay.RefCreate(relay.const(1)), relay.Let(u, update,
                                                                                   body)))
    pe = _tipe(f)
    for flag in (True, False):
        assert _run(f, np.array(flag)) == 2 and _run(pe, np.array(flag)) == 2


def test_closure_reading_a_reference_after_a_write():
    d = relay.Var("d", relay.TensorType((), "bool"))
    r, u = relay.Var("r"), relay.Var("u")
    fet, obscured = relay.Var("fetch"), relay.Var("fetch_obscured")
    body = relay.If(d, obscured(), obscured())
    body = relay.Let(u, relay.RefWrite(r, relay.const(1)), body)
    body = relay.Let(obscured, relay.If(d, fet, fet), body)
    body = relay.Let(fet, relay.Function([], relay.RefRead(r)), body)
    f = relay.Function([d], relay.Let(r, relay.RefCreate(relay.const(0)), body))
    pe = _tipe(f)
    for flag in (True, False):
        assert _run(f, np.array(flag)) == 1 and _run(pe, np.array(flag)) == 1


def test_head_of_a_literal_list():
    mod = tvm.IRModule()
    p = Prelude(mod)
    t = relay.TypeVar("t")
    x = relay.Var("x", t)
    _, cons, nil = p.mod.get_type("List")
    hd = p.mod.get_global_var("hd")
    got = _dcpe(relay.Function([x], hd(cons(x, nil())), None, [t]), mod)
    expected = tvm.IRModule.from_expr(relay.Function([x], x, t, [t]))["main"]
    tvm.ir.assert_structural_equal(got, expected)


def test_map_of_identity_over_a_literal_list():
    mod = tvm.IRModule()
    p = Prelude(mod)
    _, cons, nil = p.mod.get_type("List")
    rmap = p.mod.get_global_var("map")
    f = relay.GlobalVar("f")
    t = relay.TypeVar("t")
    a = relay.Var("a", t)
    mod[f] = relay.Function([a], a, t, [t])
    lst = cons(relay.const(1), cons(relay.const(2), cons(relay.const(3), nil())))
    mod["main"] = relay.Function([], lst)
    expected = transform.InferType()(mod)["main"]
    got = _dcpe(relay.Function([], rmap(f, lst)), mod=mod)
    tvm.ir.assert_structural_equal(got.body, expected.body)


def test_endless_loop_is_left_as_a_call():
    mod = tvm.IRModule()
    t = relay.TypeVar("t")
    x = relay.Var("x", t)
    loop = relay.GlobalVar("loop")
    mod[loop] = relay.Function([x], loop(x), t, [t])
    mod["main"] = relay.Function([], relay.Call(loop, [relay.const(1)]))
    expected = transform.InferType()(mod)["main"].body
    got = _dcpe(relay.Function([], loop(relay.const(1))), mod=mod)
    tvm.ir.assert_structural_equal(got.body, expected)


def test_argument_swapping_loop_is_left_as_a_call():
    mod, p = _nat_module()
    nat = _nat_adt(mod)[0]
    x, y = relay.Var("x", nat()), relay.Var("y", nat())
    loop = relay.GlobalVar("loop")
    mod[loop] = relay.Function([x, y], loop(y, x), nat())
    prog = loop(_nat(mod, 1), _nat(mod, 2))
    got = _dcpe(relay.Function([], prog), mod=mod)
    tvm.ir.assert_structural_equal(prog, got.body)


def test_absolute_difference_of_numerals():
    mod, p = _nat_module()
    nat, z, s = _nat_adt(mod)
    x, y = relay.Var("x", nat()), relay.Var("y", nat())
    xp, yp = relay.Var("x'", nat()), relay.Var("y'", nat())
    diff = relay.GlobalVar("diff")
    inner = relay.Match(y, [relay.Clause(relay.PatternConstructor(z, []), x),
                            relay.Clause(relay.PatternConstructor(s, [relay.PatternVar(yp)]),
                                         diff(yp, xp))])
    mod[diff] = relay.Function([x, y], relay.Match(x, [
        relay.Clause(relay.PatternConstructor(z, []), y),
        relay.Clause(relay.PatternConstructor(s, [relay.PatternVar(xp)]), inner)]))
    got = _dcpe(relay.Function([], diff(_nat(mod, 7), _nat(mod, 3))), mod=mod)
    tvm.ir.assert_structural_equal(got.body, _nat(mod, 4))


def test_identity_on_numerals_by_match_by_function_and_at_top_level():
    mod, p = _nat_module()
    nat, z, s = _nat_adt(mod)
    x, y = relay.Var("x", nat()), relay.Var("y", nat())
    by_match = relay.GlobalVar("nat_id")
    mod[by_match] = relay.Function([x], relay.Match(x, [
        relay.Clause(relay.PatternConstructor(z, []), z()),
        relay.Clause(relay.PatternConstructor(s, [relay.PatternVar(y)]), s(y))]))
    got = _dcpe(relay.Function([], by_match(_nat(mod, 3))), mod=mod)
    tvm.ir.assert_structural_equal(got.body, _nat(mod, 3))

    mod, p = _nat_module()
    x = relay.Var("x", _nat_adt(mod)[0]())
    plain = relay.GlobalVar("nat_id")
    mod[plain] = relay.Function([x], x)
    got = _dcpe(relay.Function([], plain(_nat(mod, 3))), mod=mod)
    tvm.ir.assert_structural_equal(got.body, _nat(mod, 3))

    mod, p = _nat_module()
    nat, z, s = _nat_adt(mod)
    x = relay.Var("x", nat())
    top = relay.Match(_nat(mod, 3), [
        relay.Clause(relay.PatternConstructor(z, []), z()),
        relay.Clause(relay.PatternConstructor(s, [relay.PatternVar(x)]), s(x))])
    got = _dcpe(relay.Function([], top), mod=mod)
    tvm.ir.assert_structural_equal(got.body, _nat(mod, 3))


def test_nat_double():
    mod, p = _nat_module()
    double = mod.get_global_var("nat_double")
    got = _dcpe(relay.Function([], double(_nat(mod, 3))), mod=mod)
    tvm.ir.assert_structural_equal(got.body, _nat(mod, 6))


def test_concatenate_of_parameters_is_unchanged():
    t = relay.TensorType([10], "float32")
    x, y = relay.Var("x", t), relay.Var("x", t)
    orig = run_infer_type(relay.Function([x, y], op.concatenate([x, y], axis=0)))
    tvm.ir.assert_structural_equal(_dcpe(orig), orig)


def test_recursive_triangle_number_folds():
    x = relay.Var("x", relay.TensorType([], "int32"))
    f_var = relay.Var("f")
    f = relay.Function([x], relay.If(op.equal(x, relay.const(0)), relay.const(0),
                                     x + f_var(x - relay.const(1))))
    orig = run_infer_type(relay.Let(f_var, f, f_var(relay.const(10))))
    tvm.ir.assert_structural_equal(_dcpe(orig), relay.const(55))


def test_nat_definitions_in_a_normal_form_evaluate():
    mod, _ = _nat_module()
    mod = transform.ToANormalForm()(mod)
    out = transform.PartialEvaluate()(mod)
    assert out.get_global_var("nat_double") is not None


def test_tuple_pattern_match_folds():
    a, b = relay.Var("a"), relay.Var("b")
    clause = relay.Clause(relay.PatternTuple([relay.PatternVar(a), relay.PatternVar(b)]), a + b)
    x = relay.Match(relay.Tuple([relay.const(1), relay.const(1)]), [clause])
    tvm.ir.assert_structural_equal(_dcpe(x), relay.const(2))

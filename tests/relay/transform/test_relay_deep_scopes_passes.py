"""Issue 15: passes with their own scope hooks (DeadCodeElimination, EliminateCommonSubexpr,
FoldConstant, FoldScaleAxis, FuseOps, LabelOps, LambdaLift, ToGraphNormalForm,
ToBasicBlockNormalForm) on closures nested thousands deep and on long let chains, at the default
recursion limit. Their hooks run as generators on one explicit stack (relay/scoped_functor.py)."""

import sys

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.relay.expr import Function, Let
from minitvm.relay.scoped_functor import ScopedMutator, ScopedVisitor
from minitvm.testing.fuzz.differential import make_pass, run_interpreter

DEPTH = 10_000
SLOW_DEPTH = 2_000  # LabelOps and LambdaLift hash each function: a few ms per level


def nested_closures(n: int) -> tvm.IRModule:
    """``fn (%x) { let %f0 = fn (%p0) { let %f1 = fn (%p1) { ... }; %f1(%p0) }; %f0(%x) }``
    with ``%p<n-1> + %x`` at the bottom: main(x) = 2 * x."""
    x = relay.var("x", shape=(2,), dtype="float32")
    ps = [relay.var(f"p{i}", shape=(2,), dtype="float32") for i in range(n)]
    fs = [relay.var(f"f{i}") for i in range(n)]
    body = relay.add(ps[-1], x)
    for i in range(n - 1, 0, -1):
        body = relay.Let(fs[i], relay.Function([ps[i]], body), relay.Call(fs[i], [ps[i - 1]]))
    main = relay.Function([x], relay.Let(fs[0], relay.Function([ps[0]], body),
                                         relay.Call(fs[0], [x])))
    return relay.transform.InferType()(tvm.IRModule.from_expr(main))


def let_chain(n: int) -> tvm.IRModule:
    """``let %v0 = x + 1; let %v1 = %v0 + 1; ...; %v<n-1>``: main(x) = x + n."""
    x = relay.var("x", shape=(2,), dtype="float32")
    vs = [relay.var(f"v{i}") for i in range(n)]
    body = vs[-1]
    for i in range(n - 1, -1, -1):
        body = relay.Let(vs[i], relay.add(x if i == 0 else vs[i - 1], relay.const(1.0)), body)
    return relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x], body)))


@pytest.fixture(scope="module")
def deep():
    assert sys.getrecursionlimit() <= 1000 or pytest.skip("a raised recursion limit hides it")
    return nested_closures(DEPTH)


def _run(name, mod):
    with tvm.transform.PassContext(opt_level=3):
        return make_pass(name)(mod)


def _depth(fn) -> int:
    """How many let-bound closures are nested in ``fn`` (iteratively)."""
    n, e = 0, fn.body
    while isinstance(e, Let) and isinstance(e.value, Function):
        n += 1
        e = e.value.body
    return n


X = np.array([1.0, -2.0], "float32")


@pytest.mark.parametrize("name", ["DeadCodeElimination", "EliminateCommonSubexpr",
                                  "FoldConstant", "FoldScaleAxis", "FuseOps",
                                  "ToBasicBlockNormalForm"])
def test_pass_keeps_ten_thousand_nested_closures(deep, name):
    out = _run(name, deep)  # RecursionError at 250-400 levels before
    assert _depth(out["main"]) == DEPTH  # every closure is still there, nested as it was
    typed = relay.transform.InferType()(out)  # module passes may leave the types unset
    assert str(typed["main"].checked_type.ret_type) == "Tensor[(2), float32]"


def test_to_graph_normal_form_substitutes_every_closure(deep):
    out = _run("ToGraphNormalForm", deep)
    e, n = out["main"].body, 0
    while isinstance(e, relay.Call) and isinstance(e.op, Function):  # fn(..){...}(%p)
        n += 1
        e = e.op.body
    assert n == DEPTH and not isinstance(e, Let)


def test_label_ops_labels_every_nested_closure():
    mod = nested_closures(SLOW_DEPTH)
    out = _run("LabelOps", mod)
    fn, hashes = out["main"], set()
    assert fn.get_attr("hash") is not None
    e = fn.body
    while isinstance(e, Let):
        hashes.add(e.value.get_attr("hash"))
        e = e.value.body
    assert len(hashes) == SLOW_DEPTH and None not in hashes  # labelled, and told apart
    again = _run("LabelOps", mod)
    assert again["main"].get_attr("hash") == fn.get_attr("hash")  # deterministic


def test_lambda_lift_lifts_every_nested_closure():
    mod = nested_closures(SLOW_DEPTH)
    out = _run("LambdaLift", mod)
    assert len(out.functions) == SLOW_DEPTH + 1  # main and one global per closure
    small = nested_closures(40)
    np.testing.assert_allclose(run_interpreter(_run("LambdaLift", small), [X])[0], 2 * X)


@pytest.mark.parametrize("name", ["DeadCodeElimination", "EliminateCommonSubexpr",
                                  "FoldConstant", "FoldScaleAxis", "FuseOps", "LabelOps",
                                  "LambdaLift", "ToGraphNormalForm", "ToBasicBlockNormalForm"])
def test_values_kept_on_nested_closures(name):
    """Numerically: the interpreter gives 2 * x before and after (the interpreter itself is
    slow on deep closures, so 60 levels)."""
    mod = nested_closures(60)
    np.testing.assert_allclose(run_interpreter(_run(name, mod), [X])[0], 2 * X)


@pytest.mark.parametrize("name", ["DeadCodeElimination", "EliminateCommonSubexpr",
                                  "FoldConstant", "FuseOps", "ToGraphNormalForm",
                                  "ToBasicBlockNormalForm", "LambdaLift", "LabelOps",
                                  "ToANormalForm"])
def test_long_let_chain(name):
    """20,000 lets: linear passes take seconds; a quadratic one (ToANormalForm rebuilt the
    whole chain below every let: 235 s at 2,000) would not finish."""
    n = 20_000
    out = _run(name, let_chain(n))
    fn = out["main"]
    # the chain's n additions are all still there (as lets, or as one dataflow chain)
    adds, stack, seen = 0, [fn.body], set()
    while stack:
        e = stack.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, relay.Call) and getattr(e.op, "name", None) == "add":
            adds += 1
        if isinstance(e, relay.Call) and isinstance(e.op, Function):
            stack.append(e.op.body)  # a fused group
        if isinstance(e, Let):
            stack.extend((e.value, e.body))
        else:
            from minitvm.relay.expr_functor import dataflow_children

            stack.extend(dataflow_children(e))
    assert adds == n


def test_scoped_visitor_visits_in_the_recursive_order():
    """A ScopedVisitor (generator hooks on the explicit stack) meets the nodes in the order the
    recursive hooks would; a ScopedMutator that changes nothing returns the same function."""
    from minitvm.relay.expr_functor import ExprVisitor
    from minitvm.testing.fuzz import generate_program

    class Rec(ExprVisitor):
        _expand_scopes = False
        _expand_dataflow = False

        def __init__(self):
            super().__init__()
            self.order = []

        def visit(self, e):
            first = e not in self.memo_map
            out = super().visit(e)
            if first and not isinstance(e, tvm.ir.Op):
                self.order.append(e)
            return out

    class Gen(ScopedVisitor):
        def __init__(self):
            super().__init__()
            self.order = []

        def gen_function(self, fn):
            yield from self.base_gen_function(fn)

        def visit_var(self, v):
            self.order.append(v)

        def visit_call(self, c):
            super().visit_call(c)
            self.order.append(c)

    for seed in (1, 7, 19, 62):
        fn = generate_program(seed).mod["main"]
        r, g = Rec(), Gen()
        r.visit(fn)
        g.visit(fn)
        kinds = (relay.Var, relay.Call)
        assert [id(e) for e in r.order if isinstance(e, kinds)] == [id(e) for e in g.order]
        assert ScopedMutator().visit(fn) is fn

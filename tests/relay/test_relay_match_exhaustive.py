"""InferType rejects a complete ``match`` that misses cases, naming them (as TVM's type
checker does via unmatched_cases); ``match?`` stays partial."""

import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.ir.diagnostics import RelayTypeError
from minitvm.relay.prelude import Prelude

I32 = relay.scalar_type("int32")


def _pc(ctor, *pats):
    return relay.PatternConstructor(ctor, list(pats))


def _infer(p, fn):
    p.mod["f"] = fn
    return relay.transform.InferType()(p.mod)


@pytest.fixture(scope="module")
def prelude():
    return Prelude(tvm.IRModule())


def test_complete_match_missing_nil_is_rejected(prelude):
    p = prelude
    x, h = relay.Var("x", p.l(I32)), relay.Var("h")
    clause = relay.Clause(_pc(p.cons, relay.PatternVar(h), relay.PatternWildcard()), h)
    with pytest.raises(RelayTypeError, match="does not handle the following cases: Nil"):
        _infer(p, relay.Function([x], relay.Match(x, [clause])))
    # the same clause in a partial match is fine
    mod = _infer(p, relay.Function([x], relay.Match(x, [clause], complete=False)))
    assert mod["f"].checked_type == relay.FuncType([p.l(I32)], I32)


def test_nested_missing_case_is_named(prelude):
    p = prelude
    x = relay.Var("x", p.l(I32))
    w = relay.PatternWildcard
    clauses = [relay.Clause(_pc(p.nil), relay.const(0)),
               relay.Clause(_pc(p.cons, w(), _pc(p.cons, w(), w())), relay.const(2))]
    with pytest.raises(RelayTypeError, match=r"following cases: Cons\(_, Nil\)"):
        _infer(p, relay.Function([x], relay.Match(x, clauses)))
    # adding the missing clause makes it exhaustive
    clauses.append(relay.Clause(_pc(p.cons, w(), _pc(p.nil)), relay.const(1)))
    _infer(p, relay.Function([x], relay.Match(x, clauses)))


def test_tuple_patterns(prelude):
    p = prelude
    x = relay.Var("x", relay.TupleType([p.l(I32), p.l(I32)]))
    w = relay.PatternWildcard
    clauses = [relay.Clause(relay.PatternTuple([_pc(p.nil), w()]), relay.const(0)),
               relay.Clause(relay.PatternTuple([w(), _pc(p.nil)]), relay.const(1))]
    with pytest.raises(RelayTypeError, match=r"following cases: \(Cons\(_, _\), Cons\(_, _\)\)"):
        _infer(p, relay.Function([x], relay.Match(x, clauses)))


def test_deep_pattern_error_without_recursion(prelude):
    p = prelude
    w = relay.PatternWildcard
    depth = 1100  # past the default recursion limit; the cases found grow quadratically
    pat = _pc(p.nil)
    for _ in range(depth):
        pat = _pc(p.cons, w(), pat)
    x = relay.Var("x", p.l(I32))
    clauses = [relay.Clause(_pc(p.nil), relay.const(0)), relay.Clause(pat, relay.const(1))]
    with pytest.raises(RelayTypeError) as err:
        _infer(p, relay.Function([x], relay.Match(x, clauses)))
    msg = str(err.value)
    # lists of every length up to the clause's, then the longer ones; cut short after ten
    assert "following cases: Cons(_, Nil), Cons(_, Cons(_, Nil)), " in msg
    assert f"... ({depth - 10} more)" in msg


def test_long_program_with_complete_matches(prelude):
    """100,000 let bindings, every 10th a complete match: checked without recursion, each
    match on its own (the check costs what its clauses cost, not what the program does)."""
    p = prelude
    x = relay.Var("x", p.l(I32))

    def head_or_zero():
        hv = relay.Var("hv")
        return relay.Match(x, [relay.Clause(_pc(p.nil), relay.const(0)),
                               relay.Clause(_pc(p.cons, relay.PatternVar(hv),
                                                relay.PatternWildcard()), hv)])

    n = 100_000
    vs = [relay.Var(f"v{i}") for i in range(n)]
    body = vs[-1]
    for i in range(n - 1, -1, -1):
        value = head_or_zero() if i % 10 == 0 else relay.add(vs[i - 1], relay.const(1))
        body = relay.Let(vs[i], value, body)
    mod = _infer(p, relay.Function([x], body))
    assert mod["f"].checked_type == relay.FuncType([p.l(I32)], I32)

"""Scope computation of the normal-form passes: jump-pointer common ancestors and linear time."""

import random
import sys

import minitvm as tvm
from minitvm import relay
from minitvm.relay.transform.to_a_normal_form import _ancestor, _lca, _Scope


def _naive_lca(a, b):
    seen = set()
    while a is not None:
        seen.add(id(a))
        a = a.parent
    while id(b) not in seen:
        b = b.parent
    return b


def test_lca_matches_walking_up_on_random_trees():
    rng = random.Random(0)
    for _ in range(20):
        nodes = [_Scope()]
        for _ in range(300):
            nodes.append(_Scope(rng.choice(nodes[-20:] if rng.random() < 0.7 else nodes)))
        for _ in range(300):
            a, b = rng.choice(nodes), rng.choice(nodes)
            assert _lca(a, b) is _naive_lca(a, b)


def _let_chain(n):
    x = relay.var("x", shape=(2,))
    vs = [relay.var(f"v{i}") for i in range(n)]
    body = vs[-1]
    for i in reversed(range(n)):
        body = relay.Let(vs[i], relay.add(vs[i - 1] if i else x, x), body)
    return tvm.IRModule.from_expr(relay.Function([x], body))


def test_common_ancestor_in_a_100k_deep_chain_takes_logarithmic_steps():
    chain = [_Scope()]
    for _ in range(100_000):
        chain.append(_Scope(chain[-1]))
    steps = []

    def tracer(frame, event, arg):
        if frame.f_code in (_ancestor.__code__, _lca.__code__) and event == "line":
            steps.append(1)
        return tracer

    sys.settrace(tracer)
    try:
        found = _lca(chain[-1], chain[3])
    finally:
        sys.settrace(None)
    assert found is chain[3]
    assert len(steps) < 400  # walking up one level at a time takes 100,000


def test_basic_block_form_of_a_long_let_chain():
    # ``add`` and ``x`` are used at every depth of the chain
    mod = relay.transform.InferType()(_let_chain(20_000))
    out = relay.transform.ToBasicBlockNormalForm()(mod)
    tvm.ir.assert_structural_equal(out, mod)

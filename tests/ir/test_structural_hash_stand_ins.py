"""``structural_hash(..., stand_ins=...)``: sub-nodes hashed as the GlobalVars standing for
them, exactly as the program rebuilt with those GlobalVars in their place hashes (LabelOps
labels a function with each nested function standing for its label this way)."""

import sys

import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.ir.structural import structural_hash


def _nested():
    a = relay.var("a", shape=(2,))
    return relay.Function([a], relay.negative(a)).with_attr("Primitive", 1)


def _chain(n, callee, x):
    y = x
    for _ in range(n):
        y = relay.Call(callee, [y])
    return y


def test_a_stand_in_hashes_as_the_program_rebuilt_around_it():
    f, g = _nested(), _nested()
    x = relay.var("x", shape=(2,))
    body = relay.add(relay.Call(f, [x]), relay.Call(g, [relay.Call(f, [x])]))
    fa, ga = tvm.ir.GlobalVar("labelled_a"), tvm.ir.GlobalVar("labelled_b")
    stubbed = relay.add(relay.Call(fa, [x]), relay.Call(ga, [relay.Call(fa, [x])]))
    got = structural_hash(relay.Function([x], body), stand_ins={f: fa, g: ga})
    assert got == structural_hash(relay.Function([x], stubbed))
    # the stand-in's name is what counts: another label, another hash
    other = structural_hash(relay.Function([x], body),
                            stand_ins={f: fa, g: tvm.ir.GlobalVar("labelled_c")})
    assert other != got
    # without stand-ins the functions themselves are hashed
    assert structural_hash(relay.Function([x], body)) != got


def test_a_stand_in_must_be_a_named_node():
    f = _nested()
    x = relay.var("x", shape=(2,))
    with pytest.raises(TypeError, match="stand-in must be a node compared by its name"):
        structural_hash(relay.Function([x], relay.Call(f, [x])), stand_ins={f: relay.const(1)})


def test_stand_ins_in_a_100000_call_chain_at_the_default_recursion_limit():
    f = _nested()
    gv = tvm.ir.GlobalVar("labelled_f")
    x = relay.var("x", shape=(2,))
    n = 100_000
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)
    try:
        got = structural_hash(relay.Function([x], _chain(n, f, x)), stand_ins={f: gv})
        want = structural_hash(relay.Function([x], _chain(n, gv, x)))
    finally:
        sys.setrecursionlimit(old)
    assert got == want

"""detect_feature: the language features a program uses."""

from __future__ import annotations

import minitvm as tvm
from minitvm import relay
from minitvm.relay.analysis import Feature, detect_feature


def test_dataflow_graph():
    x = relay.var("x", shape=(2,))
    a = relay.add(x, x)
    f = relay.Function([x], relay.multiply(a, a))
    assert detect_feature(f) == {Feature.fVar, Feature.fOp, Feature.fCall, Feature.fFunction,
                                 Feature.fGraph}
    tree = relay.Function([x], relay.multiply(relay.add(x, x), relay.const(2.0)))
    assert Feature.fGraph not in detect_feature(tree)  # shared atoms (x) do not count
    assert Feature.fConstant in detect_feature(tree)


PROGRAM = """#[version = "0.0.5"]
type Box[A] {
  Box(A),
}
def @f(%x: Tensor[(2), float32]) -> Tensor[(2), float32] {
  let %r = ref(%x);
  let %w = ref_write(%r, add(%x, %x));
  match (Box(ref_read(%r))) {
    Box(%y) => if (True) { %y } else { @f(%y) },
  }
}
"""


def test_module_and_expression():
    mod = relay.fromtext(PROGRAM)
    feats = detect_feature(mod)
    for f in (Feature.fLet, Feature.fIf, Feature.fMatch, Feature.fConstructor,
              Feature.fRefCreate, Feature.fRefRead, Feature.fRefWrite, Feature.fGlobalVar,
              Feature.fCall):
        assert f in feats
    x = relay.var("x", shape=(2,))
    t = relay.Function([x], relay.TupleGetItem(relay.Tuple([x, x]), 0))
    both = detect_feature(t, mod)
    assert {Feature.fTuple, Feature.fTupleGetItem} <= both
    assert detect_feature(mod, t) == both


def test_let_rec():
    x = relay.var("x", shape=(), dtype="int32")
    f = relay.var("f")
    loop = relay.Function([x], relay.If(relay.equal(x, relay.const(0)), x,
                                        relay.Call(f, [relay.subtract(x, relay.const(1))])))
    body = relay.Let(f, loop, relay.Call(f, [relay.const(3)]))
    feats = detect_feature(body)
    assert Feature.fLetRec in feats and Feature.fLet in feats
    plain = relay.Let(f, relay.Function([x], x), relay.Call(f, [relay.const(3)]))
    assert Feature.fLetRec not in detect_feature(plain)


def test_gradient_output_uses_references():
    x = relay.var("x", shape=(2,))
    g = relay.transform.gradient(relay.Function([x], relay.exp(x)))
    assert {Feature.fRefCreate, Feature.fRefWrite} <= detect_feature(g)
    g1 = relay.transform.gradient(relay.Function([x], relay.exp(x)), mode="first_order")
    assert Feature.fRefCreate not in detect_feature(g1)


def test_errors_and_deep_chain():
    x = relay.var("x", shape=(2,))
    import pytest

    with pytest.raises(TypeError, match="not two of a kind"):
        detect_feature(x, x)
    e = x
    for _ in range(100_000):
        e = relay.negative(e)
    assert Feature.fCall in detect_feature(tvm.IRModule.from_expr(relay.Function([x], e)))

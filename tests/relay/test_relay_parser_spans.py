"""The Relay parser attaches source spans (name, line, column) to what it builds, as TVM's does;
passes that rebuild a node keep its span; spans never take part in structural equality."""

import warnings

import minitvm as tvm
from minitvm import relay

TEXT = '''#[version = "0.0.5"]
def @main(%x: Tensor[(2, 3), float32], %y: Tensor[(2, 3), float32]) {
  %0 = add(%x, %y);
  let %z = multiply(%0, 2f);
  if (True) { nn.relu(%z) } else { %z }
}'''


def _loc(span):
    return span.source_name.name, span.line, span.column


def test_parsed_nodes_carry_spans():
    mod = tvm.relay.fromtext(TEXT, source_name="model.rly")
    f = mod["main"]
    assert _loc(f.span) == ("model.rly", 2, 1)
    assert _loc(f.params[1].span) == ("model.rly", 2, 40)
    let = f.body
    assert _loc(let.span) == ("model.rly", 4, 3)
    assert _loc(let.var.span) == ("model.rly", 4, 7)
    mul = let.value
    assert _loc(mul.span) == ("model.rly", 4, 12)
    assert _loc(mul.args[0].span) == ("model.rly", 3, 8)  # the %0 binding: add(...)
    assert _loc(mul.args[1].span) == ("model.rly", 4, 25)  # the literal 2f
    assert _loc(let.body.span) == ("model.rly", 5, 3)  # the if
    assert _loc(let.body.true_branch.span) == ("model.rly", 5, 15)
    assert str(let.body.span) == "model.rly:5:3"


def test_parse_default_source_name():
    mod = relay.parse(TEXT)
    assert mod["main"].body.span.source_name.name == "from_string"


def test_spans_survive_passes_that_rebuild_nodes():
    mod = relay.fromtext(TEXT, source_name="model.rly")
    # FoldConstant drops the if and rebuilds the function around the kept nodes
    out = relay.transform.FoldConstant()(mod)
    body = out["main"].body
    assert _loc(body.span) == ("model.rly", 4, 3)
    assert _loc(body.body.span) == ("model.rly", 5, 15)
    # SimplifyExpr rewrites %0 * 2 nowhere but rebuilds the calls it visits
    out = relay.transform.SimplifyExpr()(out)
    assert _loc(out["main"].body.value.span) == ("model.rly", 4, 12)


def test_structural_equality_ignores_spans():
    a = relay.fromtext(TEXT, source_name="a.rly")
    b = relay.fromtext("\n\n" + TEXT.replace("\n", "\n  "), source_name="b.rly")
    assert a["main"].span != b["main"].span
    tvm.ir.assert_structural_equal(a["main"], b["main"])
    assert tvm.ir.structural_hash(a["main"]) == tvm.ir.structural_hash(b["main"])


def test_span_check_warns_only_without_spans():
    parsed = relay.fromtext(TEXT)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        relay.SpanCheck()(parsed)
    x = relay.var("x", shape=(2,))
    built = tvm.IRModule.from_expr(relay.Function([x], relay.add(x, x)))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        relay.SpanCheck()(built)
    assert any("no span" in str(w.message) for w in caught)

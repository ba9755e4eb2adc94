"""CapturePostDfsIndexInSpans (TVM v0.19's debugging pass): TVM's test case restated (every
``index:i:d`` span TVM prints for a dense+add / inline compiler-function program), plus lets,
ifs, an unused let variable, recursion, the program left unchanged otherwise, and a deep chain."""

import numpy as np

import minitvm as tvm
from minitvm import relay


def _spans(func_or_expr):
    return str(func_or_expr.span)


def _main(expr_params, body):
    mod = tvm.IRModule.from_expr(relay.Function(expr_params, body))
    mod = relay.transform.InferType()(mod)
    return mod, relay.transform.CapturePostDfsIndexInSpans()(mod)


def test_tvm_case_indices_and_dominators():
    meta = {"relay.Constant": [relay.const(np.zeros(s, "float32"))
                               for s in [(10, 8), (10,), (3, 4, 5)]]}
    src = """#[version = "0.0.5"]
def @main(%a: Tensor[(6, 8), float32], %b: Tensor[(3, 4, 5), float32]) {
  %0 = nn.dense(%a, meta[relay.Constant][0], units=10);
  %1 = add(%0, meta[relay.Constant][1]);
  %2 = fn(%q0: Tensor[(3, 4, 5), float32], %q1: Tensor[(3, 4, 5), float32], Inline=1,
          Compiler="ext_b", global_symbol="ext_b_0", Primitive=1) {
    %9 = fn (%d0: Tensor[(3, 4, 5), float32], %d1: Tensor[(3, 4, 5), float32],
             Composite="ext_b.batch_matmul") {
      nn.batch_matmul(%d0, %d1, transpose_b=True)
    };
    %9(%q0, %q1)
  };
  %3 = %2(%b, meta[relay.Constant][2]);
  (%1, %3)
}
"""
    before = relay.parse(src, "from_string", None, meta)
    after = relay.transform.CapturePostDfsIndexInSpans()(before)
    tvm.ir.assert_structural_equal(after, before)  # spans take no part in equality
    f = after["main"]
    tup = f.body
    add, call3 = tup.fields
    dense = add.args[0]
    outer = call3.op
    inner_call = outer.body
    inner = inner_call.op
    got = {
        "a": f.params[0], "b": f.params[1], "c0": dense.args[1], "dense": dense,
        "c1": add.args[1], "add": add, "q0": outer.params[0], "q1": outer.params[1],
        "d0": inner.params[0], "d1": inner.params[1], "bmm": inner.body, "inner": inner,
        "inner_call": inner_call, "outer": outer, "c2": call3.args[1], "call3": call3,
        "tuple": tup, "main": f,
    }
    # TVM's expected printout, node by node (ops nn.dense/add/batch_matmul take 3, 2, 12)
    want = {
        "a": "0:5", "b": "1:18", "c0": "4:5", "dense": "5:7", "c1": "6:7", "add": "7:19",
        "q0": "8:15", "q1": "9:15", "d0": "10:13", "d1": "11:13", "bmm": "13:14",
        "inner": "14:15", "inner_call": "15:16", "outer": "16:18", "c2": "17:18",
        "call3": "18:19", "tuple": "19:20", "main": "20:-1",
    }
    assert {k: _spans(v) for k, v in got.items()} == {k: "index:" + v for k, v in want.items()}
    assert dense.args[0] is f.params[0]  # uses share the rewritten parameter
    assert tup.checked_type == before["main"].body.checked_type


def test_let_value_var_then_body():
    x = relay.var("x", shape=(2,))
    y = relay.var("y")
    before, after = _main([x], relay.Let(y, relay.exp(x), relay.add(y, y)))
    f = after["main"]
    let = f.body
    assert [_spans(e) for e in (f.params[0], let.value, let.var, let.body, let, f)] == [
        "index:0:2", "index:2:3", "index:3:5", "index:5:6", "index:6:7", "index:7:-1"]
    assert let.body.args[0] is let.var and let.body.args[1] is let.var
    data = np.array([0.5, -1.0], "float32")
    run = [relay.create_executor("debug", mod=m).evaluate()(data).numpy() for m in (before, after)]
    np.testing.assert_allclose(run[0], run[1])


def test_if_branches_and_shared_input():
    c = relay.var("c", shape=(), dtype="bool")
    x = relay.var("x", shape=(2,))
    _, after = _main([c, x], relay.If(c, relay.exp(x), x))
    f = after["main"]
    ite = f.body
    assert [_spans(e) for e in (f.params[0], f.params[1], ite.true_branch, ite, f)] == [
        "index:0:4", "index:1:4", "index:3:4", "index:4:5", "index:5:-1"]


def test_unused_let_variable_has_no_dominator():
    x = relay.var("x", shape=(2,))
    y = relay.var("y")
    _, after = _main([x], relay.Let(y, relay.exp(x), x))
    let = after["main"].body
    assert _spans(let.var) == "index:3:-1"
    assert _spans(let.value) == "index:2:3"
    assert _spans(after["main"].params[0]) == "index:0:-1"


def test_recursive_let_is_indexed_after_its_value():
    n = relay.var("n", shape=(), dtype="int32")
    f = relay.var("f")
    i = relay.var("i", shape=(), dtype="int32")
    body = relay.If(relay.less(i, relay.const(1)), i,
                    f(relay.subtract(i, relay.const(1))))
    loop = relay.Function([i], body)
    before, after = _main([n], relay.Let(f, loop, f(n)))
    let = after["main"].body
    fn_index = int(_spans(let.value).split(":")[1])
    var_index = int(_spans(let.var).split(":")[1])
    assert var_index == fn_index + 1  # the let-rec var is not counted inside its function
    data = np.array(5, "int32")
    run = [relay.create_executor("debug", mod=m).evaluate()(data).numpy() for m in (before, after)]
    assert run[0] == run[1] == 0


def test_deep_chain():
    x = relay.var("x", shape=(2,))
    e = x
    for _ in range(100_000):
        e = relay.negative(e)
    _, after = _main([x], e)
    body = after["main"].body
    # x 0, negative op 1, then one call per link: the last is 100_001, dominated by main
    assert _spans(body) == "index:100001:100002"
    assert _spans(body.args[0]) == "index:100000:100001"

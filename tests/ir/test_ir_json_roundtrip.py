"""tvm.ir.save_json / load_json: a JSON node graph of IR values that reads back to an equal
value — structure, sharing, identities, constants, types and spans — iteratively (100,000-node
chains at the default recursion limit)."""

import json
import sys

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay


def roundtrip(node):
    text = tvm.ir.save_json(node)
    return text, tvm.ir.load_json(text)


def test_format_is_a_node_graph():
    x = relay.var("x", shape=(2,))
    text, _ = roundtrip(relay.Function([x], relay.add(x, relay.const(np.ones(2, "float32")))))
    graph = json.loads(text)
    assert set(graph) == {"root", "nodes", "b64ndarrays", "attrs"}
    assert all("type_key" in n for n in graph["nodes"])
    assert graph["nodes"][graph["root"]]["type_key"].endswith(":Function")
    assert len(graph["b64ndarrays"]) == 1 and graph["attrs"]["tvm_version"]


def test_expression_sharing_and_identity_survive():
    x = relay.var("x", shape=(3, 4))
    shared = relay.nn.relu(relay.add(x, relay.const(1.0)))
    body = relay.Tuple([relay.multiply(shared, shared), shared])
    f = relay.Function([x], body)
    _, g = roundtrip(f)
    tvm.ir.assert_structural_equal(g, f)
    assert g is not f and g.body is not f.body
    # the shared call is one object in the copy too, and the parameter is the body's variable
    assert g.body.fields[0].args[0] is g.body.fields[0].args[1] is g.body.fields[1]
    assert g.body.fields[1].args[0].args[0] is g.params[0]


def test_typed_module_with_adts_and_recursion():
    mod = relay.fromtext("""#[version = "0.0.5"]
type List[A] {
  Cons(A, List[A]),
  Nil,
}
def @length[A](%xs: List[A]) -> int32 {
  match (%xs) {
    Cons(_, %rest) => add(1, @length(%rest)),
    Nil => 0,
  }
}
def @main(%a: float32) -> int32 { @length(Cons(%a, Cons(%a, Nil))) }
""")
    mod = relay.transform.InferType()(mod)
    _, mod2 = roundtrip(mod)
    tvm.ir.assert_structural_equal(mod2, mod)
    assert mod2.astext() == mod.astext()
    # the GlobalVar keying @length is the one its recursive call refers to
    gv = mod2.get_global_var("length")
    calls = []
    relay.analysis.post_order_visit(mod2[gv].body, lambda e: calls.append(e)
                                    if isinstance(e, relay.Call) and e.op is gv else None)
    assert calls
    assert str(mod2["main"].checked_type) == str(mod["main"].checked_type)
    out = relay.create_executor("debug", mod=mod2).evaluate()(np.float32(1.0))
    assert int(out.numpy()) == 2


@pytest.mark.parametrize("value", [
    np.arange(6, dtype="float32").reshape(2, 3), np.array(3, dtype="int64"),
    np.array([True, False]), np.array([-1, 2], dtype="int8"),
    np.array([0.5, -2.0], dtype="float16"), np.zeros((0, 3), dtype="float32"),
])
def test_constants_keep_values_shapes_and_dtypes(value):
    c = relay.const(value, dtype=str(value.dtype))
    _, c2 = roundtrip(c)
    a = c2.data.numpy()
    assert a.dtype == value.dtype and a.shape == value.shape
    np.testing.assert_array_equal(a, value)


def test_types_attrs_and_spans():
    tv = relay.TypeVar("T")
    ft = relay.FuncType([relay.TensorType((2, relay.Any()), "int32"), tv],
                        relay.TupleType([tv, relay.TensorType((), "bool")]), [tv])
    _, ft2 = roundtrip(ft)
    tvm.ir.assert_structural_equal(ft2, ft)
    assert ft2.type_params[0] is ft2.arg_types[1]

    d = relay.var("d", shape=(1, 3, 8, 8))
    w = relay.var("w", shape=(4, 3, 3, 3))
    conv = relay.nn.conv2d(d, w, strides=(2, 2), padding=(1, 1), channels=4, kernel_size=(3, 3))
    _, conv2 = roundtrip(conv)
    assert type(conv2.attrs) is type(conv.attrs)
    assert conv2.attrs.strides == (2, 2) and conv2.attrs.padding == (1, 1, 1, 1)
    assert conv2.op is conv.op  # operators are looked up in the registry

    span = tvm.ir.Span(tvm.ir.SourceName("net.py"), 3, 3, 7, 12)
    v = relay.Var("v", relay.TensorType((1,)), span=span)
    _, v2 = roundtrip(v)
    assert v2.span == span and str(v2.span) == "net.py:3:7"


def test_loaded_module_runs_the_same():
    x = relay.var("x", shape=(2, 8))
    w = relay.const(np.random.rand(4, 8).astype("float32"))
    b = relay.const(np.random.rand(4).astype("float32"))
    y = relay.nn.softmax(relay.nn.bias_add(relay.nn.dense(x, w), b))
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x], y)))
    _, mod2 = roundtrip(mod)
    a = np.random.rand(2, 8).astype("float32")
    ref = relay.create_executor("debug", mod=mod).evaluate()(a).numpy()
    got = relay.create_executor("graph", mod=mod2, target="llvm").evaluate()(a).numpy()
    np.testing.assert_allclose(got, ref, rtol=1e-5)


def test_prim_func_and_relax_modules():
    from minitvm import relax
    from minitvm.relay.backend import te_compiler

    x = relay.var("x", shape=(4, 8))
    lowered = te_compiler.TECompiler().lower(relay.Function([x], relay.nn.relu(x)))
    _, funcs = roundtrip(lowered.funcs)
    tvm.ir.assert_structural_equal(funcs, lowered.funcs)

    bb = relax.BlockBuilder()
    xv = relax.Var("x", relax.TensorStructInfo((2, 3), "float32"))
    with bb.function("main", [xv]):
        with bb.dataflow():
            gv = bb.emit_output(bb.emit(relax.op.add(xv, xv)))
        bb.emit_func_output(gv)
    rmod = bb.get()
    _, rmod2 = roundtrip(rmod)
    tvm.ir.assert_structural_equal(rmod2, rmod)


def test_100k_node_chain_roundtrips_without_recursion():
    limit = sys.getrecursionlimit()
    x = relay.var("x", shape=(4,))
    y = x
    one = relay.const(np.float32(1.0))
    for i in range(100_000):
        y = relay.add(y, one) if i % 2 else relay.negative(y)
    f = relay.Function([x], y)
    text, g = roundtrip(f)
    assert sys.getrecursionlimit() == limit
    assert len(json.loads(text)["b64ndarrays"]) == 1  # the shared constant is stored once
    node, depth = g.body, 0
    while isinstance(node, relay.Call):
        node, depth = node.args[0], depth + 1
    assert depth == 100_000 and node is g.params[0]
    assert tvm.ir.structural_equal(g, f)


def test_bad_input_is_a_clear_error():
    with pytest.raises(ValueError, match="not JSON"):
        tvm.ir.load_json("{oops")
    with pytest.raises(ValueError, match="'root' and 'nodes'"):
        tvm.ir.load_json("[1, 2]")
    tvm_style = {"root": 0, "nodes": [{"type_key": "relay.Var"}], "b64ndarrays": [],
                 "attrs": {"tvm_version": "0.19.0"}}
    with pytest.raises(ValueError, match="not written by minitvm"):
        tvm.ir.load_json(json.dumps(tvm_style))
    evil = {"root": 0, "nodes": [{"type_key": "os:system", "attrs": {}}], "b64ndarrays": [],
            "attrs": {"minitvm_json": "1"}}
    with pytest.raises(ValueError, match="only classes of minitvm"):
        tvm.ir.load_json(json.dumps(evil))
    x = relay.var("x", shape=(2,))
    with pytest.raises(TypeError, match="cannot store a value of type"):
        tvm.ir.save_json(relay.op.debug(x, debug_func=lambda v: None))

"""relay.dataflow_pattern: matching rules of every pattern kind (TVM's semantics)."""

import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.relay.dataflow_pattern import (
    DFPattern,
    DFPatternMatcher,
    FunctionPattern,
    dominates,
    has_attr,
    has_dtype,
    has_shape,
    has_type,
    is_constant,
    is_expr,
    is_if,
    is_let,
    is_op,
    is_tuple,
    is_tuple_get_item,
    is_var,
    wildcard,
)


def _conv_block():
    x = relay.var("x", shape=(1, 3, 8, 8))
    w = relay.var("w", shape=(4, 3, 3, 3))
    b = relay.var("b", shape=(4,))
    c = relay.nn.conv2d(x, w, padding=(1, 1))
    return x, w, b, c, relay.nn.relu(relay.nn.bias_add(c, b))


def test_op_call_and_leaves():
    x, w, b, c, r = _conv_block()
    pat = is_op("nn.relu")(is_op("nn.bias_add")(is_op("nn.conv2d")(wildcard(), wildcard()),
                                                 wildcard()))
    assert pat.match(r)
    assert not pat.match(r.args[0])
    assert is_var("x").match(x) and not is_var("y").match(x) and is_var().match(x)
    assert is_constant().match(relay.const(1.0)) and not is_constant().match(x)
    assert is_expr(x).match(x) and not is_expr(x).match(w)
    assert wildcard().match(r)
    assert not is_op("nn.relu").match(r)  # the op itself, not a call of it
    assert is_op("nn.relu").match(r.op)
    assert is_op("nn.relu")(None).match(r)  # args None: any arguments


def test_python_operators_build_calls():
    x, y = relay.var("x"), relay.var("y")
    assert (wildcard() + wildcard()).match(x + y)
    assert (wildcard() * wildcard()).match(x * y)
    assert (wildcard() - wildcard()).match(x - y)
    assert (wildcard() / wildcard()).match(x / y)
    assert not (wildcard() - wildcard()).match(x + y)


def test_reused_pattern_node_must_match_same_expr():
    x, y = relay.var("x"), relay.var("y")
    a = wildcard()
    assert is_op("add")(a, a).match(x + x)
    assert not is_op("add")(a, a).match(x + y)


def test_commutative_add_and_multiply():
    x = relay.var("x")
    c = relay.const(2.0)
    assert is_op("add")(is_constant(), wildcard()).match(x + c)
    assert is_op("multiply")(is_constant(), is_var("x")).match(x * c)
    assert not is_op("subtract")(is_constant(), wildcard()).match(x - c)


def test_alternatives_and_optional():
    x, w, b, c, r = _conv_block()
    conv = is_op("nn.conv2d")(wildcard(), wildcard())
    pat = (conv | is_op("nn.dense")(wildcard(), wildcard()))
    assert pat.match(c)
    assert not pat.match(r)
    opt = conv.optional(lambda p: is_op("nn.bias_add")(p, wildcard()))
    assert opt.match(c) and opt.match(r.args[0])
    full = opt.optional(is_op("nn.relu"))
    assert full.match(r) and full.match(c)


def test_attr_patterns_on_calls_ops_and_functions():
    x, w, b, c, r = _conv_block()
    conv = is_op("nn.conv2d")(wildcard(), wildcard())
    assert conv.has_attr({"padding": [1, 1, 1, 1], "data_layout": "NCHW"}).match(c)
    assert not conv.has_attr({"data_layout": "NHWC"}).match(c)
    assert not conv.has_attr({"no_such_attr": 1}).match(c)
    assert is_op("nn.relu").has_attr({"TOpPattern": 0}).match(r.op)
    f = relay.Function([x], x).with_attr("Composite", "foo")
    assert FunctionPattern(None, wildcard()).has_attr({"Composite": "foo"}).match(f)
    assert not has_attr({"Composite": "bar"}).match(f)
    with pytest.raises(TypeError, match="dict of attribute values"):
        wildcard().has_attr(["padding"])


def test_type_shape_dtype_patterns():
    x = relay.var("x", shape=(2, 3), dtype="float32")
    y = relay.var("y", shape=(2, 3), dtype="int32")
    assert has_type(relay.TensorType((2, 3), "float32")).match(x)
    assert not has_type(relay.TensorType((2, 3), "float32")).match(y)
    assert has_shape((2, 3)).match(y) and not has_shape((3, 2)).match(y)
    assert has_dtype("int32").match(y) and not has_dtype("int32").match(x)
    s = relay.add(x, x)
    assert is_op("add")(wildcard(), wildcard()).has_shape([2, 3]).match(s)  # inferred


def test_tuple_if_let_function_patterns():
    x, y = relay.var("x"), relay.var("y")
    t = relay.Tuple([x, y])
    assert is_tuple([is_var("x"), wildcard()]).match(t)
    assert not is_tuple([wildcard()]).match(t)
    assert is_tuple(None).match(t)
    g = relay.TupleGetItem(t, 1)
    assert is_tuple_get_item(wildcard(), 1).match(g)
    assert is_tuple_get_item(wildcard()).match(g)
    assert not is_tuple_get_item(wildcard(), 0).match(g)
    i = relay.If(x, y, x)
    assert is_if(is_var("x"), is_var("y"), wildcard()).match(i)
    v = relay.Var("v")
    let = relay.Let(v, x, v + y)
    assert is_let(wildcard(), is_var("x"), is_op("add")(wildcard(), wildcard())).match(let)
    f = relay.Function([x], x + x)
    assert FunctionPattern([wildcard()], is_op("add")(wildcard(), wildcard())).match(f)
    assert not FunctionPattern([wildcard(), wildcard()], wildcard()).match(f)


def _diamond():
    x = relay.var("x", shape=(1, 3, 8, 8))
    w = relay.var("w", shape=(3, 3, 1, 1))
    conv = relay.nn.conv2d(x, w)
    r1 = relay.nn.relu(conv)
    r2 = relay.nn.relu(r1)
    r3 = relay.sigmoid(conv)
    out = relay.add(r2, r3)
    return conv, out


def test_dominator_pattern():
    conv, out = _diamond()
    parent = is_op("nn.conv2d")(wildcard(), wildcard())
    path = is_op("nn.relu")(wildcard()) | is_op("sigmoid")(wildcard())
    child = is_op("add")(wildcard(), wildcard())
    pat = child.dominates(parent, path)
    assert pat.match(out)
    assert dominates(parent, path, child).match(out)
    # conv used outside the diamond: the child no longer dominates it
    extra = relay.Tuple([out, conv])

    assert not DFPatternMatcher(extra).match(pat, out)
    # a path node that does not match the path pattern breaks it
    only_relu = child.dominates(parent, is_op("nn.relu")(wildcard()))
    assert not only_relu.match(out)


def test_repr_and_errors():
    p = is_op("add")(wildcard(), is_constant())
    assert repr(p) == "is_op('add')(wildcard(), is_constant())"
    assert isinstance(p, DFPattern)
    with pytest.raises(ValueError, match="not registered"):
        is_op("no.such.op")
    with pytest.raises(TypeError, match="DFPattern or a Relay expression"):
        is_op("add")(3, wildcard())
    with pytest.raises(TypeError, match="expects a DFPattern"):
        relay.dataflow_pattern.match("add", relay.var("x"))


def test_namespace():
    assert tvm.relay.dataflow_pattern.is_op is is_op

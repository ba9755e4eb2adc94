"""TVM's "Pattern Matching in Relay" language reference with ``import minitvm as tvm``, its
examples as a user types them: op alternatives, op / call attributes, optional ops, dtype and
shape patterns, tuples and tuple items, function / If / Let patterns, constants bound by
``bind_params_by_name`` (a float64 array onto a float32 weight, as the page does), ``is_expr``,
diamonds and ``dominates``, fuzzy (``None``) arguments, a ``DFPatternCallback`` rewriting an
arithmetic batch norm into ``nn.batch_norm``, and ``pattern.partition`` with attributes and a
``check`` function, with the printed IR the page shows."""

from __future__ import annotations

import numpy as np

import minitvm as tvm
from minitvm import relay
from minitvm.relay.build_module import bind_params_by_name
from minitvm.relay.dataflow_pattern import (
    DFPatternCallback,
    FunctionPattern,
    dominates,
    has_dtype,
    has_shape,
    is_constant,
    is_expr,
    is_if,
    is_let,
    is_op,
    is_tuple,
    is_tuple_get_item,
    is_var,
    rewrite,
    wildcard,
)

K_ELEMWISE = 0  # TOpPattern of element-wise ops


def test_ops_attributes_and_optional_ops():
    either = is_op("add") | is_op("subtract")
    assert either.match(relay.op.op.get("add")) and either.match(relay.op.op.get("subtract"))
    assert not either.match(relay.op.op.get("multiply"))

    a, b, c = relay.var("a"), relay.var("b"), relay.var("c")
    elemwise_dense = is_op("nn.dense").has_attr({"TOpPattern": K_ELEMWISE})
    assert not elemwise_dense(wildcard(), wildcard()).match(relay.nn.dense(a, b))
    nhwc = is_op("nn.conv2d")(wildcard(), wildcard()).has_attr({"data_layout": "NHWC"})
    assert not nhwc.match(relay.nn.conv2d(a, b))
    k3 = is_op("nn.conv2d")(wildcard(), wildcard()).has_attr({"kernel_size": [3, 3]})
    assert k3.match(relay.nn.conv2d(a, b, kernel_size=[3, 3]))
    assert not k3.match(relay.nn.conv2d(a, b, kernel_size=[1, 1]))

    conv_bias = is_op("nn.bias_add")(is_op("nn.conv2d")(wildcard(), wildcard()), wildcard())
    maybe_relu = conv_bias.optional(lambda p: is_op("nn.relu")(p))
    biased = relay.nn.bias_add(relay.nn.conv2d(a, b), c)
    assert maybe_relu.match(biased) and maybe_relu.match(relay.nn.relu(biased))
    assert not maybe_relu.match(relay.sigmoid(biased))


def test_types_tuples_functions_if_let():
    m = relay.var("m", shape=(10, 10), dtype="float32")
    assert has_dtype("float32").match(m) and has_shape((10, 10)).match(m)
    assert not has_dtype("int8").match(m)
    data = relay.var("data", shape=(1, 3, 28, 28))
    w = relay.var("w", shape=(32, 3, 3, 3))
    relu = relay.nn.relu(relay.nn.conv2d(data, w, strides=(1, 1), padding=(1, 1)))
    conv_relu = is_op("nn.relu")(is_op("nn.conv2d")(wildcard(), wildcard()))
    assert conv_relu.has_shape((1, 32, 28, 28)).match(relu)
    assert not conv_relu.has_shape((1, 32, 26, 26)).match(relu)

    x, y, z = relay.var("x"), relay.var("y"), relay.var("z")
    assert is_tuple((wildcard(), wildcard(), wildcard())).match(relay.Tuple((x, y, z)))
    v = relay.var("v", shape=(1, 8))
    stats = [relay.var(n, shape=(8,)) for n in ("gamma", "beta", "moving_mean", "moving_var")]
    bn = is_op("nn.batch_norm")(*[wildcard() for _ in range(5)])
    out = relay.nn.relu(relay.nn.batch_norm(v, *stats)[0])
    assert is_op("nn.relu")(is_tuple_get_item(bn, 0)).match(out)
    assert is_op("nn.relu")(is_tuple_get_item(bn)).match(out)
    assert not is_op("nn.relu")(is_tuple_get_item(bn, 1)).match(out)

    p, q = wildcard(), wildcard()
    assert FunctionPattern([p, q], p + q).match(relay.Function([x, y], x + y))
    assert wildcard().has_attr({"Composite": "add"}).match(
        relay.Function([x, y], x + y).with_attr("Composite", "add"))

    px, py = is_var("x"), is_var("y")
    assert is_if(is_op("less")(px, py), px, py).match(relay.If(x < y, x, y))
    assert not is_if(is_op("less")(px, py), px, py).match(relay.If(x > y, x, y))
    lv = relay.var("let")
    let_pat = is_let(is_var("let"), is_op("less")(px, py), is_var("let"))
    assert let_pat.match(relay.Let(lv, x < y, lv))
    assert not let_pat.match(relay.Let(lv, x < y, lv * x))


def test_constants_bound_by_name_and_literal_exprs():
    pattern = is_op("nn.bias_add")(is_op("nn.conv2d")(wildcard(), is_constant()), wildcard())
    x = relay.var("x", shape=(1, 3, 224, 224))
    w = relay.var("w", shape=(3, 3, 3, 3))
    b = relay.var("b", shape=(3,))
    mod = tvm.IRModule.from_expr(relay.Function([x, w, b], relay.nn.bias_add(relay.nn.conv2d(x, w), b)))
    assert not pattern.match(mod["main"].body)  # the weight is still a parameter
    # the page binds np.ones (float64) to the float32 weight; TVM keeps the value as given
    mod["main"] = bind_params_by_name(mod["main"], {"w": tvm.nd.array(np.ones((3, 3, 3, 3)))})
    assert pattern.match(mod["main"].body)
    assert [p.name_hint for p in mod["main"].params] == ["x", "b"]

    plus_zero = wildcard() + (is_expr(relay.const(0)) | is_expr(relay.const(0.0)))
    assert plus_zero.match(relay.Var("x") + relay.const(0))
    assert not plus_zero.match(relay.Var("x") + relay.const(1))


def test_diamonds_dominators_and_fuzzy_arguments():
    inp, weight = relay.var("input"), relay.var("weight")
    conv = relay.nn.conv2d(inp, weight)
    out = relay.nn.relu(conv) + relay.nn.leaky_relu(conv, alpha=0)
    conv_p = is_op("nn.conv2d")(is_var(), is_var())
    diamond = is_op("add")(is_op("nn.relu")(conv_p), is_op("nn.leaky_relu")(conv_p))
    assert diamond.match(out)
    is_elemwise = wildcard().has_attr({"TOpPattern": K_ELEMWISE})(wildcard())
    assert dominates(conv_p, is_elemwise, is_op("add")(wildcard(), wildcard())).match(out)
    # a path through a non-element-wise op is not dominated by element-wise ops
    pooled = relay.nn.relu(conv) + relay.nn.max_pool2d(conv)
    assert not dominates(conv_p, is_elemwise, is_op("add")(wildcard(), wildcard())).match(pooled)

    x, y, z = relay.var("x"), relay.var("y"), relay.var("z")
    assert is_tuple(None).match(relay.Tuple([x, y, z])) and is_tuple(None).match(relay.Tuple([]))
    summing = FunctionPattern(None, wildcard() + wildcard())
    f = relay.Function([x, y], x + y)
    assert summing(None).match(f(x, y))
    # a fuzzy body: x * x + y still ends in an add of two things
    assert FunctionPattern([is_var(), is_var()], wildcard() + wildcard()).match(
        relay.Function([x, y], x * x + y))


class BatchnormCallback(DFPatternCallback):
    """Rewrites gamma * (x - mean) / sqrt(var + eps) + beta into one nn.batch_norm."""

    def __init__(self, require_type=False):
        super().__init__(require_type)
        self.x, self.var, self.mean = wildcard(), wildcard(), wildcard()
        self.beta, self.gamma, self.eps = wildcard(), wildcard(), wildcard()
        self.pattern = (self.gamma * (self.x - self.mean) / is_op("sqrt")(self.var + self.eps)
                        + self.beta)

    def callback(self, pre, post, node_map):
        eps = node_map[self.eps][0].data.numpy().item()  # 1e-5 read back from a float32
        return relay.nn.batch_norm(node_map[self.x][0], node_map[self.gamma][0],
                                   node_map[self.beta][0], node_map[self.mean][0],
                                   node_map[self.var][0], epsilon=eps)[0]


def test_rewrite_arithmetic_into_batch_norm():
    x, var, mean, beta, gamma = (relay.var(n) for n in ("x", "var", "mean", "beta", "gamma"))
    arithmetic = gamma * (x - mean) / relay.sqrt(var + relay.const(1e-5)) + beta
    out = rewrite(BatchnormCallback(), arithmetic)
    # the epsilon differs from 1e-5 in the 13th digit: TVM's float comparison tolerates it
    assert tvm.ir.structural_equal(out, relay.nn.batch_norm(x, gamma, beta, mean, var,
                                                            epsilon=1e-5)[0])
    assert not tvm.ir.structural_equal(out, relay.nn.batch_norm(x, gamma, beta, mean, var,
                                                                epsilon=1e-3)[0])
    # nothing to rewrite: the expression comes back as it was
    plain = x * gamma + beta
    assert tvm.ir.structural_equal(rewrite(BatchnormCallback(), plain), plain)


def test_partition_prints_like_the_page():
    conv_relu = is_op("nn.relu")(is_op("nn.conv2d")(wildcard(), wildcard()))
    relu = relay.nn.relu(relay.nn.conv2d(relay.var("input"), relay.var("weight")))
    assert str(conv_relu.partition(relu)) == (
        "free_var %input;\nfree_var %weight;\n"
        '%1 = fn (%FunctionVar_0_0, %FunctionVar_0_1, PartitionedFromPattern="nn.conv2d_nn.relu_") {\n'
        "  %0 = nn.conv2d(%FunctionVar_0_0, %FunctionVar_0_1, padding=[0, 0, 0, 0]);\n"
        "  nn.relu(%0)\n};\n%1(%input, %weight)")
    named = str(conv_relu.partition(relu, {"Composite": "one_layer"}))
    assert 'Composite="one_layer"' in named and 'PartitionedFromPattern="nn.conv2d_nn.relu_"' in named

    x = relay.var("x", shape=(1, 3, 224, 224))
    w = relay.var("w", shape=(3, 3, 3, 3))
    b = relay.var("b", shape=(3,))
    expr = relay.nn.bias_add(relay.nn.conv2d(x, w), b)
    relay.transform.InferTypeLocal(expr)
    assert str(expr).endswith(
        "%0 = nn.conv2d(%x, %w, padding=[0, 0, 0, 0]) /* ty=Tensor[(1, 3, 222, 222), float32] */;\n"
        "free_var %b: Tensor[(3), float32];\n"
        "nn.bias_add(%0, %b) /* ty=Tensor[(1, 3, 222, 222), float32] */")
    conv_bias = is_op("nn.bias_add")(is_op("nn.conv2d")(wildcard(), wildcard()), wildcard())

    def batch_one_nchw(pre):
        conv = pre.args[0]
        return conv.attrs.data_layout == "NCHW" and bool(conv.checked_type.shape[0] == 1)

    parted = conv_bias.partition(expr, check=batch_one_nchw)
    assert 'PartitionedFromPattern="nn.conv2d_nn.bias_add_"' in str(parted)
    assert str(parted).endswith("%1(%x, %w, %b)")
    # a check that refuses leaves the expression alone
    assert conv_bias.partition(expr, check=lambda pre: False) is expr

"""MergeComposite builds TVM's programs: cases of TVM v0.19's own test of the pass, restated.

Each match becomes a call of a function marked ``Composite=<name>`` and
``PartitionedFromPattern=<ops in post-order>_``, whose parameters are the match's inputs; the
pass ends with type inference, so those functions carry their types.
"""

import numpy as np
from pass_test_util import check_numerics

import minitvm as tvm
from minitvm import relay
from minitvm.relay.dataflow_pattern import is_op, is_tuple_get_item, wildcard

SHAPE = (4, 4)


def _run(f, table):
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(f))
    out = relay.transform.MergeComposite(table)(mod)["main"]
    assert not relay.analysis.free_vars(out)
    return out


def _check(before, expected, table):
    got = _run(before, table)
    want = relay.transform.InferType()(tvm.IRModule.from_expr(expected))["main"]
    tvm.ir.assert_structural_equal(got, want, map_free_vars=True)
    check_numerics(before, got)


def _composite(params, body, name, pattern_ops):
    return relay.Function(params, body).with_attr("Composite", name).with_attr(
        "PartitionedFromPattern", pattern_ops)


def _v(name, shape=SHAPE):
    return relay.var(name, shape=shape)


def _add_relu_pattern():
    return is_op("nn.relu")(is_op("add")(wildcard(), wildcard()))


def _add_sub_mul_pattern():
    x, y = wildcard(), wildcard()
    return is_op("multiply")(is_op("add")(x, y), is_op("subtract")(x, y))


def _add_sub_mul(x, y):
    return relay.multiply(relay.add(x, y), relay.subtract(x, y))


def test_simple_merge():
    a, b = _v("a"), _v("b")
    before = relay.Function([a, b], relay.nn.relu(relay.add(a, b)))
    i1, i2 = _v("in_1"), _v("in_2")
    comp = _composite([i1, i2], relay.nn.relu(relay.add(i1, i2)), "add_relu", "add_nn.relu_")
    a, b = _v("a"), _v("b")
    _check(before, relay.Function([a, b], relay.Call(comp, [a, b])),
           [("add_relu", _add_relu_pattern())])


def test_branch_merge_makes_one_function_per_match():
    a, b, c = _v("a"), _v("b"), _v("c")
    before = relay.Function([a, b, c], relay.nn.relu(_add_sub_mul(c, _add_sub_mul(a, b))))

    def fn():
        x, y = _v("x"), _v("y")
        return _composite([x, y], _add_sub_mul(x, y), "add_sub_mul", "add_subtract_multiply_")

    a, b, c = _v("a"), _v("b"), _v("c")
    first = relay.Call(fn(), [a, b])
    expected = relay.Function([a, b, c], relay.nn.relu(relay.Call(fn(), [c, first])))
    _check(before, expected, [("add_sub_mul", _add_sub_mul_pattern())])


def test_merge_order_follows_the_table():
    # add -> relu -> abs: whichever pattern comes first in the table wins the add/relu pair
    def before():
        a, b = _v("a"), _v("b")
        return relay.Function([a, b], relay.abs(relay.nn.relu(relay.add(a, b))))

    relu_abs = is_op("abs")(is_op("nn.relu")(wildcard()))
    # add_relu first
    i1, i2 = _v("in_1"), _v("in_2")
    comp = _composite([i1, i2], relay.nn.relu(relay.add(i1, i2)), "add_relu", "add_nn.relu_")
    a, b = _v("a"), _v("b")
    _check(before(), relay.Function([a, b], relay.abs(relay.Call(comp, [a, b]))),
           [("add_relu", _add_relu_pattern()), ("relu_abs", relu_abs)])
    # relu_abs first
    i1 = _v("in_1")
    comp = _composite([i1], relay.abs(relay.nn.relu(i1)), "relu_abs", "nn.relu_abs_")
    a, b = _v("a"), _v("b")
    _check(before(), relay.Function([a, b], relay.Call(comp, [relay.add(a, b)])),
           [("relu_abs", relu_abs), ("add_relu", _add_relu_pattern())])


def test_tuple_get_item_merge():
    shape = (1, 4, 2, 2)

    def bn_relu(x, g, b, m, v):
        return relay.nn.relu(relay.nn.batch_norm(x, g, b, m, v)[0])

    names = ("gamma", "beta", "moving_mean", "moving_var")
    x = relay.var("x", shape=shape)
    ps = [relay.var(n, shape=(4,)) for n in names]
    before = relay.Function([x] + ps, bn_relu(x, *ps))
    pattern = is_op("nn.relu")(is_tuple_get_item(is_op("nn.batch_norm")(
        wildcard(), wildcard(), wildcard(), wildcard(), wildcard()), 0))

    ix = relay.var("in_x", shape=shape)
    ips = [relay.var("in_" + n, shape=(4,)) for n in names]
    comp = _composite([ix] + ips, bn_relu(ix, *ips), "bn_relu",
                      "nn.batch_norm_TupleGetItem0_nn.relu_")
    x = relay.var("x", shape=shape)
    ps = [relay.var(n, shape=(4,)) for n in names]
    got = _run(before, [("bn_relu", pattern)])
    want = relay.transform.InferType()(tvm.IRModule.from_expr(
        relay.Function([x] + ps, relay.Call(comp, [x] + ps))))["main"]
    tvm.ir.assert_structural_equal(got, want, map_free_vars=True)
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(shape).astype("float32")] + [
        (np.abs(rng.standard_normal(4)) + 0.5).astype("float32") for _ in names]
    check_numerics(before, got, args=args)


def test_pattern_with_check():
    def conv_bias_relu(x, w, b, layout):
        kw = {"data_layout": layout, "kernel_layout": "OIHW" if layout == "NCHW" else "HWIO"}
        axis = 1 if layout == "NCHW" else 3
        return relay.nn.relu(relay.nn.bias_add(relay.nn.conv2d(x, w, **kw), b, axis=axis))

    pattern = is_op("nn.relu")(is_op("nn.bias_add")(is_op("nn.conv2d")(wildcard(), wildcard()),
                                                     wildcard()))

    def only_nhwc(expr):
        conv = expr.args[0].args[0]
        return conv.attrs.data_layout == "NHWC"

    x = relay.var("x", shape=(1, 3, 4, 4))
    w = relay.var("w", shape=(2, 3, 1, 1))
    b = relay.var("b", shape=(2,))
    nchw = relay.Function([x, w, b], conv_bias_relu(x, w, b, "NCHW"))
    # the check vetoes the NCHW match: nothing merges
    got = _run(nchw, [("conv_bias_relu", pattern, only_nhwc)])
    tvm.ir.assert_structural_equal(
        got, relay.transform.InferType()(tvm.IRModule.from_expr(nchw))["main"])

    x = relay.var("x", shape=(1, 4, 4, 3))
    w = relay.var("w", shape=(1, 1, 3, 2))
    b = relay.var("b", shape=(2,))
    nhwc = relay.Function([x, w, b], conv_bias_relu(x, w, b, "NHWC"))
    ix, iw, ib = (relay.var("i" + n.name_hint, shape=n.type_annotation.shape) for n in (x, w, b))
    comp = _composite([ix, iw, ib], conv_bias_relu(ix, iw, ib, "NHWC"), "conv_bias_relu",
                      "nn.conv2d_nn.bias_add_nn.relu_")
    x2, w2, b2 = (relay.var(n.name_hint, shape=n.type_annotation.shape) for n in (x, w, b))
    _check(nhwc, relay.Function([x2, w2, b2], relay.Call(comp, [x2, w2, b2])),
           [("conv_bias_relu", pattern, only_nhwc)])


def test_diamond_is_not_merged():
    # the relu's result is used twice inside a would-be match: a pattern over the whole diamond
    # matches, but a smaller pattern must not cut through the shared node
    a, b = _v("a"), _v("b")
    relu = relay.nn.relu(relay.add(a, b))
    before = relay.Function([a, b], relay.multiply(relay.abs(relu), relu))
    pattern = is_op("abs")(is_op("nn.relu")(wildcard()))
    got = _run(before, [("relu_abs", pattern)])
    tvm.ir.assert_structural_equal(
        got, relay.transform.InferType()(tvm.IRModule.from_expr(before))["main"])

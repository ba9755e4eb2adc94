"""relay.dataflow_pattern: rewrite with DFPatternCallback, partition; deep chains."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.relay.dataflow_pattern import (
    DFPatternCallback,
    is_constant,
    is_op,
    is_var,
    partition,
    rewrite,
    wildcard,
)


def _run(expr, args):
    mod = tvm.IRModule.from_expr(expr)
    return relay.create_executor("debug", mod=mod).evaluate()(*args).numpy()


class AddToSub(DFPatternCallback):
    def __init__(self):
        super().__init__()
        self.x, self.y = wildcard(), wildcard()
        self.pattern = is_op("add")(self.x, self.y)

    def callback(self, pre, post, node_map):
        return relay.subtract(post.args[0], post.args[1])


def test_rewrite_add_to_subtract():
    x, y = relay.var("x", shape=(3,)), relay.var("y", shape=(3,))
    out = rewrite(AddToSub(), relay.add(relay.add(x, y), y))
    tvm.ir.assert_structural_equal(out, relay.subtract(relay.subtract(x, y), y))


class FoldBatchNorm(DFPatternCallback):
    """TVM's docs example: rebuild batch_norm's arithmetic as a single batch_norm call."""

    def __init__(self):
        super().__init__(require_type=True)
        self.x, self.var = wildcard(), wildcard()
        self.mean, self.beta, self.gamma, self.eps = wildcard(), wildcard(), wildcard(), \
            is_constant()
        self.pattern = (self.gamma * (self.x - self.mean) / is_op("sqrt")(self.var + self.eps)
                        + self.beta)

    def callback(self, pre, post, node_map):
        assert pre.checked_type is not None
        g = lambda p: node_map[p][0]  # noqa: E731
        eps = float(g(self.eps).data.numpy())
        return relay.nn.batch_norm(g(self.x), g(self.gamma), g(self.beta), g(self.mean),
                                   g(self.var), epsilon=eps, center=True, scale=True)[0]


def test_rewrite_batchnorm_numerics():
    shape = (2, 3)
    names = ["x", "var", "mean", "beta", "gamma"]
    x, var, mean, beta, gamma = [relay.var(n, shape=shape if n == "x" else (3,)) for n in names]
    # broadcast along axis 1: params are (3,) and x is (2, 3) -> batch_norm axis=1 is right
    expr = gamma * (x - mean) / relay.sqrt(var + relay.const(1e-5)) + beta
    out = rewrite(FoldBatchNorm(), expr)
    assert isinstance(out, relay.TupleGetItem)
    assert out.tuple_value.op.name == "nn.batch_norm"
    rng = np.random.default_rng(0)
    vals = [rng.standard_normal(shape).astype("float32")] + [
        rng.uniform(0.5, 1.5, (3,)).astype("float32") for _ in range(4)]
    params = [x, var, mean, beta, gamma]
    before = _run(relay.Function(params, expr), vals)
    after = _run(relay.Function(params, out), vals)
    np.testing.assert_allclose(before, after, rtol=1e-5, atol=1e-6)


class Once(DFPatternCallback):
    def __init__(self):
        super().__init__(rewrite_once=True)
        self.pattern = is_op("nn.relu")(wildcard())

    def callback(self, pre, post, node_map):
        return relay.nn.relu(relay.nn.relu(post.args[0]))


def test_rewrite_once_and_round_cap():
    x = relay.var("x", shape=(3,))
    out = rewrite(Once(), relay.nn.relu(x))
    tvm.ir.assert_structural_equal(out, relay.nn.relu(relay.nn.relu(x)))

    class Forever(Once):
        """Wraps the innermost relu each round: the program grows by one node per round."""

        def __init__(self):
            super().__init__()
            self.rewrite_once = False
            self.pattern = is_op("nn.relu")(is_var())

    with pytest.raises(RuntimeError, match="still changes after 100 rounds"):
        rewrite(Forever(), relay.nn.relu(x))


def test_rewrite_errors():
    class NoPattern(DFPatternCallback):
        def callback(self, pre, post, node_map):
            return post

    with pytest.raises(ValueError, match="pattern is not set"):
        rewrite(NoPattern(), relay.var("x"))
    with pytest.raises(TypeError, match="DFPatternCallback"):
        rewrite([lambda e: e], relay.var("x"))


def test_partition_conv_bias_relu():
    x = relay.var("x", shape=(1, 3, 8, 8))
    w = relay.var("w", shape=(4, 3, 3, 3))
    b = relay.var("b", shape=(4,))
    r = relay.nn.relu(relay.nn.bias_add(relay.nn.conv2d(x, w, padding=(1, 1)), b))
    pat = is_op("nn.relu")(is_op("nn.bias_add")(is_op("nn.conv2d")(wildcard(), wildcard()),
                                                 wildcard()))
    out = pat.partition(r, {"Composite": "conv_bias_relu"})
    a0, a1, a2 = relay.var("FunctionVar_0_0"), relay.var("FunctionVar_0_1"), \
        relay.var("FunctionVar_0_2")
    body = relay.nn.relu(relay.nn.bias_add(relay.nn.conv2d(a0, a1, padding=(1, 1)), a2))
    fn = relay.Function([a0, a1, a2], body).with_attr(
        "PartitionedFromPattern", "nn.conv2d_nn.bias_add_nn.relu_").with_attr(
        "Composite", "conv_bias_relu")
    tvm.ir.assert_structural_equal(out, relay.Call(fn, [x, w, b]))
    rng = np.random.default_rng(1)
    vals = [rng.standard_normal(v.type_annotation.concrete_shape).astype("float32")
            for v in (x, w, b)]
    np.testing.assert_allclose(_run(relay.Function([x, w, b], r), vals),
                               _run(relay.Function([x, w, b], out), vals), rtol=1e-5)


def test_partition_check_and_escaping_intermediate():
    x = relay.var("x", shape=(4,))
    r = relay.nn.relu(relay.add(x, relay.const(1.0)))
    pat = is_op("nn.relu")(is_op("add")(wildcard(), is_constant()))
    assert partition(pat, r, check=lambda e: False) is r
    out = partition(pat, r)
    assert isinstance(out.op, relay.Function) and len(out.args) == 1  # constant stays inside
    # the add is also used outside the match: no partition
    a = relay.add(x, relay.const(1.0))
    t = relay.Tuple([relay.nn.relu(a), a])
    assert partition(pat, t) is t


def test_partition_non_overlapping_from_outputs():
    x = relay.var("x", shape=(4,))
    e = relay.nn.relu(relay.nn.relu(relay.nn.relu(x)))
    out = partition(is_op("nn.relu")(is_op("nn.relu")(wildcard())), e)
    # the outer two relus form the group (matched from the output), the inner one is left
    assert isinstance(out.op, relay.Function)
    assert out.args[0].op.name == "nn.relu"


def test_deep_chain_100k():
    x = relay.var("x", shape=(2,))
    e = x
    for _ in range(100_000):
        e = relay.nn.relu(e)
    pat = is_op("nn.relu")(wildcard())
    assert pat.match(e)
    out = partition(is_op("nn.relu")(is_op("nn.relu")(wildcard())), e)
    assert isinstance(out.op, relay.Function)

    class ReluToAbs(DFPatternCallback):
        def __init__(self):
            super().__init__(rewrite_once=True)
            self.pattern = is_op("nn.relu")(wildcard())

        def callback(self, pre, post, node_map):
            return relay.abs(post.args[0])

    out = rewrite(ReluToAbs(), e)
    assert out.op.name == "abs" and out.args[0].op.name == "abs"

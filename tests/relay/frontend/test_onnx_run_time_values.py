"""What the Relay ONNX importer can compute at run time, without the ``onnx`` package:
``Context.value_inputs`` (which graph inputs' values an expression reads, ``shape_of`` reading
only sizes), ``computed_at_run_time``, and ReduceProd / ReduceSum of a shape in the shape
arithmetic (``shape_values.evaluate``: ``numel`` of a dynamic-batch tensor)."""

from __future__ import annotations

import numpy as np

from minitvm import relay
from minitvm.relay.frontend.onnx.registry import Context
from minitvm.relay.frontend.onnx.shape_values import SizeOf, evaluate


def _ctx(*inputs):
    return Context(17, lambda e: e, inputs)


def test_sizes_are_not_values_and_data_is():
    x = relay.var("x", shape=(relay.Any(), 3), dtype="float32")
    n = relay.var("n", shape=(), dtype="int64")
    ctx = _ctx(x, n)
    numel = relay.prod(relay.shape_of(x, "int64"))
    assert ctx.value_inputs(numel) == []
    assert ctx.computed_at_run_time(relay.arange(relay.const(0, "int64"), numel))
    by_n = relay.add(numel, n)
    assert ctx.value_inputs(by_n) == [n] and not ctx.computed_at_run_time(by_n)
    both = ctx.value_inputs(relay.add(relay.cast(relay.sum(x), "int64"), by_n))
    assert sorted(v.name_hint for v in both) == ["n", "x"]
    assert ctx.value_inputs(relay.add(by_n, n), first=True) == [n]
    assert not ctx.computed_at_run_time(relay.const(3, "int64"))  # (known at import)


def test_value_inputs_walks_a_100k_chain_without_recursion():
    x = relay.var("x", shape=(relay.Any(), 3), dtype="float32")
    one = relay.const(np.array(1, "int64"))
    e = relay.shape_of(x, "int64")
    for _ in range(100_000):
        e = relay.add(e, one)
    ctx = _ctx(x)
    assert ctx.value_inputs(e) == []
    assert ctx.value_inputs(relay.add(e, relay.cast(relay.sum(x), "int64"))) == [x]


def test_reduce_prod_and_sum_of_a_shape_in_the_shape_arithmetic():
    x = relay.var("x", shape=(relay.Any(), 3, 4), dtype="float32")
    s = relay.shape_of(x, "int64")
    numel = evaluate(relay.prod(s))
    assert numel.shape == () and isinstance(numel[()], SizeOf)
    assert numel[()].factors[1] == 12 and len(numel[()].factors[0]) == 1  # (batch * 12)
    kept = evaluate(relay.prod(s, axis=[0], keepdims=True))
    assert kept.shape == (1,) and kept[0].factors[1] == 12
    static = relay.var("y", shape=(2, 3, 4), dtype="float32")
    assert evaluate(relay.prod(relay.shape_of(static, "int64"))).item() == 24
    assert evaluate(relay.sum(relay.shape_of(static, "int64"))).item() == 9
    total = evaluate(relay.sum(s))  # (a sum of a run-time size: unknown, no factors)
    assert isinstance(total[()], SizeOf) and total[()].factors is None
    two_d = relay.reshape(s, (1, 3))
    assert evaluate(relay.prod(two_d, axis=[1])) is None  # (only 1-D shapes)


def test_min_max_of_sizes_in_the_shape_arithmetic():
    """``min(batch, 5)`` (a K or a slice end clamped by a size) is a run-time size; of static
    sizes, a constant."""
    x = relay.var("x", shape=(relay.Any(), 3), dtype="float32")
    b = relay.take(relay.shape_of(x, "int64"), relay.const(0, "int64"))
    five = relay.const(np.array(5, "int64"))
    assert isinstance(evaluate(relay.minimum(b, five))[()], SizeOf)
    c = relay.take(relay.shape_of(x, "int64"), relay.const(1, "int64"))
    assert evaluate(relay.maximum(c, five)).item() == 5
    assert evaluate(relay.minimum(c, five)).item() == 3

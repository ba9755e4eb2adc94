"""CombineParallelOpBatch(op_name, batch_op_name, min_num_branches): TVM's generic batch
combiner (combine_parallel_op_batch.cc) — stacked arguments, following elementwise ops stacked
(1-D arguments get a unit axis), split + squeeze per branch — with Before/Expected programs,
numerics, errors and a deep chain."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay

RNG = np.random.default_rng(0)


def _typed(params, body):
    return relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function(params, body)))


def _run(mod, args):
    out = relay.create_executor("debug", mod=mod).evaluate()(*args)
    return [o.numpy() for o in out] if isinstance(out, (list, tuple)) or hasattr(
        out, "fields") or not hasattr(out, "numpy") else [out.numpy()]


def _same_outputs(before, after, shapes):
    args = [RNG.standard_normal(s).astype("float32") for s in shapes]
    for a, b in zip(_run(before, args), _run(after, args), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


def _vars(n):
    x = relay.var("x", shape=(4, 5))
    ys = [relay.var(f"y{i}", shape=(4, 5)) for i in range(n)]
    bs = [relay.var(f"b{i}", shape=(5,)) for i in range(n)]
    return x, ys, bs


def _split_outputs(data, n):
    parts = relay.split(data, n, axis=0).astuple()
    return [relay.squeeze(relay.TupleGetItem(parts, k), axis=[0]) for k in range(n)]


def test_multiply_branches_with_add_and_relu():
    x, ys, bs = _vars(3)
    outs = [relay.nn.relu(relay.add(relay.multiply(x, y), b)) for y, b in zip(ys, bs)]
    before = _typed([x, *ys, *bs], relay.Tuple(outs))
    after = relay.transform.CombineParallelOpBatch("multiply", "multiply", 3)(before)

    x, ys, bs = _vars(3)
    m = relay.multiply(relay.stack([x, x, x], axis=0), relay.stack(ys, axis=0))
    a = relay.add(m, relay.stack([relay.expand_dims(b, 0, 1) for b in bs], axis=0))
    expected = _typed([x, *ys, *bs], relay.Tuple(_split_outputs(relay.nn.relu(a), 3)))
    tvm.ir.assert_structural_equal(after, expected)
    _same_outputs(before, after, [(4, 5)] * 4 + [(5,)] * 3)


def test_too_few_branches_leaves_the_program():
    x, ys, bs = _vars(2)
    before = _typed([x, *ys], relay.Tuple([relay.multiply(x, y) for y in ys]))
    after = relay.transform.CombineParallelOpBatch("multiply", "multiply", 3)(before)
    tvm.ir.assert_structural_equal(after, before)


def test_only_equal_shapes_are_grouped():
    x = relay.var("x", shape=(4, 5))
    ys = [relay.var(f"y{i}", shape=s) for i, s in enumerate([(4, 5), (4, 5), (1, 5)])]
    before = _typed([x, *ys], relay.Tuple([relay.add(x, y) for y in ys]))
    after = relay.transform.CombineParallelOpBatch("add", "add", 2)(before)

    x = relay.var("x", shape=(4, 5))
    ys = [relay.var(f"y{i}", shape=s) for i, s in enumerate([(4, 5), (4, 5), (1, 5)])]
    combined = relay.add(relay.stack([x, x], axis=0), relay.stack(ys[:2], axis=0))
    first, second = _split_outputs(combined, 2)
    expected = _typed([x, *ys], relay.Tuple([first, second, relay.add(x, ys[2])]))
    tvm.ir.assert_structural_equal(after, expected)
    _same_outputs(before, after, [(4, 5), (4, 5), (4, 5), (1, 5)])


def test_level_that_would_not_type_check_ends_the_branch():
    """bias_add wants a 1-D bias; TVM stacks it to (3, 1, 5) anyway — we stop before it."""
    x, ys, bs = _vars(3)
    outs = [relay.nn.bias_add(relay.multiply(x, y), b) for y, b in zip(ys, bs)]
    before = _typed([x, *ys, *bs], relay.Tuple(outs))
    after = relay.transform.CombineParallelOpBatch("multiply", "multiply", 3)(before)

    x, ys, bs = _vars(3)
    m = relay.multiply(relay.stack([x, x, x], axis=0), relay.stack(ys, axis=0))
    outs = [relay.nn.bias_add(p, b) for p, b in zip(_split_outputs(m, 3), bs)]
    tvm.ir.assert_structural_equal(after, _typed([x, *ys, *bs], relay.Tuple(outs)))
    _same_outputs(before, after, [(4, 5)] * 4 + [(5,)] * 3)


def test_pass_info():
    p = relay.transform.CombineParallelOpBatch("multiply", "multiply")
    assert p.info.name == "CombineParallelOpBatch" and p.info.opt_level == 4
    assert list(p.info.required) == ["InferType"]


def test_errors():
    with pytest.raises(ValueError, match="op_name 'nn.nope' is not a registered operator"):
        relay.transform.CombineParallelOpBatch("nn.nope", "multiply")
    with pytest.raises(ValueError, match="batch_op_name 'nope' is not a registered"):
        relay.transform.CombineParallelOpBatch("multiply", "nope")
    with pytest.raises(ValueError, match="min_num_branches must be a positive int"):
        relay.transform.CombineParallelOpBatch("multiply", "multiply", 0)
    x = relay.var("x", shape=(4, 5))
    ws = [relay.var(f"w{i}", shape=(6, 5)) for i in range(2)]
    mod = _typed([x, *ws], relay.Tuple([relay.nn.dense(x, w) for w in ws]))
    with pytest.raises(ValueError, match="nn.batch_matmul cannot take the stacked arguments"):
        relay.transform.CombineParallelOpBatch("nn.dense", "nn.batch_matmul", 2)(mod)


def test_deep_chain_before_the_branches():
    x = relay.var("x", shape=(2, 2))
    e = x
    for _ in range(100_000):
        e = relay.negative(e)
    ys = [relay.var(f"y{i}", shape=(2, 2)) for i in range(3)]
    mod = _typed([x, *ys], relay.Tuple([relay.multiply(e, y) for y in ys]))
    after = relay.transform.CombineParallelOpBatch("multiply", "multiply", 3)(mod)
    first = after["main"].body.fields[0]
    assert first.op.name == "squeeze"

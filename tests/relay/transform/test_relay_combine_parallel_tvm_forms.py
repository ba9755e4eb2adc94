"""CombineParallel* build TVM's programs: branches extend through their single-consumer
elementwise/broadcast ops, whose other arguments are concatenated (or stacked), and each branch
takes a size-mode strided_slice (or a split + squeeze) at the last combined level."""

import numpy as np

import minitvm as tvm
from minitvm import relay

RNG = np.random.default_rng(0)


def _typed(params, body):
    return relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function(params, body)))


def _run(mod, args):
    out = relay.create_executor("debug", mod=mod).evaluate()(*args)
    return [o.numpy() for o in out] if hasattr(out, "__len__") and not hasattr(
        out, "shape") else [out.numpy()]


def _same_outputs(before, after, shapes):
    args = [RNG.standard_normal(s).astype("float32") for s in shapes]
    for a, b in zip(_run(before, args), _run(after, args)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_conv2d_branches_extend_through_bias_and_relu():
    x = relay.var("x", shape=(1, 4, 6, 6))
    ws = [relay.var(f"w{i}", shape=(c, 4, 3, 3)) for i, c in enumerate((2, 3))]
    bs = [relay.var(f"b{i}", shape=(c, 1, 1)) for i, c in enumerate((2, 3))]
    outs = [relay.nn.relu(relay.add(relay.nn.conv2d(x, w, padding=(1, 1)), b))
            for w, b in zip(ws, bs)]
    before = _typed([x, *ws, *bs], relay.Tuple(outs))
    after = relay.transform.CombineParallelConv2D(2)(before)

    x2 = relay.var("x", shape=(1, 4, 6, 6))
    ws2 = [relay.var(f"w{i}", shape=(c, 4, 3, 3)) for i, c in enumerate((2, 3))]
    bs2 = [relay.var(f"b{i}", shape=(c, 1, 1)) for i, c in enumerate((2, 3))]
    y = relay.nn.conv2d(x2, relay.concatenate(ws2, axis=0), padding=(1, 1), channels=5)
    y = relay.nn.relu(relay.add(y, relay.concatenate(bs2, axis=0)))
    want = _typed([x2, *ws2, *bs2], relay.Tuple([
        relay.strided_slice(y, [0, 0], [-1, 2], [1, 1], slice_mode="size"),
        relay.strided_slice(y, [0, 2], [-1, 3], [1, 1], slice_mode="size")]))
    tvm.ir.assert_structural_equal(after, want)
    _same_outputs(before, after, [(1, 4, 6, 6), (2, 4, 3, 3), (3, 4, 3, 3), (2, 1, 1),
                                  (3, 1, 1)])


def test_conv2d_broadcast_bias_stops_the_branch():
    x = relay.var("x", shape=(1, 4, 6, 6))
    ws = [relay.var(f"w{i}", shape=(2, 4, 1, 1)) for i in range(2)]
    s = relay.var("s", shape=(1, 1, 1, 1))  # broadcast on the channel axis: not combinable
    outs = [relay.multiply(relay.nn.conv2d(x, w), s) for w in ws]
    before = _typed([x, *ws, s], relay.Tuple(outs))
    after = relay.transform.CombineParallelConv2D(2)(before)
    text = after.astext()
    assert text.count("nn.conv2d") == 1 and text.count("multiply") == 2
    _same_outputs(before, after, [(1, 4, 6, 6), (2, 4, 1, 1), (2, 4, 1, 1), (1, 1, 1, 1)])


def test_dense_to_batch_stacks_and_splits():
    x = relay.var("x", shape=(3, 8))
    ws = [relay.var(f"w{i}", shape=(4, 8)) for i in range(3)]
    bs = [relay.var(f"b{i}", shape=(4,)) for i in range(3)]
    outs = [relay.nn.relu(relay.add(relay.nn.dense(x, w), b)) for w, b in zip(ws, bs)]
    before = _typed([x, *ws, *bs], relay.Tuple(outs))
    after = relay.transform.CombineParallelDense(3)(before)

    x2 = relay.var("x", shape=(3, 8))
    ws2 = [relay.var(f"w{i}", shape=(4, 8)) for i in range(3)]
    bs2 = [relay.var(f"b{i}", shape=(4,)) for i in range(3)]
    y = relay.nn.batch_matmul(relay.stack([x2, x2, x2], axis=0), relay.stack(ws2, axis=0))
    y = relay.add(y, relay.stack([relay.expand_dims(b, 0, 1) for b in bs2], axis=0))
    y = relay.split(relay.nn.relu(y), 3, axis=0)
    want = _typed([x2, *ws2, *bs2], relay.Tuple([
        relay.squeeze(relay.TupleGetItem(y.astuple(), k), axis=[0]) for k in range(3)]))
    tvm.ir.assert_structural_equal(after, want)
    _same_outputs(before, after, [(3, 8)] + [(4, 8)] * 3 + [(4,)] * 3)


def test_dense_to_dense_concatenates_and_repeats_scalars():
    x = relay.var("x", shape=(2, 8))
    ws = [relay.var(f"w{i}", shape=(c, 8)) for i, c in enumerate((3, 5))]
    c = relay.var("c", shape=())
    outs = [relay.multiply(relay.nn.dense(x, w), c) for w in ws]
    before = _typed([x, *ws, c], relay.Tuple(outs))
    after = relay.transform.CombineParallelDense(2, to_batch=False)(before)

    x2 = relay.var("x", shape=(2, 8))
    ws2 = [relay.var(f"w{i}", shape=(n, 8)) for i, n in enumerate((3, 5))]
    c2 = relay.var("c", shape=())
    y = relay.nn.dense(x2, relay.concatenate(ws2, axis=0), units=8)
    scal = relay.concatenate([relay.repeat(relay.expand_dims(c2, -1, 1), 3, 0),
                              relay.repeat(relay.expand_dims(c2, -1, 1), 5, 0)], axis=0)
    y = relay.multiply(y, scal)
    want = _typed([x2, *ws2, c2], relay.Tuple([
        relay.strided_slice(y, [0, 0], [-1, 3], [1, 1], slice_mode="size"),
        relay.strided_slice(y, [0, 3], [-1, 5], [1, 1], slice_mode="size")]))
    tvm.ir.assert_structural_equal(after, want)
    _same_outputs(before, after, [(2, 8), (3, 8), (5, 8), ()])


def test_batch_matmul_concatenates_on_axis_1():
    x = relay.var("x", shape=(2, 3, 8))
    ws = [relay.var(f"w{i}", shape=(2, c, 8)) for i, c in enumerate((4, 6))]
    bs = [relay.var(f"b{i}", shape=(c,)) for i, c in enumerate((4, 6))]
    outs = [relay.add(relay.nn.batch_matmul(x, w), b) for w, b in zip(ws, bs)]
    before = _typed([x, *ws, *bs], relay.Tuple(outs))
    after = relay.transform.CombineParallelBatchMatmul(2)(before)

    x2 = relay.var("x", shape=(2, 3, 8))
    ws2 = [relay.var(f"w{i}", shape=(2, c, 8)) for i, c in enumerate((4, 6))]
    bs2 = [relay.var(f"b{i}", shape=(c,)) for i, c in enumerate((4, 6))]
    y = relay.add(relay.nn.batch_matmul(x2, relay.concatenate(ws2, axis=1)),
                  relay.concatenate(bs2, axis=-1))
    want = _typed([x2, *ws2, *bs2], relay.Tuple([
        relay.strided_slice(y, [0, 0, 0], [-1, -1, 4], [1, 1, 1], slice_mode="size"),
        relay.strided_slice(y, [0, 0, 4], [-1, -1, 6], [1, 1, 1], slice_mode="size")]))
    tvm.ir.assert_structural_equal(after, want)
    _same_outputs(before, after, [(2, 3, 8), (2, 4, 8), (2, 6, 8), (4,), (6,)])


def test_long_chain_is_iterative():
    x = relay.var("x", shape=(1, 4))
    ws = [relay.var(f"w{i}", shape=(4, 4)) for i in range(3)]
    outs = []
    for w in ws:
        y = relay.nn.dense(x, w)
        for _ in range(3000):
            y = relay.nn.relu(y)
        outs.append(y)
    mod = _typed([x, *ws], relay.Tuple(outs))
    after = relay.transform.CombineParallelDense(3)(mod)
    assert after.astext().count("nn.batch_matmul") == 1

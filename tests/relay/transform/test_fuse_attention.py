"""FuseAttention: a large attention chain becomes one Primitive function; small ones, chains
that do not fit and values with other uses are left to FuseOps."""

from __future__ import annotations

import numpy as np
import pytest
from pass_test_util import check_numerics, infer, run_pass

import minitvm as tvm
from minitvm import relay
from minitvm.relay.transform import FuseAttention
from minitvm.relay.transform.fuse_attention import fuse_attention
from minitvm.schedule import attention


@pytest.fixture
def small_threshold(monkeypatch):
    """Fuse every attention, whatever its size (keeps the numeric tests fast)."""
    monkeypatch.setattr(attention, "MIN_SCORE_BYTES", 0)


def _qkv(b=2, m=5, n=7, d=3, dv=4):
    return (relay.var("q", shape=(b, m, d)), relay.var("k", shape=(b, n, d)),
            relay.var("v", shape=(b, n, dv)))


def _attention(q, k, v, mask=None, scale=None):
    s = relay.nn.batch_matmul(q, k)
    if scale is not None:
        s = relay.multiply(s, relay.const(scale, "float32"))
    if mask is not None:
        s = relay.add(s, mask)
    return relay.nn.batch_matmul(relay.nn.softmax(s), v, transpose_b=False)


def test_rewrites_to_a_primitive_function(small_threshold):
    q, k, v = _qkv()
    mask = relay.var("mask", shape=(2, 5, 7))
    mod = infer(tvm.IRModule.from_expr(relay.Function([q, k, v, mask],
                                                      _attention(q, k, v, mask, 0.5))))
    out = run_pass(FuseAttention(), mod)
    p0, p1, p2, p3 = (relay.var(f"p{i}", shape=s) for i, s in
                      enumerate([(2, 5, 3), (2, 7, 3), (2, 5, 7), (2, 7, 4)]))
    fn = relay.Function([p0, p1, p2, p3], _attention(p0, p1, p3, p2, 0.5))
    fn = infer(fn).with_attr("Primitive", 1)
    expected = relay.Function([q, k, v, mask], relay.Call(fn, [q, k, mask, v]))
    assert tvm.ir.structural_equal(out["main"], infer(expected))
    check_numerics(mod, out)


def test_left_alone_below_the_threshold():
    q, k, v = _qkv()
    mod = infer(tvm.IRModule.from_expr(relay.Function([q, k, v], _attention(q, k, v))))
    out = run_pass(FuseAttention(), mod)
    assert tvm.ir.structural_equal(out["main"], mod["main"])


def _unchanged(body, params) -> bool:
    func = infer(relay.Function(params, body))
    out, count = fuse_attention(func)
    return count == 0 and out is func


def test_softmax_not_on_the_last_axis(small_threshold):
    q, k, v = _qkv(m=7)
    s = relay.nn.softmax(relay.nn.batch_matmul(q, k), axis=1)
    assert _unchanged(relay.nn.batch_matmul(s, v, transpose_b=False), [q, k, v])


def test_transpose_in_between(small_threshold):
    q, k, v = _qkv(m=7)
    s = relay.transpose(relay.nn.batch_matmul(q, k), (0, 2, 1))
    assert _unchanged(relay.nn.batch_matmul(relay.nn.softmax(s), v, transpose_b=False),
                      [q, k, v])


def test_scores_with_another_use(small_threshold):
    q, k, v = _qkv()
    s = relay.nn.batch_matmul(q, k)
    out = relay.nn.batch_matmul(relay.nn.softmax(s), v, transpose_b=False)
    assert _unchanged(relay.Tuple([out, s]), [q, k, v])


def test_softmax_with_another_use(small_threshold):
    q, k, v = _qkv()
    p = relay.nn.softmax(relay.nn.batch_matmul(q, k))
    out = relay.nn.batch_matmul(p, v, transpose_b=False)
    assert _unchanged(relay.Tuple([out, p]), [q, k, v])


def test_broadcasting_operand_changes_the_shape(small_threshold):
    q, k, v = _qkv(b=1)
    bias = relay.var("bias", shape=(3, 5, 7))  # broadcasts the scores' batch 1 -> 3
    s = relay.add(relay.nn.batch_matmul(q, k), bias)
    v3 = relay.var("v3", shape=(3, 7, 4))
    assert _unchanged(relay.nn.batch_matmul(relay.nn.softmax(s), v3, transpose_b=False),
                      [q, k, v, bias, v3])


def test_chain_of_100000_nodes():
    """The pass walks a long chain without recursion (and fuses the attention at its end)."""
    x = relay.var("x", shape=(1, 4, 4))
    y = x
    for _ in range(100_000):
        y = relay.negative(y)
    out = relay.nn.batch_matmul(relay.nn.softmax(relay.nn.batch_matmul(y, x)), x,
                                transpose_b=False)
    func = infer(relay.Function([x], out))
    attention_bytes = attention.MIN_SCORE_BYTES
    try:
        attention.MIN_SCORE_BYTES = 0
        _, count = fuse_attention(func)
    finally:
        attention.MIN_SCORE_BYTES = attention_bytes
    assert count == 1


def test_model_level_build(small_threshold):
    """relay.build at opt_level 3: one kernel for the attention, outputs as numpy's."""
    rng = np.random.default_rng(1)
    q, k, v = _qkv(b=2, m=19, n=21, d=8, dv=5)
    w = relay.var("w", shape=(5, 5))
    mask = relay.var("mask", shape=(1, 19, 21))
    y = relay.nn.dense(relay.reshape(_attention(q, k, v, mask, 0.25), (-1, 5)), w)
    mod = tvm.IRModule.from_expr(relay.Function([q, k, v, mask, w], y))
    arrays = [rng.standard_normal([int(d) for d in p.type_annotation.shape]).astype("float32")
              for p in mod["main"].params]
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm")
    names = [n for n in lib.get_lib().native_functions if "batch_matmul" in n]
    assert len(names) == 1 and "softmax" in names[0]
    assert "attn_tile" in lib.get_lib().get_source("ll")  # the fused schedule's tile
    gm = tvm.contrib.graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    for p, a in zip(mod["main"].params, arrays, strict=True):
        gm.set_input(p.name_hint, a)
    gm.run()
    qa, ka, va, ma, wa = arrays
    s = qa @ ka.transpose(0, 2, 1) * 0.25 + ma
    e = np.exp(s - s.max(-1, keepdims=True))
    want = ((e / e.sum(-1, keepdims=True)) @ va).reshape(-1, 5) @ wa.T
    np.testing.assert_allclose(gm.get_output(0).numpy(), want, rtol=1e-5, atol=1e-5)

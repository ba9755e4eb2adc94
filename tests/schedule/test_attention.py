"""schedule.attention: the fused scores -> softmax -> V kernel against numpy, and the chains it
does not take."""

from __future__ import annotations

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.relay.backend import te_compiler
from minitvm.schedule import attention, lower_te
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import walk_stmts


def _chain(b, m, n, d, dv, k_nd, v_dn, scale=None, mask=None, bq=None):
    q = relay.var("q", shape=(bq or b, m, d))
    k = relay.var("k", shape=(b, n, d) if k_nd else (b, d, n))
    v = relay.var("v", shape=(b, dv, n) if v_dn else (b, n, dv))
    params = [q, k, v]
    s = relay.nn.batch_matmul(q, k, transpose_b=k_nd)
    if scale is not None:
        s = relay.multiply(s, relay.const(scale, "float32"))
    if mask is not None:
        msk = relay.var("mask", shape=mask)
        params.append(msk)
        s = relay.add(s, msk)
    out = relay.nn.batch_matmul(relay.nn.softmax(s), v, transpose_b=v_dn)
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function(params, out)))
    return mod["main"].with_attr("Primitive", 1)


def _reference(arrays, k_nd, v_dn, scale, mask):
    q, k, v = arrays[:3]
    s = q @ (k.transpose(0, 2, 1) if k_nd else k)
    if scale is not None:
        s = s * np.float32(scale)
    if mask is not None:
        s = s + arrays[3]
    e = np.exp(s - s.max(-1, keepdims=True))
    return (e / e.sum(-1, keepdims=True)) @ (v.transpose(0, 2, 1) if v_dn else v)


CASES = [  # (batch, rows, cols, depth, depth_v, K given [b, n, d], V given [b, dv, n], ...)
    (1, 64, 64, 16, 16, False, True, None, None, None),  # tsm_nonlocal's layout
    (2, 37, 45, 7, 19, True, False, 0.3, (2, 37, 45), None),  # odd sizes, a full mask
    (3, 16, 33, 16, 32, True, True, None, (1, 1, 33), None),  # a broadcast mask
    (1, 21, 50, 5, 37, False, False, 0.5, None, None),  # leftover vectors, overlapping last
    (2, 9, 8, 3, 5, True, True, None, (2, 1, 8), None),  # fewer columns than a vector
    (4, 19, 40, 8, 16, True, False, 0.125, None, 1),  # Q's batch 1 broadcast
    (1, 30, 70, 8, 13, True, False, None, (1, 30, 70), None),  # a narrow output, tails
    (2, 26, 100, 16, 64, False, True, 0.2, None, None),  # wide output, V transposed
]


@pytest.mark.parametrize("b, m, n, d, dv, k_nd, v_dn, scale, mask, bq", CASES)
def test_fused_kernel_matches_numpy(b, m, n, d, dv, k_nd, v_dn, scale, mask, bq):
    func = _chain(b, m, n, d, dv, k_nd, v_dn, scale, mask, bq)
    kern = te_compiler.lower_function(func, "attn")
    assert kern.kind == "native" and "attn_tile" in kern.ir
    rng = np.random.default_rng(7)
    arrays = [rng.standard_normal([int(x) for x in p.checked_type.shape]).astype("float32")
              for p in func.params]
    out = np.zeros((b, m, dv), "float32")
    ws = [np.zeros(kern.ws_bytes, "uint8")] if kern.ws_bytes else []
    kern.kernel(*arrays, out, *ws)
    want = _reference(arrays, k_nd, v_dn, scale, mask)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)


def _te(func):
    inputs, consts, outputs = te_compiler.build_te(func)
    return [*inputs, *(c[0] for c in consts)], outputs


def test_match_recognizes_the_chain():
    inputs, outputs = _te(_chain(2, 8, 9, 4, 5, True, False, 0.5, (2, 8, 9)))
    found = attention.match(inputs, outputs)
    assert found is not None and found.k_nd and not found.v_dn
    assert found.q is inputs[0] and found.k is inputs[1] and found.v is inputs[2]


def _func(params, body):
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function(params, body)))
    return mod["main"]


def test_match_declines_a_softmax_on_another_axis():
    q, k, v = (relay.var(n, shape=(1, 8, 8)) for n in "qkv")
    p = relay.nn.softmax(relay.nn.batch_matmul(q, k), axis=1)
    assert attention.match(*_te(_func([q, k, v], relay.nn.batch_matmul(p, v)))) is None


def test_match_declines_a_transpose_between():
    q, k, v = (relay.var(n, shape=(1, 8, 8)) for n in "qkv")
    s = relay.transpose(relay.nn.batch_matmul(q, k), (0, 2, 1))
    body = relay.nn.batch_matmul(relay.nn.softmax(s), v)
    assert attention.match(*_te(_func([q, k, v], body))) is None


def test_match_declines_a_plain_softmax_then_product():
    s, v = relay.var("s", shape=(1, 8, 8)), relay.var("v", shape=(1, 8, 8))
    body = relay.nn.batch_matmul(relay.nn.softmax(s), v)
    assert attention.match(*_te(_func([s, v], body))) is None


def test_lower_te_takes_the_fused_schedule():
    inputs, outputs = _te(_chain(1, 20, 24, 4, 4, False, True))
    prim, _ = lower_te(inputs, outputs, "attn")
    names = {s.buffer.name for s in walk_stmts(prim.body) if isinstance(s, S.DeclBuffer)}
    assert {"attn_tile", "attn_inv"} <= names


def test_worth_fusing_is_the_score_bytes_rule():
    side = int((attention.MIN_SCORE_BYTES // 4) ** 0.5)
    assert not attention.worth_fusing(side // 2, side)
    assert attention.worth_fusing(2 * side, side)

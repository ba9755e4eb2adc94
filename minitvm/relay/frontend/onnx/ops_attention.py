"""ONNX's ``Attention`` (opsets 23-25) and ``RotaryEmbedding`` (opset 23) on Relay, as the
products, softmax and masks ``frontend_common.onnx_attention`` plans: 3-D and 4-D inputs,
grouped-query heads, ``scale``, ``softcap``, ``is_causal``, sliding windows, a boolean or
additive ``attn_mask``, the past / present key-value cache, ``nonpad_kv_seqlen`` and the
``qk_matmul_output`` modes."""

from __future__ import annotations

import math

import numpy as np

from ....frontend_common.onnx_attention import (
    attention_plan,
    key_minus_query,
    rotary_plan,
    static_bias,
)
from ... import op as _op
from ...op import nn as _nn
from .ops_nn import matmul
from .registry import onnx_dtype, register


def _heads_first(x, shape, heads: int):
    """[b, s, heads * d] -> [b, heads, s, d]."""
    b, s, hidden = shape
    return _op.transpose(_op.reshape(x, (b, s, heads, hidden // heads)), (0, 2, 1, 3))


def _neg_inf(ctx, dtype: str):
    return ctx.const(-np.inf, dtype)


def _mask_bias(ctx, mask, kv_len: int, dtype: str):
    """``attn_mask`` as an additive bias: a boolean mask becomes 0 / -inf; a mask shorter than
    the keys is padded with -inf (the padded keys are not attended)."""
    if ctx.dtype(mask) == "bool":
        mask = _op.where(mask, ctx.const(0.0, dtype), _neg_inf(ctx, dtype))
    elif ctx.dtype(mask) != dtype:
        raise ctx.fail(f"a float attn_mask must have Q's dtype {dtype}, got {ctx.dtype(mask)}")
    shape = ctx.shape(mask)
    if shape[-1] < kv_len:
        pads = [(0, 0)] * (len(shape) - 1) + [(0, kv_len - shape[-1])]
        mask = _nn.pad(mask, pads, pad_value=-np.inf)
    return mask


def _nonpad_bias(ctx, plan, nonpad, dtype: str):
    """The bias [b, 1, q, kv] of ``nonpad_kv_seqlen`` (keys at or past it are padding) and of
    the causal / window frontiers at the per-batch offset ``nonpad - q_len``."""
    b = ctx.shape(nonpad)[0]
    n = _op.reshape(nonpad, (b, 1, 1))
    rel_table = key_minus_query(plan.q_len, plan.kv_len)
    ok = _op.less(ctx.const(np.arange(plan.kv_len).reshape(1, 1, -1)), n)
    if plan.causal or plan.has_window:
        off = _op.subtract(n, ctx.const(plan.q_len, "int64"))
        rel = _op.subtract(ctx.const(rel_table[None]), off)
        if plan.causal:
            ok = _op.logical_and(ok, _op.less_equal(rel, ctx.const(0, "int64")))
        if plan.window[0] >= 0:
            ok = _op.logical_and(ok, _op.greater_equal(rel, ctx.const(-plan.window[0], "int64")))
        if plan.window[1] >= 0:
            ok = _op.logical_and(ok, _op.less_equal(rel, ctx.const(plan.window[1], "int64")))
    bias = _op.where(ok, ctx.const(0.0, dtype), _neg_inf(ctx, dtype))
    return _op.expand_dims(bias, 1)


def _add(a, b):
    return b if a is None else a if b is None else _op.add(a, b)


@register("Attention")
def _attention(ctx, ins, attrs):
    ins = list(ins) + [None] * (7 - len(ins))
    q, k, v, mask, past_k, past_v, nonpad = ins[:7]
    if (past_k is None) != (past_v is None):
        raise ctx.fail("past_key and past_value must be given together")
    if nonpad is not None and past_k is not None:
        raise ctx.fail("nonpad_kv_seqlen cannot be combined with past_key / past_value")
    dtype = ctx.dtype(q)
    qs, ks, vs = ctx.shape(q), ctx.shape(k), ctx.shape(v)
    plan = attention_plan(qs, ks, vs, None if past_k is None else ctx.shape(past_k), attrs,
                          ctx.opset, ctx.fail, onnx_dtype)
    if plan.rank == 3:
        q = _heads_first(q, qs, plan.q_heads)
        k = _heads_first(k, ks, plan.kv_heads)
        v = _heads_first(v, vs, plan.kv_heads)
    if past_k is not None:
        k = _op.concatenate([past_k, k], axis=2)
        v = _op.concatenate([past_v, v], axis=2)
    b, g, sq, skv = qs[0], plan.group, plan.q_len, plan.kv_len
    # the scores, per key/value head: the group's query heads folded into the query axis
    # (Q * sqrt(scale)) @ (K * sqrt(scale))^T, as ONNX's function body rounds it
    root = ctx.const(math.sqrt(plan.scale), dtype)
    qg, ks = _op.multiply(q, root), _op.multiply(k, root)
    if g > 1:
        qg = _op.reshape(qg, (b, plan.kv_heads, g * sq, plan.head))
    s = matmul(ctx, qg, _op.transpose(ks, (0, 1, 3, 2)))
    if g > 1:
        s = _op.reshape(s, (b, plan.q_heads, sq, skv))
    raw = s
    if plan.softcap > 0:
        c = ctx.const(plan.softcap, dtype)
        s = _op.multiply(_op.tanh(_op.divide(s, c)), c)
    capped = s
    bias = None if mask is None else _mask_bias(ctx, mask, skv, dtype)
    if nonpad is None:
        fixed = static_bias(plan, dtype, ctx.fail)
        bias = _add(bias, None if fixed is None else ctx.const(fixed))
    else:
        bias = _add(bias, _nonpad_bias(ctx, plan, nonpad, dtype))
    if bias is not None:
        s = _op.add(s, bias)
    biased = s
    if plan.softmax_dtype and plan.softmax_dtype != dtype:
        s = _op.cast(s, plan.softmax_dtype)
    p = _nn.softmax(s, axis=-1)
    if plan.softmax_dtype and plan.softmax_dtype != dtype:
        p = _op.cast(p, dtype)
    p = _guard_masked_rows(ctx, p, bias, dtype)
    pg = p if g == 1 else _op.reshape(p, (b, plan.kv_heads, g * sq, skv))
    y = matmul(ctx, pg, v)
    if g > 1:
        y = _op.reshape(y, (b, plan.q_heads, sq, plan.v_head))
    if plan.rank == 3:
        y = _op.reshape(_op.transpose(y, (0, 2, 1, 3)), (b, sq, plan.q_heads * plan.v_head))
    qk = {0: raw, 1: capped, 2: biased, 3: p}[plan.mode]
    return [y, k, v, qk]


def _guard_masked_rows(ctx, p, bias, dtype: str):
    """Rows whose bias is -inf everywhere (no key attended) are 0, as ONNX says, not the NaN
    softmax gives them; decided at import when the bias is a constant."""
    if bias is None:
        return p
    value = ctx.maybe_value(bias)
    if value is not None:
        dead = np.isneginf(value.max(axis=-1, keepdims=True))
        if not dead.any():
            return p
        return _op.where(ctx.const(dead), ctx.const(0.0, dtype), p)
    live = _op.greater(_op.max(bias, axis=-1, keepdims=True), _neg_inf(ctx, dtype))
    return _op.where(live, p, ctx.const(0.0, dtype))


@register("RotaryEmbedding")
def _rotary_embedding(ctx, ins, attrs):
    x, cos, sin = ins[0], ins[1], ins[2]
    pos = ins[3] if len(ins) > 3 else None
    xs = ctx.shape(x)
    plan = rotary_plan(xs, ctx.shape(cos), attrs, pos is not None, ctx.fail)
    if pos is not None:  # [max_pos, dim/2] gathered at [b, s] -> [b, s, dim/2]
        cos, sin = _op.take(cos, pos, axis=0), _op.take(sin, pos, axis=0)
    if plan.heads is not None:  # [b, s, h*d] -> [b, s, h, d]; caches [b, s, 1, dim/2]
        x4 = _op.reshape(x, (xs[0], xs[1], plan.heads, plan.head))
        cos, sin, axis = _op.expand_dims(cos, 2), _op.expand_dims(sin, 2), 3
    else:  # [b, h, s, d]; caches [b, 1, s, dim/2]
        x4 = x
        cos, sin, axis = _op.expand_dims(cos, 1), _op.expand_dims(sin, 1), 3
    y = _rotate(ctx, x4, cos, sin, plan, axis)
    return _op.reshape(y, xs) if plan.heads is not None else y


def _rotate(ctx, x, cos, sin, plan, axis: int):
    """Rotate the first ``plan.dim`` channels of the last axis by the cached angles."""
    dim, half = plan.dim, plan.dim // 2
    rot = x if dim == plan.head else _op.strided_slice(x, [0], [dim], axes=[axis])
    if plan.interleaved:
        pairs = _op.reshape(rot, (*ctx.shape(rot)[:-1], half, 2))
        x1 = _op.take(pairs, ctx.const(0, "int64"), axis=axis + 1)
        x2 = _op.take(pairs, ctx.const(1, "int64"), axis=axis + 1)
    else:
        x1 = _op.strided_slice(rot, [0], [half], axes=[axis])
        x2 = _op.strided_slice(rot, [half], [dim], axes=[axis])
    real = _op.subtract(_op.multiply(cos, x1), _op.multiply(sin, x2))
    imag = _op.add(_op.multiply(sin, x1), _op.multiply(cos, x2))
    if plan.interleaved:
        out = _op.reshape(_op.stack([real, imag], axis + 1), ctx.shape(rot))
    else:
        out = _op.concatenate([real, imag], axis)
    if dim == plan.head:
        return out
    rest = _op.strided_slice(x, [dim], [plan.head], axes=[axis])
    return _op.concatenate([out, rest], axis)

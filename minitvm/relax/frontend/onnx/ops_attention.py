"""ONNX's ``Attention`` (opsets 23-25) and ``RotaryEmbedding`` (opset 23) on Relax, as the
products, softmax and masks ``frontend_common.onnx_attention`` plans: 3-D and 4-D inputs,
grouped-query heads, ``scale``, ``softcap``, ``is_causal``, sliding windows, a boolean or
additive ``attn_mask``, the past / present key-value cache, ``nonpad_kv_seqlen`` and the
``qk_matmul_output`` modes. The batch may be symbolic; heads and head sizes must be static,
and so must the sequence lengths where a causal or window frontier is built at import."""

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
from ...expr import const
from .context import Context, onnx_dtype, register


def _c(value, dtype: str):
    return const(np.array(value, dtype), dtype)


def _heads_first(ctx: Context, x, heads: int):
    """[b, s, heads * d] -> [b, heads, s, d]."""
    b, s, hidden = ctx.shape(x)
    x = ctx.emit(_op.reshape(x, ctx.shape_expr([b, s, heads, hidden // heads])))
    return ctx.emit(_op.permute_dims(x, [0, 2, 1, 3]))


def _mask_bias(ctx: Context, mask, kv_len, dtype: str):
    """``attn_mask`` as an additive bias: a boolean mask becomes 0 / -inf; a mask shorter than
    the keys is padded with -inf (the padded keys are not attended)."""
    if ctx.dtype(mask) == "bool":
        mask = ctx.emit(_op.where(mask, _c(0.0, dtype), _c(-np.inf, dtype)))
    elif ctx.dtype(mask) != dtype:
        raise ctx.fail(f"a float attn_mask must have Q's dtype {dtype}, got {ctx.dtype(mask)}")
    shape = ctx.shape(mask)
    if shape[-1] != kv_len:
        if not isinstance(shape[-1], int) or not isinstance(kv_len, int):
            raise ctx.fail("a mask shorter than the keys needs static key lengths")
        flat = [0] * (2 * len(shape) - 2) + [0, kv_len - shape[-1]]
        mask = ctx.emit(_op.nn.pad(mask, flat, float("-inf"), "constant"))
    return mask


def _nonpad_bias(ctx: Context, plan, nonpad, dtype: str):
    """The bias [b, 1, q, kv] of ``nonpad_kv_seqlen`` (keys at or past it are padding) and of
    the causal / window frontiers at the per-batch offset ``nonpad - q_len``."""
    if not isinstance(plan.q_len, int) or not isinstance(plan.kv_len, int):
        raise ctx.fail("nonpad_kv_seqlen needs static sequence lengths")
    b = ctx.shape(nonpad)[0]
    n = ctx.emit(_op.reshape(nonpad, ctx.shape_expr([b, 1, 1])))
    ok = ctx.emit(_op.less(const(np.arange(plan.kv_len).reshape(1, 1, -1)), n))
    if plan.causal or plan.has_window:
        off = ctx.emit(_op.subtract(n, _c(plan.q_len, "int64")))
        rel = ctx.emit(_op.subtract(const(key_minus_query(plan.q_len, plan.kv_len)[None]), off))
        tests = []
        if plan.causal:
            tests.append(_op.less_equal(rel, _c(0, "int64")))
        if plan.window[0] >= 0:
            tests.append(_op.greater_equal(rel, _c(-plan.window[0], "int64")))
        if plan.window[1] >= 0:
            tests.append(_op.less_equal(rel, _c(plan.window[1], "int64")))
        for t in tests:
            ok = ctx.emit(_op.logical_and(ok, ctx.emit(t)))
    bias = ctx.emit(_op.where(ok, _c(0.0, dtype), _c(-np.inf, dtype)))
    return ctx.emit(_op.expand_dims(bias, 1))


def _add(ctx: Context, a, b):
    return b if a is None else a if b is None else ctx.emit(_op.add(a, b))


def _guard_masked_rows(ctx: Context, p, bias, fixed, dtype: str):
    """Rows whose bias is -inf everywhere (no key attended) are 0, as ONNX says, not the NaN
    softmax gives them; decided at import when the bias is the constant ``fixed`` alone."""
    if bias is None:
        return p
    if bias is fixed:
        dead = np.isneginf(ctx.known(bias).max(axis=-1, keepdims=True))
        if not dead.any():
            return p
        return ctx.emit(_op.where(const(dead), _c(0.0, dtype), p))
    top = ctx.emit(_op.max(bias, [-1], True))
    live = ctx.emit(_op.greater(top, _c(-np.inf, dtype)))
    return ctx.emit(_op.where(live, p, _c(0.0, dtype)))


@register("Attention")
def _attention(ctx: Context, ins, attrs):
    ins = list(ins) + [None] * (7 - len(ins))
    q, k, v = (ctx.expr(i) for i in ins[:3])
    mask, past_k, past_v, nonpad = (None if i is None else ctx.expr(i) for i in ins[3:7])
    if (past_k is None) != (past_v is None):
        raise ctx.fail("past_key and past_value must be given together")
    if nonpad is not None and past_k is not None:
        raise ctx.fail("nonpad_kv_seqlen cannot be combined with past_key / past_value")
    dtype = ctx.dtype(q)
    qs = ctx.shape(q)
    plan = attention_plan(qs, ctx.shape(k), ctx.shape(v),
                          None if past_k is None else ctx.shape(past_k), attrs, ctx.opset,
                          ctx.fail, onnx_dtype)
    if plan.rank == 3:
        q = _heads_first(ctx, q, plan.q_heads)
        k = _heads_first(ctx, k, plan.kv_heads)
        v = _heads_first(ctx, v, plan.kv_heads)
    if past_k is not None:
        k = ctx.emit(_op.concat([past_k, k], axis=2))
        v = ctx.emit(_op.concat([past_v, v], axis=2))
    kv_len = ctx.shape(k)[2]
    b, g, sq = qs[0], plan.group, plan.q_len
    # the scores, per key/value head: the group's query heads folded into the query axis
    # (Q * sqrt(scale)) @ (K * sqrt(scale))^T, as ONNX's function body rounds it
    root = _c(math.sqrt(plan.scale), dtype)
    qg, ks = ctx.emit(_op.multiply(q, root)), ctx.emit(_op.multiply(k, root))
    if g > 1:
        qg = ctx.emit(_op.reshape(qg, ctx.shape_expr([b, plan.kv_heads, g * sq, plan.head])))
    s = ctx.emit(_op.matmul(qg, ctx.emit(_op.permute_dims(ks, [0, 1, 3, 2]))))
    if g > 1:
        s = ctx.emit(_op.reshape(s, ctx.shape_expr([b, plan.q_heads, sq, kv_len])))
    raw = s
    if plan.softcap > 0:
        c = _c(plan.softcap, dtype)
        s = ctx.emit(_op.multiply(ctx.emit(_op.tanh(ctx.emit(_op.divide(s, c)))), c))
    capped = s
    bias = None if mask is None else _mask_bias(ctx, mask, kv_len, dtype)
    fixed = None
    if nonpad is None:
        table = static_bias(plan, dtype, ctx.fail)
        fixed = None if table is None else ctx.expr(table)
        bias = _add(ctx, bias, fixed)
    else:
        bias = _add(ctx, bias, _nonpad_bias(ctx, plan, nonpad, dtype))
    if bias is not None:
        s = ctx.emit(_op.add(s, bias))
    biased = s
    cast = plan.softmax_dtype not in (None, dtype)
    if cast:
        s = ctx.emit(_op.astype(s, plan.softmax_dtype))
    p = ctx.emit(_op.nn.softmax(s, axis=-1))
    if cast:
        p = ctx.emit(_op.astype(p, dtype))
    p = _guard_masked_rows(ctx, p, bias, fixed, dtype)
    pg = p
    if g > 1:
        pg = ctx.emit(_op.reshape(p, ctx.shape_expr([b, plan.kv_heads, g * sq, kv_len])))
    y = ctx.emit(_op.matmul(pg, v))
    if g > 1:
        y = ctx.emit(_op.reshape(y, ctx.shape_expr([b, plan.q_heads, sq, plan.v_head])))
    if plan.rank == 3:
        y = ctx.emit(_op.permute_dims(y, [0, 2, 1, 3]))
        y = ctx.emit(_op.reshape(y, ctx.shape_expr([b, sq, plan.q_heads * plan.v_head])))
    qk = {0: raw, 1: capped, 2: biased, 3: p}[plan.mode]
    return [y, k, v, qk]


@register("RotaryEmbedding")
def _rotary_embedding(ctx: Context, ins, attrs):
    x, cos, sin = (ctx.expr(i) for i in ins[:3])
    pos = ctx.expr(ins[3]) if len(ins) > 3 and ins[3] is not None else None
    xs = ctx.shape(x)
    plan = rotary_plan(xs, ctx.shape(cos), attrs, pos is not None, ctx.fail)
    if pos is not None:  # [max_pos, dim/2] gathered at [b, s] -> [b, s, dim/2]
        cos = ctx.emit(_op.take(cos, pos, axis=0))
        sin = ctx.emit(_op.take(sin, pos, axis=0))
    # 3-D: [b, s, h*d] -> [b, s, h, d], caches [b, s, 1, dim/2]; 4-D: caches [b, 1, s, dim/2]
    head_axis = 2 if plan.heads is not None else 1
    x4 = x
    if plan.heads is not None:
        x4 = ctx.emit(_op.reshape(x, ctx.shape_expr([xs[0], xs[1], plan.heads, plan.head])))
    cos = ctx.emit(_op.expand_dims(cos, head_axis))
    sin = ctx.emit(_op.expand_dims(sin, head_axis))
    y = _rotate(ctx, x4, cos, sin, plan)
    if plan.heads is not None:
        y = ctx.emit(_op.reshape(y, ctx.shape_expr(xs)))
    return y


def _slice(ctx: Context, x, begin: int, end: int):
    return ctx.emit(_op.strided_slice(x, [3], [begin], [end]))


def _rotate(ctx: Context, x, cos, sin, plan):
    """Rotate the first ``plan.dim`` channels of the last axis by the cached angles."""
    dim, half = plan.dim, plan.dim // 2
    rot = x if dim == plan.head else _slice(ctx, x, 0, dim)
    if plan.interleaved:
        pairs = ctx.emit(_op.reshape(rot, ctx.shape_expr([*ctx.shape(rot)[:-1], half, 2])))
        x1 = ctx.emit(_op.take(pairs, _c(0, "int64"), axis=4))
        x2 = ctx.emit(_op.take(pairs, _c(1, "int64"), axis=4))
    else:
        x1, x2 = _slice(ctx, rot, 0, half), _slice(ctx, rot, half, dim)
    real = ctx.emit(_op.subtract(_op.multiply(cos, x1), _op.multiply(sin, x2)))
    imag = ctx.emit(_op.add(_op.multiply(sin, x1), _op.multiply(cos, x2)))
    if plan.interleaved:
        out = ctx.emit(_op.stack([real, imag], 4))
        out = ctx.emit(_op.reshape(out, ctx.shape_expr(ctx.shape(rot))))
    else:
        out = ctx.emit(_op.concat([real, imag], axis=3))
    if dim == plan.head:
        return out
    return ctx.emit(_op.concat([out, _slice(ctx, x, dim, plan.head)], axis=3))

"""ATen attention onto Relay: ``scaled_dot_product_attention`` (masks, causal, scale,
``enable_gqa``), the CPU flash-attention form TorchScript records, and
``_native_multi_head_attention``."""

from __future__ import annotations

import math

import numpy as np

from ... import expr as _expr
from ... import op as _op
from ...op import nn as _nn
from .aten import _scalar_like, register
from .aten_linalg import _matmul


def _sdpa(ctx, q, k, v, mask, causal, scale):
    qs, ks = ctx.shape(q), ctx.shape(k)
    dt = ctx.dtype(q)
    scale = float(scale) if scale is not None else 1.0 / math.sqrt(qs[-1])
    kt = _op.transpose(k, list(range(len(ks) - 2)) + [len(ks) - 1, len(ks) - 2])
    scores = _op.multiply(_matmul(ctx, q, kt), _scalar_like(ctx, scale, q))
    if causal:
        keep = np.tril(np.ones((qs[-2], ks[-2]), dtype=bool))
        scores = _op.where(_expr.const(keep), scores,
                           _expr.const(np.array(-np.inf, dt), dt))
    if mask is not None:
        if ctx.dtype(mask) == "bool":
            scores = _op.where(mask, scores, _expr.const(np.array(-np.inf, dt), dt))
        else:
            scores = _op.add(scores, mask)
    return _matmul(ctx, _nn.softmax(scores, axis=-1), v), scores


def _gqa_heads(ctx, q, kv):
    """``enable_gqa``: each key / value head serves ``Hq / Hkv`` consecutive query heads (axis
    -3), as torch repeats them; an already equal head count is left alone."""
    hq, hkv = ctx.shape(q)[-3], ctx.shape(kv)[-3]
    if hq == hkv:
        return kv
    if not isinstance(hq, int) or not isinstance(hkv, int) or hq % hkv:
        raise ctx.fail(f"enable_gqa needs static head counts with {hkv} dividing {hq}")
    return _op.repeat(kv, hq // hkv, axis=len(ctx.shape(kv)) - 3)


@register("scaled_dot_product_attention")
def _scaled_dot_product_attention(ctx, args):
    q, k, v = args[:3]
    mask = args[3] if len(args) > 3 else None
    causal = bool(args[5]) if len(args) > 5 else False
    scale = args[6] if len(args) > 6 else None
    if len(args) > 4 and args[4]:
        raise ctx.fail("dropout_p > 0 is a training-only setting")
    if len(args) > 7 and args[7]:
        k, v = _gqa_heads(ctx, q, k), _gqa_heads(ctx, q, v)
    return _sdpa(ctx, q, k, v, mask, causal, scale)[0]


@register("_scaled_dot_product_flash_attention_for_cpu")
def _sdpa_flash_cpu(ctx, args):
    """(q, k, v, dropout_p, is_causal, attn_mask, scale) -> (output, logsumexp)."""
    q, k, v = args[:3]
    causal = bool(args[4]) if len(args) > 4 else False
    mask = args[5] if len(args) > 5 else None
    scale = args[6] if len(args) > 6 else None
    out, scores = _sdpa(ctx, q, k, v, mask, causal, scale)
    mx = _op.max(scores, [-1], keepdims=True)
    lse = _op.add(_op.log(_op.sum(_op.exp(_op.subtract(scores, mx)), [-1])),
                  _op.squeeze(mx, [-1]))
    return out, lse


@register("_native_multi_head_attention")
def _native_mha(ctx, args):
    """nn.MultiheadAttention's inference fast path (batch-first, packed in-projection)."""
    q, k, v, embed, heads, w_qkv, b_qkv, w_out, b_out = args[:9]
    mask = args[9] if len(args) > 9 else None
    need_weights = bool(args[10]) if len(args) > 10 else True
    average = bool(args[11]) if len(args) > 11 else True
    mask_type = args[12] if len(args) > 12 else None
    keep = None
    if mask is not None:  # bool masks are True where a key is ignored; float ones are added
        keep = _op.logical_not(mask) if ctx.dtype(mask) == "bool" else mask
        if mask_type == 1 and len(ctx.shape(mask)) == 2:  # key padding: (batch, keys)
            b, s = ctx.shape(mask)
            keep = _op.reshape(keep, (b, 1, 1, s))
    embed, heads = int(embed), int(heads)
    ws, bs = _op.split(w_qkv, 3, axis=0), _op.split(b_qkv, 3, axis=0)

    def heads_first(x, i):
        b, n = ctx.shape(x)[:2]
        y = _op.add(_nn.dense(x, ws[i]), bs[i])
        return _op.transpose(_op.reshape(y, (b, n, heads, embed // heads)), [0, 2, 1, 3])

    qh, kh, vh = heads_first(q, 0), heads_first(k, 1), heads_first(v, 2)
    out, scores = _sdpa(ctx, qh, kh, vh, keep, False, None)
    b, n = ctx.shape(q)[:2]
    out = _op.reshape(_op.transpose(out, [0, 2, 1, 3]), (b, n, embed))
    out = _op.add(_nn.dense(out, w_out), b_out)
    if not need_weights:
        return out, None
    probs = _nn.softmax(scores, axis=-1)
    return out, (_op.mean(probs, [1]) if average else probs)

"""What the Relay and Relax ONNX importers share of ``Attention`` (opsets 23-25) and
``RotaryEmbedding`` (opset 23): the shapes, the scale, and the masks that are known at import.

Attention is decomposed as ONNX's function body describes it, with one change that saves the
copies of grouped-query attention: the ``q_num_heads = g * kv_num_heads`` query heads are
folded into the query-length axis of their key/value head, so both products run per key/value
head without repeating K and V::

    q [b, hq, sq, d] -> [b, hkv, g*sq, d];  s = (q * scale) @ k^T      [b, hkv, g*sq, skv]
    s -> [b, hq, sq, skv];  softcap: c * tanh(s / c);  s + bias;  softmax (rows whose bias
    is all -inf give 0, not NaN);  p -> [b, hkv, g*sq, skv];  y = p @ v -> [b, hq, sq, dv]

The bias sums what is known at import (the causal and sliding-window frontiers, for a fixed
offset: the past length, or 0) and what is not (``attn_mask``, and the per-batch frontiers of
``nonpad_kv_seqlen``); everything here is numpy and dialect-free."""

from __future__ import annotations

import math

import numpy as np

__all__ = ["AttentionPlan", "attention_plan", "static_bias", "key_minus_query",
           "allowed_by_offset",
           "RotaryPlan", "rotary_plan"]


class AttentionPlan:
    """The static facts of one Attention node. ``rank`` is 3 (heads packed in the last axis)
    or 4 ([batch, heads, seq, head size]); ``group`` query heads share a key/value head;
    ``past`` is the past length (0 without a cache) and ``kv_len`` the total key length;
    ``window`` is (left, right), -1 for an unbounded side; ``mode`` is
    ``qk_matmul_output_mode``; ``softmax_dtype`` the dtype softmax runs in (None: the input's)."""

    __slots__ = ("rank", "q_heads", "kv_heads", "group", "head", "v_head", "q_len", "kv_len",
                 "past", "scale", "softcap", "causal", "window", "mode", "softmax_dtype")

    def __init__(self, **fields):
        for k in self.__slots__:
            setattr(self, k, fields[k])

    @property
    def has_window(self) -> bool:
        return self.window[0] >= 0 or self.window[1] >= 0


def _static(v, what: str, fail) -> int:
    if not isinstance(v, int | np.integer):
        raise fail(f"{what} must be static, got {v}")
    return int(v)


def attention_plan(q_shape, k_shape, v_shape, past_shape, attrs: dict, opset: int,
                   fail, dtype_of_code) -> AttentionPlan:
    """The plan of an Attention node with inputs of these shapes (``past_shape`` None without
    ``past_key``); ``fail(message)`` makes the error, ``dtype_of_code`` maps an ONNX element
    type to a dtype name."""
    rank = len(q_shape)
    if rank not in (3, 4) or len(k_shape) != rank or len(v_shape) != rank:
        raise fail(f"Q, K and V must all be 3-D or all 4-D, got ranks {len(q_shape)}, "
                   f"{len(k_shape)}, {len(v_shape)}")
    qh, kvh = int(attrs.get("q_num_heads", 0)), int(attrs.get("kv_num_heads", 0))
    if rank == 3:
        if qh <= 0 or kvh <= 0:
            raise fail("3-D inputs need the q_num_heads and kv_num_heads attributes")
        hidden = [_static(s[2], "the hidden size", fail) for s in (q_shape, k_shape, v_shape)]
        if hidden[0] % qh or hidden[1] % kvh or hidden[2] % kvh:
            raise fail(f"hidden sizes {hidden} are not divisible by the heads ({qh}, {kvh})")
        head, k_head, v_head = hidden[0] // qh, hidden[1] // kvh, hidden[2] // kvh
    else:
        if opset >= 25 and (qh or kvh):
            raise fail("q_num_heads and kv_num_heads must not be given with 4-D inputs")
        qh = _static(q_shape[1], "the number of query heads", fail)
        kvh = _static(k_shape[1], "the number of key heads", fail)
        if _static(v_shape[1], "the number of value heads", fail) != kvh:
            raise fail(f"K has {kvh} heads but V has {v_shape[1]}")
        head = _static(q_shape[3], "the head size", fail)
        k_head = _static(k_shape[3], "the key head size", fail)
        v_head = _static(v_shape[3], "the value head size", fail)
    if k_head != head:
        raise fail(f"the query head size {head} differs from the key head size {k_head}")
    if qh % kvh:
        raise fail(f"q_num_heads {qh} is not a multiple of kv_num_heads {kvh}")
    past = 0 if past_shape is None else _static(past_shape[2], "the past length", fail)
    q_len = q_shape[1] if rank == 3 else q_shape[2]
    kv_len = k_shape[1] if rank == 3 else k_shape[2]
    if isinstance(kv_len, int | np.integer):
        kv_len = int(kv_len) + past
    scale = float(attrs.get("scale", 0.0)) or 1.0 / math.sqrt(head)
    window = (int(attrs.get("left_window_size", -1)), int(attrs.get("right_window_size", -1)))
    if min(window) < -1:
        raise fail(f"window sizes must be -1 or non-negative, got {window}")
    mode = int(attrs.get("qk_matmul_output_mode", 0))
    if mode not in (0, 1, 2, 3):
        raise fail(f"qk_matmul_output_mode must be 0..3, got {mode}")
    prec = int(attrs.get("softmax_precision", 0))
    return AttentionPlan(rank=rank, q_heads=qh, kv_heads=kvh, group=qh // kvh, head=head,
                         v_head=v_head, q_len=q_len, kv_len=kv_len, past=past, scale=scale,
                         softcap=float(attrs.get("softcap", 0.0)),
                         causal=bool(attrs.get("is_causal", 0)), window=window, mode=mode,
                         softmax_dtype=dtype_of_code(prec) if prec else None)


def key_minus_query(q_len: int, kv_len: int) -> np.ndarray:
    """``j - i`` for query ``i`` and key ``j`` ([q_len, kv_len], int64): the causal and window
    frontiers compare it with the offset of the query block."""
    return np.arange(kv_len)[None, :] - np.arange(q_len)[:, None]


def allowed_by_offset(rel: np.ndarray, causal: bool, window) -> np.ndarray:
    """Which keys a query may attend given ``rel = (j - i) - offset``: causal keeps rel <= 0,
    a left window ``L`` keeps rel >= -L, a right window ``R`` keeps rel <= R."""
    ok = np.ones(rel.shape, bool)
    if causal:
        ok &= rel <= 0
    if window[0] >= 0:
        ok &= rel >= -window[0]
    if window[1] >= 0:
        ok &= rel <= window[1]
    return ok


def static_bias(plan: AttentionPlan, dtype: str, fail) -> np.ndarray | None:
    """The additive bias [q_len, kv_len] (0 where attended, -inf elsewhere) of the causal and
    window frontiers at the fixed offset ``plan.past``; None when neither applies."""
    if not (plan.causal or plan.has_window):
        return None
    q_len = _static(plan.q_len, "the query length (for is_causal or a window)", fail)
    kv_len = _static(plan.kv_len, "the key length (for is_causal or a window)", fail)
    rel = key_minus_query(q_len, kv_len) - plan.past
    ok = allowed_by_offset(rel, plan.causal, plan.window)
    return np.where(ok, 0.0, -np.inf).astype(dtype)


class RotaryPlan:
    """The static facts of one RotaryEmbedding node: ``heads`` (packed 3-D input) or None
    (4-D [batch, heads, seq, head]), the ``head`` size, the rotated ``dim`` (even) and
    ``interleaved`` pairs (x[2k], x[2k+1]) versus halves (x[k], x[k + dim/2])."""

    __slots__ = ("heads", "head", "dim", "interleaved")

    def __init__(self, heads, head, dim, interleaved):
        self.heads, self.head, self.dim, self.interleaved = heads, head, dim, interleaved


def rotary_plan(x_shape, cos_shape, attrs: dict, with_positions: bool, fail) -> RotaryPlan:
    """The plan of a RotaryEmbedding node: checks the caches' last axis is ``dim / 2`` and,
    without ``position_ids``, that they are [batch, seq, dim / 2]."""
    rank = len(x_shape)
    heads = int(attrs.get("num_heads", 0)) or None
    if rank == 3:
        if heads is None:
            raise fail("a 3-D input needs the num_heads attribute")
        hidden = _static(x_shape[2], "the hidden size", fail)
        if hidden % heads:
            raise fail(f"the hidden size {hidden} is not divisible by num_heads {heads}")
        head = hidden // heads
    elif rank == 4:
        heads, head = None, _static(x_shape[3], "the head size", fail)
    else:
        raise fail(f"the input must be 3-D or 4-D, got rank {rank}")
    dim = int(attrs.get("rotary_embedding_dim", 0)) or head
    if dim % 2 or dim > head:
        raise fail(f"rotary_embedding_dim {dim} must be even and at most the head size {head}")
    want = 2 if with_positions else 3
    if len(cos_shape) != want:
        raise fail(f"the cos/sin caches must be {want}-D "
                   f"{'with' if with_positions else 'without'} position_ids, got "
                   f"{list(cos_shape)}")
    if cos_shape[-1] != dim // 2:
        raise fail(f"the caches' last axis is {cos_shape[-1]}, expected rotary_embedding_dim/2 "
                   f"= {dim // 2}")
    return RotaryPlan(heads, head, dim, bool(attrs.get("interleaved", 0)))

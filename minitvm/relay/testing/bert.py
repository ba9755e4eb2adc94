"""BERT encoder layers (BERT-base by default): self-attention and GELU feed-forward blocks.

Not in TVM's ``relay.testing``; built with the ops a BERT import produces: dense + bias_add,
reshape/transpose into heads, batch_matmul, softmax, layer_norm, and GELU written with erf.
"""

from __future__ import annotations

import math

from ..analysis import free_vars
from ..expr import Function, const, var
from ..op import nn
from ..op import tensor as _t
from ..op import transform as _tr
from . import layers
from .init import create_workload

__all__ = ["encoder_layer", "get_net", "get_workload"]


def encoder_layer(x, batch: int, seq: int, hidden: int, heads: int, ffn: int, name: str,
                  dtype: str = "float32"):
    """One encoder layer on ``x`` of shape ``(batch * seq, hidden)``; same shape out."""
    head_dim = hidden // heads

    def split_heads(t, transpose_last=False):
        t = _tr.reshape(t, (batch, seq, heads, head_dim))
        axes = (0, 2, 3, 1) if transpose_last else (0, 2, 1, 3)
        t = _tr.transpose(t, axes)
        shape = (batch * heads, head_dim, seq) if transpose_last else (batch * heads, seq,
                                                                        head_dim)
        return _tr.reshape(t, shape)

    q = split_heads(layers.dense_add_bias(x, hidden, hidden, f"{name}_query", dtype))
    k = split_heads(layers.dense_add_bias(x, hidden, hidden, f"{name}_key", dtype))
    v = split_heads(layers.dense_add_bias(x, hidden, hidden, f"{name}_value", dtype), True)
    scores = nn.batch_matmul(q, k)  # q @ k^T: (batch * heads, seq, seq)
    scores = _t.multiply(scores, const(1.0 / math.sqrt(head_dim), dtype))
    probs = nn.softmax(scores, axis=-1)
    ctx = nn.batch_matmul(probs, v)  # probs @ (v^T)^T: (batch * heads, seq, head_dim)
    ctx = _tr.reshape(ctx, (batch, heads, seq, head_dim))
    ctx = _tr.reshape(_tr.transpose(ctx, (0, 2, 1, 3)), (batch * seq, hidden))
    attn = layers.dense_add_bias(ctx, hidden, hidden, f"{name}_attn_output", dtype)
    h = layers.layer_norm(_t.add(attn, x), hidden, f"{name}_attn_ln", dtype=dtype)
    ff = layers.gelu(layers.dense_add_bias(h, hidden, ffn, f"{name}_ffn1", dtype), dtype)
    ff = layers.dense_add_bias(ff, ffn, hidden, f"{name}_ffn2", dtype)
    return layers.layer_norm(_t.add(ff, h), hidden, f"{name}_ffn_ln", dtype=dtype)


def get_net(batch_size: int = 1, seq_len: int = 128, hidden: int = 768, num_heads: int = 12,
            ffn: int = 3072, num_layers: int = 1, dtype: str = "float32") -> Function:
    """``num_layers`` encoder layers on ``data`` of shape ``(batch, seq_len, hidden)``."""
    if hidden % num_heads:
        raise ValueError(f"hidden size {hidden} is not divisible by {num_heads} heads")
    data = var("data", shape=(batch_size, seq_len, hidden), dtype=dtype)
    x = _tr.reshape(data, (batch_size * seq_len, hidden))
    for i in range(num_layers):
        x = encoder_layer(x, batch_size, seq_len, hidden, num_heads, ffn, f"layer{i}", dtype)
    out = _tr.reshape(x, (batch_size, seq_len, hidden))
    return Function(free_vars(out), out)


def get_workload(batch_size: int = 1, seq_len: int = 128, hidden: int = 768,
                 num_heads: int = 12, ffn: int = 3072, num_layers: int = 1,
                 dtype: str = "float32", seed: int = 0):
    """``(mod, params)`` of a BERT encoder (one BERT-base layer by default; 12 for the model)."""
    net = get_net(batch_size, seq_len, hidden, num_heads, ffn, num_layers, dtype)
    return create_workload(net, seed=seed)

"""ATen matrix products onto Relay: ``matmul`` / ``mm`` / ``bmm`` / ``mv`` / ``dot``, ``linear``,
``addmm``, ``baddbmm``, ``tensordot`` and ``einsum``."""

from __future__ import annotations

import numpy as np

from ... import op as _op
from ...op import nn as _nn
from ..common import bmm_operand, last_two_swapped
from .aten import _scalar_like, register
from .aten_fake_quant_conv import fake_quant_dense


def _matmul(ctx, a, b):
    sa, sb = ctx.shape(a), ctx.shape(b)
    if len(sa) >= 2 and len(sb) == 2:
        k, n = sb
        flat = a if len(sa) == 2 else _op.reshape(a, (-1, k))
        out = _nn.dense(flat, _op.transpose(b, (1, 0)))
        return out if len(sa) == 2 else _op.reshape(out, sa[:-1] + (n,))
    if len(sa) >= 2 and len(sb) >= 3:  # (a 2-D or batched, b a batch of matrices: batch_matmul)
        batch = tuple(np.broadcast_shapes(sa[:-2], sb[:-2]))
        bt = last_two_swapped(b)  # (k.transpose(-2, -1): batch_matmul's own transpose_b)
        b, sb = (b, sb) if bt is None else (bt, sb[:-2] + (sb[-1], sb[-2]))
        out = _nn.batch_matmul(bmm_operand(a, sa, batch), bmm_operand(b, sb, batch),
                               transpose_b=bt is not None)
        n = sb[-1] if bt is None else sb[-2]
        return out if len(batch) == 1 else _op.reshape(out, batch + (sa[-2], n))
    if len(sa) == 1 and len(sb) == 1:
        return _op.sum(_op.multiply(a, b))
    if len(sa) == 1:
        return _op.squeeze(_matmul(ctx, _op.expand_dims(a, 0), b), axis=[-2 + len(sb)])
    return _op.squeeze(_matmul(ctx, a, _op.expand_dims(b, 1)), axis=[len(sa) - 1])  # (b 1-D)


@register("matmul", "mm", "bmm", "mv", "dot", "vdot")
def _matmul_op(ctx, args):
    """``vdot`` conjugates its first operand; on the real tensors that reach this converter
    (complex ones are refused before it) it is ``dot`` (the parametrized ``spectral_norm``'s
    sigma = vdot(u, W v) in every eval-mode forward, BigGAN's)."""
    return _matmul(ctx, args[0], args[1])


@register("linear")
def _linear(ctx, args):
    x, w = args[0], args[1]
    b = args[2] if len(args) > 2 else None
    xs = ctx.shape(x)
    flat = x if len(xs) == 2 else _op.reshape(x, (-1, xs[-1]))
    out = fake_quant_dense(ctx, x, flat, w)  # (a QAT linear of 8-bit values: integer)
    if b is not None:
        out = _nn.bias_add(out, b, axis=-1)
    return out if len(xs) == 2 else _op.reshape(out, xs[:-1] + (ctx.shape(w)[0],))


@register("addmm")
def _addmm(ctx, args):
    c, a, b = args[:3]
    beta = args[3] if len(args) > 3 else 1
    alpha = args[4] if len(args) > 4 else 1
    out = _matmul(ctx, a, b)
    if alpha != 1:
        out = _op.multiply(out, _scalar_like(ctx, alpha, out))
    if beta != 0:
        c = c if beta == 1 else _op.multiply(c, _scalar_like(ctx, beta, c))
        out = _op.add(out, c)
    return out


@register("tensordot")
def _tensordot(ctx, args):
    """``tensordot(a, b, dims_a, dims_b)``: ``a``'s free axes then its contracted ones, ``b``'s
    contracted ones then its free ones, as one ``(M, K) @ (K, N)`` product (an MMoE's experts
    as one weight tensor, as the Keras original writes them)."""
    a, b = args[0], args[1]
    sa, sb = tuple(ctx.shape(a)), tuple(ctx.shape(b))
    dims_a = [int(d) % len(sa) for d in args[2]]
    dims_b = [int(d) % len(sb) for d in args[3]]
    if len(dims_a) != len(dims_b) or any(sa[i] != sb[j] for i, j in zip(dims_a, dims_b,
                                                                          strict=False)):
        raise ctx.fail(f"contracted dims {list(args[2])} of {list(sa)} and {list(args[3])} of "
                       f"{list(sb)} do not pair up")
    free_a = [i for i in range(len(sa)) if i not in dims_a]
    free_b = [j for j in range(len(sb)) if j not in dims_b]
    k = int(np.prod([sa[i] for i in dims_a], dtype=np.int64))
    if free_a + dims_a != list(range(len(sa))):
        a = _op.transpose(a, free_a + dims_a)
    if dims_b + free_b != list(range(len(sb))):
        b = _op.transpose(b, dims_b + free_b)
    out = _matmul(ctx, _op.reshape(a, (-1, k)), _op.reshape(b, (k, -1)))
    return _op.reshape(out, tuple(sa[i] for i in free_a) + tuple(sb[j] for j in free_b))


@register("einsum")
def _einsum(ctx, args):
    from ..einsum import einsum

    return einsum(args[0], list(args[1]))


@register("baddbmm")
def _baddbmm(ctx, args):
    return _addmm(ctx, list(args))

"""ATen's classification and regression losses onto Relay, for models whose forward returns
its loss (a contrastive or self-supervised objective, a VAE, a distillation head):
``cross_entropy_loss`` (class targets with ``weight``, ``ignore_index`` and label smoothing,
or probability targets), ``nll_loss`` / ``nll_loss2d`` / ``nll_loss_nd``, ``kl_div``,
``smooth_l1_loss``, ``huber_loss``, ``poisson_nll_loss`` and the margin losses (soft margin,
margin ranking, hinge embedding, cosine embedding, triplet, multi-class margin), each written as torch's reference formulas are (the
normalizers of the weighted means included); ``ctc_loss`` / ``_ctc_loss`` on the CTC kernel
``nn.ctc_log_alpha`` (``frontend_common.torch_ctc``)."""

from __future__ import annotations

import numpy as np

from ....frontend_common import torch_ctc
from ... import expr as _expr
from ... import op as _op
from ...op import nn as _nn
from .aten import _scalar_like, register
from .aten_extra import _log1p_expr, _loss_reduction, _opt
from .aten_reduce import _vector_norm

_IGNORE_DEFAULT = -100


def _class_axis(ctx, x) -> int:
    """torch's class dim: 0 for an unbatched [C] input, else 1."""
    return 0 if len(ctx.shape(x)) == 1 else 1


def _weight_along(w, axis: int, nd: int):
    """A [C] weight shaped to broadcast along ``axis`` of an ``nd``-D tensor."""
    return _op.reshape(w, [-1 if a == axis else 1 for a in range(nd)])


def _picked(ctx, logp, target, weight, ignore_index: int):
    """(-w[t] logp[t] per target position, w[t] per position), both 0 where t is ignored."""
    axis = _class_axis(ctx, logp)
    if ctx.dtype(target) not in ("int64", "int32"):
        raise ctx.fail(f"class targets must be integers, got {ctx.dtype(target)}")
    target = _op.cast(target, "int64")
    ignore = _expr.const(ignore_index, "int64")
    keep = _op.not_equal(target, ignore)
    safe = _op.where(keep, target, _expr.const(0, "int64"))
    value = _op.squeeze(_op.gather(logp, axis, _op.expand_dims(safe, axis)), [axis])
    zero = _scalar_like(ctx, 0.0, logp)
    w = _op.take(weight, safe, axis=0) if weight is not None else \
        _op.ones_like(value)
    w = _op.where(keep, w, zero)
    return _op.negative(_op.multiply(w, value)), w


def _nll(ctx, logp, target, weight, reduction: int, ignore_index: int):
    loss, w = _picked(ctx, logp, target, weight, ignore_index)
    if reduction == 1:
        return _op.divide(_op.sum(loss), _op.sum(w))
    return _loss_reduction(ctx, loss, reduction)


@register("nll_loss", "nll_loss2d", "nll_loss_nd")
def _nll_loss(ctx, args):
    """(log-probabilities, class target, weight, reduction, ignore_index): the mean divides by
    the summed weights of the kept targets, as torch does."""
    return _nll(ctx, args[0], args[1], _opt(args, 2, None), int(_opt(args, 3, 1)),
                int(_opt(args, 4, _IGNORE_DEFAULT)))


@register("cross_entropy_loss")
def _cross_entropy(ctx, args):
    """(logits, target, weight, reduction, ignore_index, label_smoothing): log_softmax over
    the class dim, then class targets (NLL, plus the smoothing term ``-sum_c w_c logp_c``
    with torch's normalizers) or float probability targets (smoothed toward uniform)."""
    x, target = args[0], args[1]
    weight, reduction = _opt(args, 2, None), int(_opt(args, 3, 1))
    ignore_index, smoothing = int(_opt(args, 4, _IGNORE_DEFAULT)), float(_opt(args, 5, 0.0))
    if not ctx.dtype(x).startswith("float"):
        raise ctx.fail(f"expects floating-point logits, got {ctx.dtype(x)}")
    if reduction not in (0, 1, 2):
        raise ctx.fail(f"unknown reduction {reduction}")
    shape = ctx.shape(x)
    nd, axis = len(shape), _class_axis(ctx, x)
    classes = shape[axis]
    logp = _nn.log_softmax(x, axis=axis)
    if weight is not None:
        weighted = _op.multiply(logp, _weight_along(weight, axis, nd))
    else:
        weighted = logp
    if ctx.dtype(target).startswith("float"):
        if smoothing > 0:
            target = _op.add(_op.multiply(target, _scalar_like(ctx, 1 - smoothing, x)),
                             _scalar_like(ctx, smoothing / classes, x))
        per = _op.negative(_op.sum(_op.multiply(weighted, target), axis=[axis]))
        if reduction == 1:
            rows = int(np.prod(shape)) // classes
            return _op.divide(_op.sum(per), _scalar_like(ctx, float(rows), x))
        return _loss_reduction(ctx, per, reduction)
    nll = _nll(ctx, logp, target, weight, reduction, ignore_index)
    if smoothing <= 0:
        return nll
    _, w = _picked(ctx, logp, target, weight, ignore_index)
    kept = _op.not_equal(_op.cast(target, "int64"),
                         _expr.const(ignore_index, "int64"))
    smooth = _op.where(kept, _op.negative(_op.sum(weighted, axis=[axis])),
                       _scalar_like(ctx, 0.0, x))
    if reduction == 1:
        denom = _op.sum(w) if weight is not None else \
            _op.sum(_op.cast(kept, ctx.dtype(x)))
        smooth = _op.divide(_op.sum(smooth), denom)
    else:
        smooth = _loss_reduction(ctx, smooth, reduction)
    return _op.add(_op.multiply(nll, _scalar_like(ctx, 1 - smoothing, x)),
                   _op.multiply(smooth, _scalar_like(ctx, smoothing / classes, x)))


@register("kl_div")
def _kl_div(ctx, args):
    """(input log-probabilities, target, reduction, log_target): ``t (log t - x)`` with
    ``t log t`` taken as 0 where t is 0 (``xlogy``), or ``exp(t) (t - x)`` for a log
    target. torch's 'batchmean' arrives as a sum the caller divides."""
    x, t = args[0], args[1]
    reduction, log_target = int(_opt(args, 2, 1)), bool(_opt(args, 3, False))
    zero = _scalar_like(ctx, 0.0, x)
    if log_target:
        loss = _op.multiply(_op.exp(t), _op.subtract(t, x))
    else:
        safe = _op.where(_op.equal(t, zero), _scalar_like(ctx, 1.0, x), t)
        loss = _op.subtract(_op.where(_op.equal(t, zero), zero, _op.multiply(t, _op.log(safe))),
                            _op.multiply(t, x))
    return _loss_reduction(ctx, loss, reduction)


def _piecewise_quadratic(ctx, args, scale_by_delta: bool):
    x, y = args[0], args[1]
    reduction, delta = int(_opt(args, 2, 1)), float(_opt(args, 3, 1.0))
    d = _op.abs(_op.subtract(x, y))
    if delta == 0:
        return _loss_reduction(ctx, d, reduction)
    half, dl = _scalar_like(ctx, 0.5, x), _scalar_like(ctx, delta, x)
    quad = _op.multiply(half, _op.multiply(d, d))
    if scale_by_delta:  # huber: 0.5 d^2 below delta, delta (d - delta / 2) above
        lin = _op.multiply(dl, _op.subtract(d, _op.multiply(half, dl)))
    else:  # smooth L1: 0.5 d^2 / beta below beta, d - beta / 2 above
        quad = _op.divide(quad, dl)
        lin = _op.subtract(d, _op.multiply(half, dl))
    return _loss_reduction(ctx, _op.where(_op.less(d, dl), quad, lin), reduction)


@register("smooth_l1_loss")
def _smooth_l1(ctx, args):
    return _piecewise_quadratic(ctx, args, scale_by_delta=False)


@register("huber_loss")
def _huber(ctx, args):
    return _piecewise_quadratic(ctx, args, scale_by_delta=True)


@register("soft_margin_loss")
def _soft_margin(ctx, args):
    """``log1p(exp(-y x))``."""
    x, y = args[0], args[1]
    return _loss_reduction(ctx, _log1p_expr(ctx, _op.exp(_op.negative(_op.multiply(y, x)))),
                           int(_opt(args, 2, 1)))


@register("margin_ranking_loss")
def _margin_ranking(ctx, args):
    """``max(0, -y (x1 - x2) + margin)``."""
    x1, x2, y = args[0], args[1], args[2]
    margin, reduction = float(_opt(args, 3, 0.0)), int(_opt(args, 4, 1))
    gap = _op.add(_op.negative(_op.multiply(y, _op.subtract(x1, x2))),
                  _scalar_like(ctx, margin, x1))
    return _loss_reduction(ctx, _op.maximum(gap, _scalar_like(ctx, 0.0, x1)), reduction)


@register("hinge_embedding_loss")
def _hinge_embedding(ctx, args):
    """``x`` where y is not -1 plus ``max(0, margin - x)`` where y is not 1 (torch's sum of
    both, so a y outside {1, -1} takes both terms)."""
    x, y = args[0], args[1]
    margin, reduction = float(_opt(args, 2, 1.0)), int(_opt(args, 3, 1))
    zero = _scalar_like(ctx, 0.0, x)
    if ctx.dtype(y) != ctx.dtype(x):
        y = _op.cast(y, ctx.dtype(x))
    clamp = _op.maximum(_op.subtract(_scalar_like(ctx, margin, x), x), zero)
    out = _op.add(_op.where(_op.not_equal(y, _scalar_like(ctx, 1.0, x)), clamp, zero),
                  _op.where(_op.not_equal(y, _scalar_like(ctx, -1.0, x)), x, zero))
    return _loss_reduction(ctx, out, reduction)


@register("poisson_nll_loss")
def _poisson_nll(ctx, args):
    """(input, target, log_input, full, eps, reduction): ``exp(x) - t x`` for a log input,
    else ``x - t log(x + eps)``; ``full`` adds Stirling's ``t log t - t + log(2 pi t) / 2``
    where t > 1."""
    x, t = args[0], args[1]
    log_input, full = bool(_opt(args, 2, True)), bool(_opt(args, 3, False))
    eps, reduction = float(_opt(args, 4, 1e-8)), int(_opt(args, 5, 1))
    if log_input:
        loss = _op.subtract(_op.exp(x), _op.multiply(t, x))
    else:
        loss = _op.subtract(x, _op.multiply(t, _op.log(_op.add(x, _scalar_like(ctx, eps, x)))))
    if full:
        one = _scalar_like(ctx, 1.0, t)
        safe = _op.where(_op.greater(t, one), t, one)
        stirling = _op.add(_op.subtract(_op.multiply(safe, _op.log(safe)), safe),
                           _op.multiply(_scalar_like(ctx, 0.5, t),
                                        _op.log(_op.multiply(_scalar_like(ctx, 2 * np.pi, t),
                                                             safe))))
        loss = _op.add(loss, _op.where(_op.greater(t, one), stirling,
                                       _scalar_like(ctx, 0.0, t)))
    return _loss_reduction(ctx, loss, reduction)


@register("cosine_embedding_loss")
def _cosine_embedding(ctx, args):
    """(x1, x2, y, margin, reduction): ``1 - cos`` where y is 1, ``max(0, cos - margin)``
    where y is -1, cos over the last dim with 1e-12 added to each squared norm."""
    x1, x2, y = args[0], args[1], args[2]
    margin, reduction = float(_opt(args, 3, 0.0)), int(_opt(args, 4, 1))
    axis = [len(ctx.shape(x1)) - 1]
    tiny = _scalar_like(ctx, 1e-12, x1)
    dot = _op.sum(_op.multiply(x1, x2), axis=axis)
    m1 = _op.add(_op.sum(_op.multiply(x1, x1), axis=axis), tiny)
    m2 = _op.add(_op.sum(_op.multiply(x2, x2), axis=axis), tiny)
    cos = _op.divide(dot, _op.sqrt(_op.multiply(m1, m2)))
    zero = _scalar_like(ctx, 0.0, x1)
    if ctx.dtype(y) != ctx.dtype(x1):
        y = _op.cast(y, ctx.dtype(x1))
    pos = _op.where(_op.equal(y, _scalar_like(ctx, 1.0, x1)),
                    _op.subtract(_scalar_like(ctx, 1.0, x1), cos), zero)
    neg = _op.where(_op.equal(y, _scalar_like(ctx, -1.0, x1)),
                    _op.maximum(_op.subtract(cos, _scalar_like(ctx, margin, x1)), zero), zero)
    return _loss_reduction(ctx, _op.add(pos, neg), reduction)


@register("triplet_margin_loss")
def _triplet_margin(ctx, args):
    """(anchor, positive, negative, margin, p, eps, swap, reduction): ``max(0, margin +
    d(a, p) - d(a, n))`` with d the p-norm of ``a - b + eps`` over the last dim; ``swap``
    takes the smaller of d(a, n) and d(p, n)."""
    a, pos, neg = args[0], args[1], args[2]
    margin, p = float(_opt(args, 3, 1.0)), float(_opt(args, 4, 2.0))
    eps, swap, reduction = float(_opt(args, 5, 1e-6)), bool(_opt(args, 6, False)), \
        int(_opt(args, 7, 1))
    axis = len(ctx.shape(a)) - 1

    def dist(u, v):
        return _vector_norm(ctx, _op.add(_op.subtract(u, v), _scalar_like(ctx, eps, u)), p,
                            [axis], False)

    d_pos, d_neg = dist(a, pos), dist(a, neg)
    if swap:
        d_neg = _op.minimum(d_neg, dist(pos, neg))
    gap = _op.add(_op.subtract(d_pos, d_neg), _scalar_like(ctx, margin, a))
    return _loss_reduction(ctx, _op.maximum(gap, _scalar_like(ctx, 0.0, a)), reduction)


@register("multi_margin_loss")
def _multi_margin(ctx, args):
    """(input [N, C] or [C], target, p, margin, weight, reduction): per sample the sum over
    classes j other than y of ``max(0, margin - x[y] + x[j])^p``, each term times w[y],
    divided by C."""
    x, target = args[0], args[1]
    p, margin = int(_opt(args, 2, 1)), float(_opt(args, 3, 1.0))
    weight, reduction = _opt(args, 4, None), int(_opt(args, 5, 1))
    if p not in (1, 2):
        raise ctx.fail(f"p must be 1 or 2, got {p}")
    axis = _class_axis(ctx, x)
    classes = ctx.shape(x)[axis]
    t = _op.cast(target, "int64")
    if axis == 0:  # unbatched: one target, 0-d or of shape [1]
        t = _op.reshape(t, ())
    picked = _op.gather(x, axis, _op.expand_dims(t, axis))
    z = _op.maximum(_op.add(_op.subtract(_scalar_like(ctx, margin, x), picked), x),
                    _scalar_like(ctx, 0.0, x))
    if p == 2:
        z = _op.multiply(z, z)
    others = _op.not_equal(_op.expand_dims(t, axis),
                           _op.reshape(_expr.const(np.arange(classes), "int64"),
                                       [-1 if a == axis else 1 for a in range(axis + 1)]))
    z = _op.where(others, z, _scalar_like(ctx, 0.0, x))
    if weight is not None:
        z = _op.multiply(z, _op.expand_dims(_op.take(weight, t, axis=0), axis))
    loss = _op.divide(_op.sum(z, axis=[axis]), _scalar_like(ctx, float(classes), x))
    return _loss_reduction(ctx, loss, reduction)


def _ctc_inputs(ctx, args):
    """(log_probs, targets, input lengths, target lengths, the longest target when the lengths
    are Python ints): lengths given as int lists become constants."""
    lengths = []
    longest = None
    for k in (2, 3):
        v = args[k]
        if isinstance(v, list | tuple | int):
            values = np.asarray(v, dtype="int64").reshape(-1)
            if k == 3:
                longest = int(values.max(initial=0))
            v = _expr.const(values if np.ndim(args[k]) else values.reshape(()), "int64")
        lengths.append(v)
    return args[0], args[1], lengths[0], lengths[1], longest


def _ctc(ctx, args, zero_infinity: bool, reduction: str):
    log_probs, targets, il, tl, longest = _ctc_inputs(ctx, args)
    blank = int(args[4]) if len(args) > 4 and args[4] is not None else 0
    dtype = ctx.dtype(log_probs)
    if not dtype.startswith("float"):
        raise ctx.fail(f"ctc_loss: log_probs must be floats, got {dtype}")

    def kernel(lp, tg, input_lengths, target_lengths, blank, width):
        return _nn.ctc_log_alpha(lp, tg, input_lengths, target_lengths, blank, width)

    def const(array):
        array = np.asarray(array)
        return _expr.const(array, str(array.dtype))

    return torch_ctc.ctc_loss(_op, kernel, log_probs, targets, il, tl, ctx.shape(log_probs),
                              ctx.shape(targets), dtype, const, blank=blank,
                              reduction=reduction, zero_infinity=zero_infinity,
                              longest_target=longest)


@register("ctc_loss")
def _ctc_loss(ctx, args):
    """``ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, reduction,
    zero_infinity)`` (ATen's Reduction: 0 none, 1 mean, 2 sum)."""
    reduction = torch_ctc.REDUCTIONS[int(args[5]) if len(args) > 5 and args[5] is not None else 1]
    zero_infinity = bool(args[6]) if len(args) > 6 and args[6] is not None else False
    return _ctc(ctx, args, zero_infinity, reduction)[0]


@register("_ctc_loss")
def _ctc_loss_parts(ctx, args):
    """``(neg_log_likelihood, log_alpha)`` per sample, before any zero_infinity."""
    _, nll, alpha = _ctc(ctx, args, False, "none")
    return nll, alpha

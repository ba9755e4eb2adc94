"""Core-ATen neural-network ops onto ``relax.op``: the activations (GELU, leaky ReLU, clamp /
hardtanh, softmax, hardswish, hardsigmoid, ELU, softplus), matrix products (``addmm``, ``mm`` /
``bmm`` / ``matmul``, ``linear``, ``bilinear``, ``_trilinear``), convolutions, batch / layer /
group norms, scaled dot-product attention and embeddings (``embedding``, ``_embedding_bag``)."""

from __future__ import annotations

import numpy as np

from ....frontend_common.torch_promote import with_number_dtype
from ... import op as _op
from ...expr import TupleGetItem, Var, const
from .aten_conv_groups import conv_symbolic_groups
from .aten_math import _promote
from .context import AtenContext, register


@register("gelu.default")
def _gelu(ctx: AtenContext, args):
    fn = _op.nn.gelu_tanh if args[1] == "tanh" else _op.nn.gelu
    return ctx.emit(fn(args[0]))


@register("leaky_relu.default")
def _leaky_relu(ctx: AtenContext, args):
    return ctx.emit(_op.nn.leakyrelu(args[0], float(args[1])))


@register("hardtanh.default", "clamp.default")
def _clamp(ctx: AtenContext, args):
    """Number bounds promote as a binary op's (``bool_mask.clamp(min=-1)`` is int64, an integer
    tensor clamped to ``0.5`` float32: ``torch_promote``)."""
    x, lo, hi = args[0], args[1], args[2]
    if "clamp" in ctx.node.target.__name__:
        dt = ctx.dtype(x)
        for bound in (lo, hi):
            dt = dt if bound is None else with_number_dtype(dt, bound)
        x = x if dt == ctx.dtype(x) else ctx.emit(_op.astype(x, dt))
    lo = -np.inf if lo is None else float(lo)
    hi = np.inf if hi is None else float(hi)
    return ctx.emit(_op.clip(x, lo, hi))


@register("clamp.Tensor")
def _clamp_tensor(ctx: AtenContext, args):
    """``clamp(x, min, max)`` with tensor bounds (either may be None): broadcast maximum then
    minimum, as torch's result keeps the promoted dtype of x and the bounds."""
    out = args[0]
    for bound, rop in ((args[1], _op.maximum), (args[2] if len(args) > 2 else None, _op.minimum)):
        if bound is not None:
            x, b = _promote(ctx, out, ctx.tensor(bound, out))
            out = ctx.emit(rop(x, b))
    return out


@register("_softmax.default", "_log_softmax.default")
def _softmax(ctx: AtenContext, args):
    fn = _op.nn.softmax if "log" not in ctx.node.target.__name__ else _op.nn.log_softmax
    return ctx.emit(fn(args[0], int(args[1])))


@register("addmm.default")
def _addmm(ctx: AtenContext, args):
    bias, a, b, beta, alpha = args
    y = _op.matmul(a, b)
    if alpha not in (None, 1):
        y = _op.multiply(y, ctx.tensor(float(alpha), a))
    if beta not in (None, 1):
        bias = _op.multiply(bias, ctx.tensor(float(beta), a))
    return ctx.emit(_op.add(ctx.emit(y), bias))


@register("mm.default", "bmm.default", "matmul.default")
def _matmul(ctx: AtenContext, args):
    return ctx.emit(_op.matmul(args[0], args[1]))


@register("linear.default")
def _linear(ctx: AtenContext, args):
    return ctx.emit(_op.linear(args[0], args[1], args[2]))


@register("bilinear.default")
def _bilinear(ctx: AtenContext, args):
    """bilinear(x1, x2, W, b): ``y[..., o] = x1 W[o] x2 + b[o]`` (``nn.Bilinear``), kept whole
    by the importer: one product of x1 with W laid out [I, O*J], then the product with x2
    summed over J."""
    x1, x2, w = args[0], args[1], args[2]
    b = args[3] if len(args) > 3 else None
    s1, s2 = ctx.shape(x1), ctx.shape(x2)
    o, i, j = ctx.shape(w)
    if s1[:-1] != s2[:-1]:
        raise ctx.fail(f"input shapes {s1} and {s2} differ before the last dim")
    rows = 1
    for d in s1[:-1]:
        rows = rows * d
    rows = ctx.simplify(rows)
    wt = ctx.emit(_op.reshape(ctx.emit(_op.permute_dims(w, [1, 0, 2])), [i, o * j]))
    x1 = ctx.emit(_op.reshape(x1, ctx.shape_expr([rows, i])))
    t = ctx.emit(_op.reshape(ctx.emit(_op.matmul(x1, wt)), ctx.shape_expr([rows, o, j])))
    x2 = ctx.emit(_op.reshape(x2, ctx.shape_expr([rows, 1, j])))
    y = ctx.emit(_op.sum(ctx.emit(_op.multiply(t, x2)), [2]))
    if b is not None:
        y = ctx.emit(_op.add(y, b))
    return ctx.emit(_op.reshape(y, ctx.shape_expr(list(s1[:-1]) + [o])))


@register("_trilinear.default")
def _trilinear(ctx: AtenContext, args):
    """_trilinear(i1, i2, i3, expand1, expand2, expand3, sumdim, unroll_dim): the three
    inputs, each unsqueezed at its ``expand`` axes to one rank, multiplied and summed over
    ``sumdim`` (the summed axes dropped): one einsum."""
    ins, expands, sumdim = args[:3], args[3:6], {int(d) for d in args[6]}
    rank = ctx.ndim(ins[0]) + len(expands[0])
    letters = "abcdefghijklmnopqrstuvwxyz"[:rank]
    subs = ["".join(letters[d] for d in range(rank) if d not in {int(e) for e in ex})
            for ex in expands]
    kept = [d for d in range(rank) if d not in sumdim]
    shown = set("".join(subs))
    out = "".join(letters[d] for d in kept if letters[d] in shown)
    y = ctx.emit(_op.einsum(list(ins), f"{','.join(subs)}->{out}"))
    lone = [k for k, d in enumerate(kept) if letters[d] not in shown]  # in no input: size 1
    return ctx.emit(_op.expand_dims(y, lone)) if lone else y


@register("convolution.default")
def _convolution(ctx: AtenContext, args):
    x, w, bias, stride, padding, dilation, transposed, out_pad, groups = args
    n = ctx.ndim(x) - 2
    pads = [int(p) for p in padding] * 2
    stride, dilation = [int(s) for s in stride], [int(d) for d in dilation]
    groups = ctx.sym(groups)
    if not isinstance(groups, int):
        if transposed:
            raise ctx.fail(f"a transposed convolution with a run-time group count {groups} is "
                           "not supported (the groups must be a static int)")
        y = conv_symbolic_groups(ctx, x, w, stride, pads[:n], dilation, groups)
    elif transposed:
        fns = {1: _op.nn.conv1d_transpose, 2: _op.nn.conv2d_transpose,
               3: _op.nn.conv3d_transpose}
        if n not in fns:
            raise ctx.fail(f"{n}-D transposed convolution is not supported")
        y = fns[n](x, w, stride, pads, [int(p) for p in out_pad], dilation, int(groups))
    else:
        fns = {1: _op.nn.conv1d, 2: _op.nn.conv2d, 3: _op.nn.conv3d}
        if n not in fns:
            raise ctx.fail(f"{n}-D convolution is not supported")
        y = fns[n](x, w, stride, pads, dilation, int(groups))
    if not isinstance(y, Var):
        y = ctx.emit(y)
    if bias is not None:
        b = _op.reshape(bias, ctx.shape_expr([1, -1] + [1] * n))
        y = ctx.emit(_op.add(y, b))
    return y


@register("_native_batch_norm_legit_no_training.default")
def _batch_norm(ctx: AtenContext, args):
    x, gamma, beta, mean, var, _momentum, eps = args
    c = ctx.shape(x)[1]
    dtype = ctx.dtype(x)
    gamma = gamma if gamma is not None else const(np.ones(c, dtype))
    beta = beta if beta is not None else const(np.zeros(c, dtype))
    bn = ctx.emit(_op.nn.batch_norm(x, gamma, beta, mean, var, axis=1, epsilon=float(eps)))
    return (ctx.emit(TupleGetItem(bn, 0)), mean, var)


@register("native_layer_norm.default")
def _layer_norm(ctx: AtenContext, args):
    x, normalized_shape, gamma, beta, eps = args
    ndim = ctx.ndim(x)
    k = len(normalized_shape)
    dtype = ctx.dtype(x)
    shape = [int(d) for d in normalized_shape]
    gamma = gamma if gamma is not None else const(np.ones(shape, dtype))
    beta = beta if beta is not None else const(np.zeros(shape, dtype))
    y = ctx.emit(_op.nn.layer_norm(x, gamma, beta, list(range(ndim - k, ndim)), float(eps)))
    return (y, None, None)


@register("embedding.default")
def _embedding(ctx: AtenContext, args):
    return ctx.emit(_op.take(args[0], args[1], 0))


def _opt(args, i, default):
    return args[i] if len(args) > i and args[i] is not None else default


def _bag_members(ctx: AtenContext, off, n: int, nb: int, include_last: bool):
    """The (bags, ids) mask of each bag's ids for static sizes: start <= j < end."""
    if nb <= 0:
        raise ctx.fail("offsets describe no bags")
    starts = ctx.emit(_op.strided_slice(off, [0], [0], [nb]))
    if include_last:
        ends = ctx.emit(_op.strided_slice(off, [0], [1], [nb + 1]))
    else:
        total = const(np.array([n], "int64"))
        ends = total if nb == 1 else ctx.emit(_op.concat(
            [_op.strided_slice(off, [0], [1], [nb]), total], 0))
    j = const(np.arange(n, dtype="int64").reshape(1, n))
    return ctx.emit(_op.logical_and(_op.greater_equal(j, _op.expand_dims(starts, 1)),
                                    _op.less(j, _op.expand_dims(ends, 1))))  # (nb, n)


def _bag_members_symbolic(ctx: AtenContext, off, idx):
    """The (bags, ids) mask when the sizes are symbolic (a 2-D input of a dynamic batch,
    flattened by torch, with offsets ``arange(0, batch * k, k)``): id j's bag is the number of
    offsets at or before j, less one (the last of equal offsets: the earlier bags are empty);
    positions counted by cumsum, so no size is needed as a value."""
    j = ctx.emit(_op.cumsum(_op.ones_like(idx, "int64"), 0, exclusive=True))  # (n,)
    at_or_before = _op.greater_equal(_op.expand_dims(j, 0), _op.expand_dims(off, 1))
    bag = ctx.emit(_op.subtract(_op.sum(_op.astype(at_or_before, "int64"), [0]),
                                const(np.array(1, "int64"))))  # (n,)
    ids = ctx.emit(_op.cumsum(_op.ones_like(off, "int64"), 0, exclusive=True))  # (nb,)
    return ctx.emit(_op.equal(_op.expand_dims(ids, 1), _op.expand_dims(bag, 0)))  # (nb, n)


@register("_embedding_bag.default", "_embedding_bag_forward_only.default")
def _embedding_bag(ctx: AtenContext, args):
    """``nn.EmbeddingBag`` (weight, indices, offsets, scale_grad_by_freq, mode, sparse,
    per_sample_weights, include_last_offset, padding_idx): the sum, mean or max of each bag's
    rows, 0 for an empty bag. Offsets may be a runtime tensor: a (bags, ids) membership mask
    from them turns sum and mean into one matmul, max into a masked reduction. Only the first
    output (the bags) is computed; PyTorch's bookkeeping outputs are not."""
    weight, idx, offsets = args[:3]
    mode = int(_opt(args, 4, 0))
    psw, include_last = _opt(args, 6, None), bool(_opt(args, 7, False))
    pad = _opt(args, 8, None)
    pad = None if pad is None or int(pad) < 0 else int(pad)
    if ctx.ndim(idx) != 1:
        raise ctx.fail(f"expects 1-D indices, got {ctx.shape(idx)}")
    if psw is not None and mode != 0:
        raise ctx.fail("per_sample_weights needs mode='sum'")
    dt = ctx.dtype(weight)
    rows = ctx.emit(_op.take(weight, idx, 0))  # (n, d)
    if psw is not None:
        rows = ctx.emit(_op.multiply(rows, _op.expand_dims(psw, 1)))
    off = ctx.emit(_op.astype(offsets, "int64"))
    if isinstance(ctx.shape(idx)[0], int) and isinstance(ctx.shape(offsets)[0], int):
        member = _bag_members(ctx, off, ctx.shape(idx)[0],
                              int(ctx.shape(offsets)[0]) - include_last, include_last)
    elif include_last:
        raise ctx.fail(f"include_last_offset with symbolic sizes (indices {ctx.shape(idx)}, "
                       f"offsets {ctx.shape(offsets)})")
    else:
        member = _bag_members_symbolic(ctx, off, idx)
    if pad is not None:
        keep = _op.not_equal(idx, const(np.array(pad, ctx.dtype(idx))))
        member = ctx.emit(_op.logical_and(member, _op.expand_dims(keep, 0)))
    count = ctx.emit(_op.sum(_op.astype(member, dt), [1], True))  # (nb, 1)
    if mode in (0, 1):
        out = ctx.emit(_op.matmul(_op.astype(member, dt), rows))
        if mode == 1:
            out = ctx.emit(_op.divide(out, _op.maximum(count, const(np.array(1, dt)))))
    else:
        lowest = const(np.array(-np.inf, dt))
        picked = _op.where(_op.expand_dims(member, 2), _op.expand_dims(rows, 0), lowest)
        out = ctx.emit(_op.where(_op.greater(count, const(np.array(0, dt))),
                                 _op.max(picked, [1]), const(np.array(0, dt))))
    return (out, None, None, None)


@register("hardswish.default")
def _hardswish(ctx: AtenContext, args):
    x = args[0]
    gate = _op.clip(_op.add(x, ctx.tensor(3.0, x)), 0.0, 6.0)
    return ctx.emit(_op.divide(_op.multiply(x, gate), ctx.tensor(6.0, x)))


@register("hardsigmoid.default")
def _hardsigmoid(ctx: AtenContext, args):
    x = args[0]
    return ctx.emit(_op.divide(_op.clip(_op.add(x, ctx.tensor(3.0, x)), 0.0, 6.0),
                               ctx.tensor(6.0, x)))


@register("elu.default")
def _elu(ctx: AtenContext, args):
    x, alpha, scale, input_scale = args
    xs = _op.multiply(x, ctx.tensor(float(input_scale), x))
    neg = _op.multiply(ctx.tensor(float(alpha), x), _op.subtract(_op.exp(xs), ctx.tensor(1.0, x)))
    y = _op.where(_op.greater(x, ctx.tensor(0.0, x)), x, neg)
    return ctx.emit(_op.multiply(y, ctx.tensor(float(scale), x)) if scale != 1 else y)


@register("softplus.default")
def _softplus(ctx: AtenContext, args):
    x, beta, threshold = args
    bx = _op.multiply(x, ctx.tensor(float(beta), x))
    soft = _op.divide(_op.log(_op.add(_op.exp(bx), ctx.tensor(1.0, x))),
                      ctx.tensor(float(beta), x))
    return ctx.emit(_op.where(_op.greater(bx, ctx.tensor(float(threshold), x)), x, soft))


def _norm_affine(ctx: AtenContext, x, gamma, beta):
    c = ctx.shape(x)[1]
    dtype = ctx.dtype(x)
    if gamma is None or beta is None:
        if not isinstance(c, int):
            raise ctx.fail("a norm without affine weights needs a static channel dim")
    gamma = gamma if gamma is not None else const(np.ones(c, dtype))
    beta = beta if beta is not None else const(np.zeros(c, dtype))
    return gamma, beta


@register("native_group_norm.default")
def _group_norm(ctx: AtenContext, args):
    x, gamma, beta, groups, eps = args[0], args[1], args[2], int(args[6]), float(args[7])
    gamma, beta = _norm_affine(ctx, x, gamma, beta)
    y = ctx.emit(_op.nn.group_norm(x, gamma, beta, groups, 1, list(range(2, ctx.ndim(x))),
                                   eps))
    return (y, None, None)


@register("_native_batch_norm_legit.no_stats")
def _batch_norm_no_stats(ctx: AtenContext, args):
    """Batch norm with no running statistics (instance norm's decomposition): batch stats."""
    x, gamma, beta, eps = args[0], args[1], args[2], float(args[5])
    axes = [d for d in range(ctx.ndim(x)) if d != 1]
    if gamma is None and beta is None and not isinstance(ctx.shape(x)[1], int):
        # (instance norm of a symbolic batch: channels batch * C, and no weights to apply)
        mean = ctx.emit(_op.mean(x, axes, keepdims=True))
        var = ctx.emit(_op.variance(x, axes, keepdims=True))
        std = _op.sqrt(_op.add(var, ctx.tensor(eps, x)))
        return (ctx.emit(_op.divide(_op.subtract(x, mean), std)), None, None)
    gamma, beta = _norm_affine(ctx, x, gamma, beta)
    mean = ctx.emit(_op.mean(x, axes))
    var = ctx.emit(_op.variance(x, axes))
    bn = ctx.emit(_op.nn.batch_norm(x, gamma, beta, mean, var, axis=1, epsilon=eps))
    return (ctx.emit(TupleGetItem(bn, 0)), None, None)


@register("scaled_dot_product_attention.default")
def _sdpa(ctx: AtenContext, args):
    q, k, v, mask, dropout, causal, scale, gqa = (list(args) + [None] * 8)[:8]
    if dropout:
        raise ctx.fail("dropout_p > 0 is a training-only setting")
    n = ctx.ndim(q)
    if gqa and ctx.shape(q)[-3] != ctx.shape(k)[-3]:
        # enable_gqa: each key / value head serves Hq / Hkv consecutive query heads
        hq, hkv = ctx.shape(q)[-3], ctx.shape(k)[-3]
        if not isinstance(hq, int) or not isinstance(hkv, int) or hq % hkv:
            raise ctx.fail(f"enable_gqa needs static head counts with {hkv} dividing {hq}")
        k = ctx.emit(_op.repeat(k, hq // hkv, axis=n - 3))
        v = ctx.emit(_op.repeat(v, hq // hkv, axis=n - 3))
    head = ctx.shape(q)[-1]
    if scale is None and not isinstance(head, int):
        raise ctx.fail("attention needs a static head size to derive its scale")
    scale = float(scale) if scale is not None else 1.0 / float(np.sqrt(head))
    kt = _op.permute_dims(k, list(range(n - 2)) + [n - 1, n - 2])
    s = ctx.emit(_op.multiply(_op.matmul(q, kt), ctx.tensor(scale, q)))
    neg = const(np.array(-np.inf, ctx.dtype(q)))
    if causal:
        lq, lk = ctx.shape(q)[-2], ctx.shape(k)[-2]
        if not isinstance(lq, int) or not isinstance(lk, int):
            raise ctx.fail("is_causal attention needs static sequence lengths")
        s = ctx.emit(_op.where(const(np.tril(np.ones((lq, lk), bool))), s, neg))
    if mask is not None:
        s = ctx.emit(_op.where(mask, s, neg) if ctx.dtype(mask) == "bool" else
                     _op.add(s, mask))
    return ctx.emit(_op.matmul(_op.nn.softmax(s, -1), v))

"""More ATen converters: the activations, grids, embedding bags, 3-D pools, resampling,
pairwise, elementwise and reduction ops that common ``torch.nn`` modules and functions trace to
(SELU, meshgrid, EmbeddingBag, LocalResponseNorm, PixelUnshuffle, bicubic Upsample, Bilinear,
Unfold, cdist, ...). Each is built from ops with a
TE compute where one serves, so the result lowers natively rather than through the numpy
fallback (sort is the exception: Relay's sort has no compute).
"""

from __future__ import annotations

import numpy as np

from ....frontend_common.aten_windows import pair
from ... import expr as _expr
from ... import op as _op
from ...op import nn as _nn
from .aten import DType, _is_expr, _norm_dim, _scalar_like, register
from .aten_activation import _elu
from .aten_pad import _pad_expr
from .aten_pool import _pool_indices
from .aten_reduce import _dims, _vector_norm
from .aten_resample import _resize_plan, _upsample_scales

# SELU's constants (Klambauer et al.), as torch defines them
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _opt(args, i, default):
    return args[i] if len(args) > i and args[i] is not None else default


def _zero(ctx, x):
    return _scalar_like(ctx, 0.0, x)


def _log1p_expr(ctx, x):
    """log(1 + x) to full precision: log(u) * x / (u - 1) with u = 1 + x (x itself if u == 1),
    which cancels the rounding of u."""
    one = _scalar_like(ctx, 1.0, x)
    u = _op.add(one, x)
    exact = _op.divide(_op.multiply(_op.log(u), x), _op.subtract(u, one))
    return _op.where(_op.equal(u, one), x, exact)


# ------------------------------------------------------------------ activations
@register("selu", "selu_")
def _selu(ctx, args):
    return _elu(ctx, [args[0], _SELU_ALPHA, _SELU_SCALE, 1.0])


@register("celu", "celu_")
def _celu(ctx, args):
    alpha = float(_opt(args, 1, 1.0))
    return _elu(ctx, [args[0], alpha, 1.0, 1.0 / alpha])


@register("threshold", "threshold_")
def _threshold(ctx, args):
    x, thresh, value = args[:3]
    return _op.where(_op.greater(x, _scalar_like(ctx, thresh, x)), x,
                     _scalar_like(ctx, value, x))


@register("hardshrink")
def _hardshrink(ctx, args):
    x, lambd = args[0], float(_opt(args, 1, 0.5))
    return _op.where(_op.greater(_op.abs(x), _scalar_like(ctx, lambd, x)), x, _zero(ctx, x))


@register("softshrink")
def _softshrink(ctx, args):
    x, lambd = args[0], float(_opt(args, 1, 0.5))
    lam = _scalar_like(ctx, lambd, x)
    inner = _op.where(_op.less(x, _op.negative(lam)), _op.add(x, lam), _zero(ctx, x))
    return _op.where(_op.greater(x, lam), _op.subtract(x, lam), inner)


@register("log_sigmoid", "log_sigmoid_forward")
def _log_sigmoid(ctx, args):
    """min(x, 0) - log1p(exp(-|x|)): no overflow for large |x|."""
    x = args[0]
    tail = _log1p_expr(ctx, _op.exp(_op.negative(_op.abs(x))))
    out = _op.subtract(_op.minimum(x, _zero(ctx, x)), tail)
    return out if ctx.op_name == "log_sigmoid" else (out, None)


@register("rrelu", "rrelu_")
def _rrelu(ctx, args):
    """RReLU in eval mode: a leaky ReLU with the mean of the slope range."""
    x = args[0]
    lower, upper = float(_opt(args, 1, 1.0 / 8)), float(_opt(args, 2, 1.0 / 3))
    if bool(_opt(args, 3, False)):
        raise ctx.fail("RReLU in training mode samples random slopes; call model.eval()")
    return _nn.leaky_relu(x, (lower + upper) / 2)


@register("glu")
def _glu(ctx, args):
    x = args[0]
    s = ctx.shape(x)
    dim = _norm_dim(_opt(args, 1, -1), len(s))
    if s[dim] % 2:
        raise ctx.fail(f"glu halves dim {dim}, whose size {s[dim]} is odd")
    a, b = _op.split(x, 2, axis=dim)
    return _op.multiply(a, _op.sigmoid(b))


# ------------------------------------------------------------------ grids
@register("meshgrid")
def _meshgrid(ctx, args):
    """(tensors, indexing='ij'): each 0-/1-D input broadcast along its own axis of the grid;
    'xy' swaps the first two axes of the grid (the first input varies along columns)."""
    tensors, indexing = list(args[0]), _opt(args, 1, "ij")
    if indexing not in ("ij", "xy"):
        raise ctx.fail(f"indexing={indexing!r} is not 'ij' or 'xy'")
    for t in tensors:
        if len(ctx.shape(t)) > 1:
            raise ctx.fail(f"expects 0-D or 1-D tensors, got shape {ctx.shape(t)}")
    sizes = [int(np.prod(ctx.shape(t))) for t in tensors]
    axes = list(range(len(tensors)))
    if indexing == "xy" and len(tensors) > 1:
        axes[0], axes[1] = 1, 0
    grid = [0] * len(tensors)
    for i, a in enumerate(axes):
        grid[a] = sizes[i]
    out = []
    for t, a in zip(tensors, axes, strict=True):
        view = [1] * len(grid)
        view[a] = -1
        out.append(_op.broadcast_to(_op.reshape(t, view), grid))
    return out


# ------------------------------------------------------------------ embedding bags
_BAG_MODES = ("sum", "mean", "max")


def _uniform_bags(ctx, offsets, n, include_last):
    """The bag length when the offsets are a constant 0, L, 2L, ... covering all ``n`` ids (what
    a 2-D input becomes), else None."""
    folded = ctx.fold(offsets)
    if not isinstance(folded, _expr.Constant):
        return None
    off = folded.data.numpy().astype("int64").reshape(-1)
    if include_last:
        if off.size < 2 or off[-1] != n:
            return None
        off = off[:-1]
    if off.size == 0 or n % off.size:
        return None
    length = n // off.size
    return length if np.array_equal(off, np.arange(off.size) * length) and length else None


@register("embedding_bag", "_embedding_bag", "_embedding_bag_forward_only")
def _embedding_bag(ctx, args):
    """(weight, indices, offsets, scale_grad_by_freq, mode, sparse, per_sample_weights,
    include_last_offset, padding_idx): sum, mean or max of the rows of each bag, 0 for an empty
    bag. Equal-length bags reshape and reduce; others use a (bags, ids) membership mask, so
    offsets may be a runtime tensor.

    The other three outputs are PyTorch's (CPU) values, each computed only where the model
    reads it: ``offset2bag`` (the bag of each id; empty in sum mode without padding_idx),
    ``bag_size`` (ids per bag, padding ids left out; zeros in sum mode) and ``max_indices``
    (mode max: the id each maximum came from, (bags, dim), 0 for an empty bag; mode mean: the
    bag sizes; sum: zeros)."""
    weight, idx, offsets = args[:3]
    mode = _BAG_MODES[int(_opt(args, 4, 0))]
    psw = _opt(args, 6, None)
    include_last = bool(_opt(args, 7, False))
    pad_idx = _opt(args, 8, None)
    pad_idx = None if pad_idx is None or int(pad_idx) < 0 else int(pad_idx)
    if len(ctx.shape(idx)) != 1:
        raise ctx.fail(f"expects 1-D indices with offsets, got shape {ctx.shape(idx)}")
    if psw is not None and mode != "sum":
        raise ctx.fail("per_sample_weights needs mode='sum'")
    n = int(ctx.shape(idx)[0])
    d = int(ctx.shape(weight)[1])
    it = ctx.dtype(idx)  # (the three extra outputs' dtype, as PyTorch's)
    rows = _op.take(weight, idx, axis=0)  # (n, d)
    if psw is not None:
        rows = _op.multiply(rows, _op.expand_dims(psw, 1))
    dt = ctx.dtype(weight)
    length = _uniform_bags(ctx, offsets, n, include_last) if pad_idx is None else None
    if length is not None:
        nb = n // length
        bags = _op.reshape(rows, (nb, length, d))
        out = {"sum": _op.sum, "mean": _op.mean, "max": _op.max}[mode](bags, [1])
        if mode == "sum":
            return (out, _expr.const(np.zeros(0, it), it), *_bag_zeros(nb, it))
        sizes = _expr.const(np.full(nb, length, it), it)
        extra = sizes
        if mode == "max":  # the id at each maximum's position in its bag
            pos = _op.cast(_op.argmax(bags, [1]), "int64")  # (nb, d)
            base = _expr.const(np.arange(nb, dtype="int64").reshape(nb, 1) * length, "int64")
            extra = _op.take(idx, _op.add(pos, base))
        return out, _expr.const(np.arange(n, dtype=it) // length, it), sizes, extra
    # member[b, j]: id j belongs to bag b (and is not the padding index)
    off = _op.cast(offsets, "int64")
    nb = int(ctx.shape(offsets)[0]) - (1 if include_last else 0)
    if nb <= 0:
        raise ctx.fail("offsets describe no bags")
    total = _expr.const(np.array([n], "int64"), "int64")
    starts = _op.strided_slice(off, [0], [nb])
    ends = _op.strided_slice(off, [1], [nb + 1]) if include_last else _op.concatenate(
        [_op.strided_slice(off, [1], [nb]), total], 0)
    j = _expr.const(np.arange(n, dtype="int64"), "int64")
    # the bag of id j: the last bag starting at or before it
    offset2bag = _op.subtract(
        _op.sum(_op.cast(_op.less_equal(_op.expand_dims(starts, 1), j), it), [0]),
        _expr.const(np.array(1, it), it))
    member = _op.logical_and(_op.greater_equal(j, _op.expand_dims(starts, 1)),
                             _op.less(j, _op.expand_dims(ends, 1)))  # (nb, n)
    if pad_idx is not None:
        keep = _op.not_equal(_op.cast(idx, "int64"), _expr.const(np.int64(pad_idx), "int64"))
        member = _op.logical_and(member, keep)
    if mode == "max":
        lowest = _expr.const(np.array(-np.inf, dt), dt)
        cand = _op.where(_op.expand_dims(member, 2), _op.expand_dims(rows, 0), lowest)
        best = _op.max(cand, [1])
        count = _op.sum(_op.cast(member, "int32"), [1], keepdims=True)
        empty = _op.equal(count, _expr.const(np.int32(0), "int32"))
        which = _op.take(idx, _op.argmax(cand, [1]))  # (nb, d): the id at each maximum
        which = _op.where(empty, _op.zeros_like(which), which)
        return _op.where(empty, _zero(ctx, best), best), offset2bag, _bag_sizes(member, it), \
            which
    weights = _op.cast(member, dt)  # (nb, n)
    out = _nn.dense(weights, _op.transpose(rows, [1, 0]))
    if mode == "mean":
        count = _op.maximum(_op.sum(weights, [1], keepdims=True), _scalar_like(ctx, 1.0, rows))
        sizes = _bag_sizes(member, it)
        return _op.divide(out, count), offset2bag, sizes, sizes
    if pad_idx is None:  # (PyTorch's sum kernel then leaves offset2bag empty)
        offset2bag = _expr.const(np.zeros(0, it), it)
    return (out, offset2bag, *_bag_zeros(nb, it))


def _bag_sizes(member, dtype):
    """The ids in each bag, from the (bags, ids) membership mask."""
    return _op.sum(_op.cast(member, dtype), [1])


def _bag_zeros(nb, dtype):
    """Sum mode's bag_size and max_indices: PyTorch's CPU kernel returns zeros for both."""
    return _expr.const(np.zeros(nb, dtype), dtype), _expr.const(np.zeros(nb, dtype), dtype)


# ------------------------------------------------------------------ 3-D pools
def _triple(v, default):
    v = default if v is None or (isinstance(v, list | tuple) and not v) else v
    v = [int(e) for e in v] if isinstance(v, list | tuple) else [int(v)]
    return v * 3 if len(v) == 1 else v


def _pool3d_input(ctx, x):
    """A 4-D (C, D, H, W) input gets a batch axis of 1; returns (x, whether one was added)."""
    nd = len(ctx.shape(x))
    if nd not in (4, 5):
        raise ctx.fail(f"expects a 4-D or 5-D input, got {nd}-D")
    return (_op.expand_dims(x, 0), True) if nd == 4 else (x, False)


@register("avg_pool3d")
def _avg_pool3d(ctx, args):
    """(input, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override)."""
    x, added = _pool3d_input(ctx, args[0])
    kernel = _triple(args[1], 1)
    stride = _triple(_opt(args, 2, None), kernel)
    pad = _triple(_opt(args, 3, None), 0)
    if _opt(args, 6, None) is not None:
        raise ctx.fail("avg_pool3d with divisor_override is not supported")
    out = _nn.avg_pool3d(x, kernel, stride, (1, 1, 1), pad, ceil_mode=bool(_opt(args, 4, False)),
                         count_include_pad=bool(_opt(args, 5, True)))
    return _op.squeeze(out, [0]) if added else out


@register("max_pool3d", "max_pool3d_with_indices")
def _max_pool3d(ctx, args):
    """(input, kernel, stride, padding, dilation, ceil_mode); the ``_with_indices`` form's
    indices as ``max_pool2d_with_indices`` computes them."""
    x, added = _pool3d_input(ctx, args[0])
    kernel = _triple(args[1], 1)
    stride = _triple(_opt(args, 2, None), kernel)
    pad = _triple(_opt(args, 3, None), 0)
    dil = _triple(_opt(args, 4, None), 1)
    pooled = _nn.max_pool3d(x, kernel, stride, dil, pad, ceil_mode=bool(_opt(args, 5, False)))
    out = _op.squeeze(pooled, [0]) if added else pooled
    if ctx.op_name == "max_pool3d":
        return out
    idx = _pool_indices(ctx, x, pooled, kernel, stride, pad, dil)
    return out, (_op.squeeze(idx, [0]) if added else idx)


@register("adaptive_avg_pool3d", "_adaptive_avg_pool3d")
def _adaptive_avg_pool3d(ctx, args):
    x, added = _pool3d_input(ctx, args[0])
    out = _nn.adaptive_avg_pool3d(x, _triple(args[1], 1))
    return _op.squeeze(out, [0]) if added else out


@register("adaptive_max_pool3d")
def _adaptive_max_pool3d(ctx, args):
    x, added = _pool3d_input(ctx, args[0])
    out = _nn.adaptive_max_pool3d(x, _triple(args[1], 1))
    return (_op.squeeze(out, [0]) if added else out), None


# ------------------------------------------------------------------ rearranging / resampling
@register("pixel_unshuffle")
def _pixel_unshuffle(ctx, args):
    """(*, C, H*r, W*r) -> (*, C*r*r, H, W), channel c*r*r + i*r + j from offset (i, j)."""
    x, r = args[0], int(args[1])
    s = ctx.shape(x)
    lead, (c, h, w) = s[:-3], s[-3:]
    if h % r or w % r:
        raise ctx.fail(f"height {h} and width {w} must be divisible by the factor {r}")
    x6 = _op.reshape(x, (-1, c, h // r, r, w // r, r))
    moved = _op.transpose(x6, (0, 1, 3, 5, 2, 4))
    return _op.reshape(moved, lead + (c * r * r, h // r, w // r))


def _corners(align):
    return "align_corners" if align else "half_pixel"


@register("upsample_bicubic2d")
def _upsample_bicubic2d(ctx, args):
    """(input, output_size, align_corners, scale_factors) or (..., scales_h, scales_w):
    torch's bicubic is Keys' kernel with A = -0.75 and border-clamped taps."""
    x, align = args[0], bool(args[2])
    size = _resize_plan(ctx, x, args[1], _upsample_scales(args, 3), align)
    return _op.image.resize2d(x, size, method="cubic",
                              coordinate_transformation_mode=_corners(align),
                              cubic_alpha=-0.75, cubic_exclude=0)


@register("upsample_trilinear3d")
def _upsample_trilinear3d(ctx, args):
    """(input, output_size, align_corners, scale_factors) or (..., one scale per axis)."""
    x, align = args[0], bool(args[2])
    size = _resize_plan(ctx, x, args[1], _upsample_scales(args, 3), align)
    return _op.image.resize3d(x, size, method="linear",
                              coordinate_transformation_mode=_corners(align))


@register("upsample_nearest3d")
def _upsample_nearest3d(ctx, args):
    """(input, output_size, scale_factors) or (..., one scale per axis): the source index is
    floor(out * in / out_size), Relay's asymmetric mode with floor rounding."""
    x = args[0]
    size = _resize_plan(ctx, x, args[1], _upsample_scales(args, 2))
    return _op.image.resize3d(x, size, method="nearest_neighbor",
                              coordinate_transformation_mode="asymmetric",
                              rounding_method="floor")


@register("channel_shuffle", "native_channel_shuffle")
def _channel_shuffle(ctx, args):
    x, groups = args[0], int(args[1])
    s = ctx.shape(x)
    if s[1] % groups:
        raise ctx.fail(f"{s[1]} channels do not split into {groups} groups")
    split = _op.reshape(x, (s[0], groups, s[1] // groups) + s[2:])
    perm = [0, 2, 1] + list(range(3, len(s) + 1))
    return _op.reshape(_op.transpose(split, perm), s)


@register("im2col")
def _im2col(ctx, args):
    """nn.Unfold: (N, C, H, W) -> (N, C*kh*kw, L), row c*kh*kw + i*kw + j. Two takes of the
    padded input by constant window indices (rows i*dh + y*sh, then columns j*dw + x*sw), one
    transpose and a reshape: all injective, one fused kernel. (A strided slice per kernel tap,
    stacked, took 2.69 ms for T2T-ViT's 7x7 stride-4 split of 3x128x128; this way 0.29 ms.)"""
    x, kernel, dilation, padding, stride = args[:5]
    s = ctx.shape(x)
    if len(s) not in (3, 4):
        raise ctx.fail(f"expects a 3-D or 4-D input, got {len(s)}-D")
    x = x if len(s) == 4 else _op.expand_dims(x, 0)
    n, c, h, w = ctx.shape(x)
    (kh, kw), (dh, dw), (ph, pw), (sh, sw) = map(pair, (kernel, dilation, padding, stride))
    if ph or pw:
        x = _pad_expr(ctx, x, [pw, pw, ph, ph], "constant", 0.0)
    oh = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    ow = (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    if oh <= 0 or ow <= 0:
        raise ctx.fail(f"the kernel does not fit the padded {h}x{w} input")

    def windows(k, d, o, st):  # [k, o]: tap t of window y reads t*d + y*st
        return _expr.const((np.arange(k)[:, None] * d + np.arange(o)[None] * st).astype("int64"))

    y = _op.take(x, windows(kh, dh, oh, sh), axis=2)         # n c kh oh Wp
    y = _op.take(y, windows(kw, dw, ow, sw), axis=4)         # n c kh oh kw ow
    y = _op.transpose(y, [0, 1, 2, 4, 3, 5])
    out = _op.reshape(y, (n, c * kh * kw, oh * ow))
    return out if len(s) == 4 else _op.squeeze(out, [0])


# ------------------------------------------------------------------ indices, differences
@register("one_hot")
def _one_hot(ctx, args):
    """(indices, num_classes): an int64 equality with arange (num_classes=-1 needs constant
    indices, since the width would depend on the data)."""
    idx, depth = args[0], int(_opt(args, 1, -1))
    if depth < 0:
        folded = ctx.fold(idx)
        if not isinstance(folded, _expr.Constant):
            raise ctx.fail("num_classes=-1 takes the width from the data; pass num_classes")
        depth = int(folded.data.numpy().max()) + 1
    dt = ctx.dtype(idx)
    classes = _expr.const(np.arange(depth, dtype=dt), dt)
    return _op.cast(_op.equal(_op.expand_dims(idx, -1), classes), "int64")


@register("repeat_interleave")
def _repeat_interleave(ctx, args):
    """(input, repeats, dim, output_size): each slice along ``dim`` repeated in place (the
    flattened input when ``dim`` is None). An int repeat is a broadcast over a new axis then a
    reshape; per-slice repeats (a tensor) must be constant and become a take of np.repeat'd
    indices."""
    x, reps, dim = args[0], args[1], _opt(args, 2, None)
    if dim is None:
        x, dim = _op.reshape(x, (-1,)), 0
    s = ctx.shape(x)
    dim = _norm_dim(dim, len(s))
    if _is_expr(reps):
        folded = ctx.fold(reps)
        if not isinstance(folded, _expr.Constant):
            raise ctx.fail("per-slice repeats from the data make a data-dependent shape")
        counts = folded.data.numpy().reshape(-1)
        if counts.size != 1:
            idx = np.repeat(np.arange(s[dim], dtype="int64"), counts)
            return _op.take(x, _expr.const(idx, "int64"), axis=dim)
        reps = counts[0]
    r = int(reps)
    y = _op.expand_dims(x, dim + 1)
    y = _op.broadcast_to(y, (*s[:dim + 1], r, *s[dim + 1:]))
    return _op.reshape(y, (*s[:dim], s[dim] * r, *s[dim + 1:]))


@register("diff")
def _diff(ctx, args):
    """(input, n, dim, prepend, append): n rounds of x[1:] - x[:-1] along dim."""
    x = args[0]
    n = int(_opt(args, 1, 1))
    nd = len(ctx.shape(x))
    dim = _norm_dim(_opt(args, 2, -1), nd)
    parts = [p for p in (_opt(args, 3, None), x, _opt(args, 4, None)) if p is not None]
    if len(parts) > 1:
        x = _op.concatenate(parts, dim)
    for _ in range(n):
        m = ctx.shape(x)[dim]
        if m == 0:
            break
        hi = _op.strided_slice(x, [1], [m], [1], axes=[dim])
        lo = _op.strided_slice(x, [0], [m - 1], [1], axes=[dim])
        x = _op.logical_xor(hi, lo) if ctx.dtype(x) == "bool" else _op.subtract(hi, lo)
    return x


# ------------------------------------------------------------------ pairwise / bilinear
@register("cosine_similarity")
def _cosine_similarity(ctx, args):
    """sum over dim of (x1 / max(|x1|, eps)) * (x2 / max(|x2|, eps)): each norm clamped by eps."""
    x1, x2 = args[0], args[1]
    dim, eps = _opt(args, 2, 1), float(_opt(args, 3, 1e-8))
    nd = max(len(ctx.shape(x1)), len(ctx.shape(x2)))
    dims = _dims(dim, nd)

    def unit(v):
        if len(ctx.shape(v)) < nd:
            v = _op.reshape(v, (1,) * (nd - len(ctx.shape(v))) + ctx.shape(v))
        norm = _vector_norm(ctx, v, 2.0, dims, True)
        return _op.divide(v, _op.maximum(norm, _scalar_like(ctx, eps, v)))

    return _op.sum(_op.multiply(unit(x1), unit(x2)), dims)


@register("pairwise_distance")
def _pairwise_distance(ctx, args):
    """(x1, x2, p, eps, keepdim): the p-norm of x1 - x2 + eps over the last dim."""
    x1, x2 = args[0], args[1]
    p, eps = float(_opt(args, 2, 2.0)), float(_opt(args, 3, 1e-6))
    keep = bool(_opt(args, 4, False))
    d = _op.add(_op.subtract(x1, x2), _scalar_like(ctx, eps, x1))
    nd = max(len(ctx.shape(x1)), len(ctx.shape(x2)))
    return _vector_norm(ctx, d, p, [nd - 1] if nd else None, keep)


@register("bilinear")
def _bilinear(ctx, args):
    """y[..., o] = sum_ij x1[..., i] W[o, i, j] x2[..., j] + b[o]: one dense against W laid
    out (o*j, i), then a product with x2 and a sum over j."""
    x1, x2, w = args[:3]
    b = _opt(args, 3, None)
    s1, s2 = ctx.shape(x1), ctx.shape(x2)
    o, i, j = ctx.shape(w)
    if s1[:-1] != s2[:-1]:
        raise ctx.fail(f"input shapes {s1} and {s2} differ before the last dim")
    wt = _op.reshape(_op.transpose(w, (0, 2, 1)), (o * j, i))
    t = _op.reshape(_nn.dense(_op.reshape(x1, (-1, i)), wt), (-1, o, j))
    y = _op.sum(_op.multiply(t, _op.expand_dims(_op.reshape(x2, (-1, j)), 1)), [2])
    if b is not None:
        y = _nn.bias_add(y, b, axis=-1)
    return _op.reshape(y, s1[:-1] + (o,))


# ------------------------------------------------------------------ elementwise math
@register("sign")
def _sign(ctx, args):
    """0 at NaN, as torch's (Relay's ``sign`` keeps NaN)."""
    x = args[0]
    if not ctx.dtype(x).startswith("float"):
        return _op.sign(x)
    return _op.where(_op.isnan(x), _scalar_like(ctx, 0.0, x), _op.sign(x))


@register("trunc")
def _trunc(ctx, args):
    return _op.trunc(args[0])


@register("square")
def _square(ctx, args):
    """``x * x``; a bool tensor squares as int64, as ``pow(x, 2)`` promotes it in torch."""
    x = args[0] if ctx.dtype(args[0]) != "bool" else _op.cast(args[0], "int64")
    return _op.multiply(x, x)


@register("expm1")
def _expm1(ctx, args):
    """exp(x) - 1 without the cancellation near 0: 2t / (1 - t) with t = tanh(x / 2) below 1."""
    x = args[0]
    one = _scalar_like(ctx, 1.0, x)
    t = _op.tanh(_op.multiply(x, _scalar_like(ctx, 0.5, x)))
    small = _op.divide(_op.add(t, t), _op.subtract(one, t))
    return _op.where(_op.less(x, one), small, _op.subtract(_op.exp(x), one))


@register("log1p")
def _log1p(ctx, args):
    return _log1p_expr(ctx, args[0])


@register("outer", "ger")
def _outer(ctx, args):
    return _op.multiply(_op.expand_dims(args[0], 1), _op.expand_dims(args[1], 0))


@register("numpy_T")
def _numpy_t(ctx, args):
    nd = len(ctx.shape(args[0]))
    return args[0] if nd < 2 else _op.transpose(args[0], list(range(nd))[::-1])


@register("broadcast_tensors")
def _broadcast_tensors(ctx, args):
    tensors = list(args[0])
    shape = tuple(np.broadcast_shapes(*[ctx.shape(t) for t in tensors]))
    return [t if ctx.shape(t) == shape else _op.broadcast_to(t, shape) for t in tensors]


# ------------------------------------------------------------------ reductions
def _reduce_args(ctx, args):
    """(input[, dim, keepdim]) with the dtype arguments dropped."""
    rest = [a for a in args[1:] if not isinstance(a, DType)]
    dims = _dims(rest[0] if rest and not isinstance(rest[0], bool) else None,
                 len(ctx.shape(args[0])))
    keep = bool(rest[1]) if len(rest) > 1 and rest[1] is not None else False
    return dims, keep


@register("prod")
def _prod(ctx, args):
    x = args[0]
    dt = next((str(a) for a in args[1:] if isinstance(a, DType)), None)
    if dt is None and not ctx.dtype(x).startswith("float"):
        dt = "int64"  # torch accumulates integer and bool products in int64
    x = x if dt is None or dt == ctx.dtype(x) else _op.cast(x, dt)
    dims, keep = _reduce_args(ctx, args)
    return _op.prod(x, dims, keepdims=keep)


@register("all", "any")
def _all_any(ctx, args):
    x = args[0]
    if ctx.dtype(x) != "bool":
        x = _op.not_equal(x, _scalar_like(ctx, 0, x))
    dims, keep = _reduce_args(ctx, args)
    return (_op.all if ctx.op_name == "all" else _op.any)(x, dims, keepdims=keep)


def _sort_args(ctx, args) -> tuple[int, bool]:
    """(dim, ascending) of sort's / argsort's (input, dim, descending) or their .stable
    overloads' (input, stable, dim, descending)."""
    rest = list(args[1:])
    if len(rest) == 3:
        rest = rest[1:]  # .stable: drop the stable flag
    return (_norm_dim(_opt(rest, 0, -1), len(ctx.shape(args[0]))),
            not bool(_opt(rest, 1, False)))


@register("sort")
def _sort(ctx, args):
    dim, ascend = _sort_args(ctx, args)
    return (_op.sort(args[0], axis=dim, is_ascend=ascend),
            _op.argsort(args[0], axis=dim, is_ascend=ascend, dtype="int64"))


@register("msort")
def _msort(ctx, args):
    """msort(self): the values sorted along axis 0."""
    return _op.sort(args[0], axis=0, is_ascend=True)


@register("kthvalue")
def _kthvalue(ctx, args):
    """The ``k``-th smallest along ``dim`` and its int64 index (MaskGIT's re-masking
    threshold): the last of an ascending ``topk`` of ``k``."""
    x, k = args[0], int(args[1])
    dim = _norm_dim(_opt(args, 2, -1), len(ctx.shape(x)))
    keep = bool(_opt(args, 3, False))
    n = ctx.shape(x)[dim]
    if isinstance(n, int) and not 1 <= k <= n:
        raise ctx.fail(f"kthvalue: k = {k} is outside [1, {n}] along dim {dim}")
    vals, idx = _op.topk(x, k, axis=dim, ret_type="both", is_ascend=True, dtype="int64")
    last = [_op.take(t, _expr.const(k - 1, "int64"), axis=dim) for t in (vals, idx)]
    if keep:
        last = [_op.expand_dims(t, dim) for t in last]
    return last[0], last[1]


@register("argsort")
def _argsort(ctx, args):
    """The int64 order of ``input`` along ``dim`` (ToMe's token ranking); ties keep their
    input order, as torch's stable overload does."""
    dim, ascend = _sort_args(ctx, args)
    return _op.argsort(args[0], axis=dim, is_ascend=ascend, dtype="int64")


def _loss_reduction(ctx, loss, reduction):
    """torch's Reduction enum: 0 none, 1 mean, 2 sum."""
    reduction = 1 if reduction is None else int(reduction)
    if reduction == 0:
        return loss
    if reduction not in (1, 2):
        raise ctx.fail(f"unknown reduction {reduction}")
    return (_op.mean if reduction == 1 else _op.sum)(loss)


@register("mse_loss")
def _mse_loss(ctx, args):
    d = _op.subtract(args[0], args[1])
    return _loss_reduction(ctx, _op.multiply(d, d), _opt(args, 2, 1))


@register("l1_loss")
def _l1_loss(ctx, args):
    return _loss_reduction(ctx, _op.abs(_op.subtract(args[0], args[1])), _opt(args, 2, 1))


@register("binary_cross_entropy_with_logits")
def _bce_with_logits(ctx, args):
    """(input, target, weight, pos_weight, reduction): ``(1 - t) x + (1 + (p - 1) t)
    softplus(-x)`` per element, times ``weight``; softplus(-x) as
    ``log1p(exp(-|x|)) + max(-x, 0)`` so no exp overflows (a VAE's reconstruction term)."""
    x, t = args[0], args[1]
    weight, pos_weight = _opt(args, 2, None), _opt(args, 3, None)
    if not ctx.dtype(x).startswith("float"):
        raise ctx.fail(f"expects floating-point logits, got {ctx.dtype(x)}")
    if ctx.dtype(t) != ctx.dtype(x):
        t = _op.cast(t, ctx.dtype(x))
    one, zero = _scalar_like(ctx, 1.0, x), _scalar_like(ctx, 0.0, x)
    softplus_neg = _op.add(_log1p_expr(ctx, _op.exp(_op.negative(_op.abs(x)))),
                           _op.maximum(_op.negative(x), zero))
    if pos_weight is not None:
        log_weight = _op.add(one, _op.multiply(_op.subtract(pos_weight, one), t))
        softplus_neg = _op.multiply(log_weight, softplus_neg)
    loss = _op.add(_op.multiply(_op.subtract(one, t), x), softplus_neg)
    if weight is not None:
        loss = _op.multiply(loss, weight)
    return _loss_reduction(ctx, loss, _opt(args, 4, 1))


@register("binary_cross_entropy")
def _bce(ctx, args):
    """(input probabilities, target, weight, reduction): ``-(t log p + (1 - t) log(1 - p))``
    with each log clamped at -100, as torch does, times ``weight``."""
    p, t = args[0], args[1]
    weight = _opt(args, 2, None)
    if not ctx.dtype(p).startswith("float"):
        raise ctx.fail(f"expects floating-point probabilities, got {ctx.dtype(p)}")
    if ctx.dtype(t) != ctx.dtype(p):
        t = _op.cast(t, ctx.dtype(p))
    one, floor = _scalar_like(ctx, 1.0, p), _scalar_like(ctx, -100.0, p)
    log_p = _op.maximum(_op.log(p), floor)
    log_q = _op.maximum(_op.log(_op.subtract(one, p)), floor)
    loss = _op.negative(_op.add(_op.multiply(t, log_p),
                                _op.multiply(_op.subtract(one, t), log_q)))
    if weight is not None:
        loss = _op.multiply(loss, weight)
    return _loss_reduction(ctx, loss, _opt(args, 3, 1))


@register("cdist")
def _cdist(ctx, args):
    """(x1 [.., P, M], x2 [.., R, M], p, compute_mode) -> [.., P, R]: the p-norm of every
    pairwise difference, over a broadcast [.., P, R, M] tensor."""
    x1, x2 = args[0], args[1]
    p = float(_opt(args, 2, 2.0))
    if p == 2.0 and _euclid_by_mm(ctx, x1, x2, _opt(args, 3, None)):
        return _cdist_mm(ctx, x1, x2)
    d = _op.subtract(_op.expand_dims(x1, -2), _op.expand_dims(x2, -3))
    return _vector_norm(ctx, d, p, [-1], False)


def _euclid_by_mm(ctx, x1, x2, mode) -> bool:
    """Does torch compute this Euclidean cdist by a matrix product? (compute_mode None / 0:
    when either side has more than 25 rows; 1: always; 2: never.) Only float operands of rank
    2, or rank 3 with one batch size, are taken that way here."""
    s1, s2 = ctx.shape(x1), ctx.shape(x2)
    if mode == 2 or len(s1) != len(s2) or len(s1) not in (2, 3) or \
            not ctx.dtype(x1).startswith("float") or ctx.dtype(x1) != ctx.dtype(x2):
        return False
    if len(s1) == 3 and not (isinstance(s1[0], int) and s1[0] == s2[0]):
        return False
    rows = (s1[-2], s2[-2])
    return mode == 1 or any(isinstance(r, int) and r > 25 for r in rows)


def _cdist_mm(ctx, x1, x2):
    """``sqrt(max(|a|^2 + |b|^2 - 2 a.b, 0))`` with the products one GEMM, as torch does for
    many rows: no [.., P, R, M] difference tensor (a Siamese net's 64x64 patch distances over
    64 channels took 0.042 ms through it, 0.010 ms so)."""
    prod = _nn.dense(x1, x2) if len(ctx.shape(x1)) == 2 else \
        _nn.batch_matmul(x1, x2, transpose_a=False, transpose_b=True)
    n1 = _op.sum(_op.multiply(x1, x1), axis=[-1], keepdims=True)
    n2 = _op.expand_dims(_op.sum(_op.multiply(x2, x2), axis=[-1]), -2)
    d2 = _op.subtract(_op.add(n1, n2), _op.multiply(prod, _scalar_like(ctx, 2.0, x1)))
    return _op.sqrt(_op.maximum(d2, _scalar_like(ctx, 0.0, x1)))


@register("_weight_norm")
def _weight_norm(ctx, args):
    """``torch._weight_norm(v, g, dim)`` (``nn.utils.weight_norm``'s reparametrization, which
    torch.export keeps as one op): ``v * g / ||v||``, the 2-norm over every axis but ``dim``
    (over all axes when ``dim`` is -1)."""
    v, g = args[0], args[1]
    dim = int(_opt(args, 2, 0))
    nd = len(ctx.shape(v))
    keep = None if dim == -1 else _norm_dim(dim, nd)
    axes = [a for a in range(nd) if a != keep]
    norm = _vector_norm(ctx, v, 2.0, axes, True)
    return _op.multiply(v, _op.divide(g, norm))

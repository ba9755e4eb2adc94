"""TVM's ``topi.nn`` functions on te tensors with possibly symbolic shapes: matmul, conv1d/2d
(any layout letters), conv2d_transpose, pooling, adaptive average pooling, softmax, the norms,
activations, attention.

These are what Relax's legalization calls (``topi/nn.py`` holds Relay's registered fcomputes,
static shapes only). Stage names follow TVM's (``matmul`` over ``i0, i1, k``;
``T_softmax_maxelem``...).
"""

from __future__ import annotations

import math

from .. import te
from ..tir import expr as E
from ..tir import op as tir_op
from .broadcast import ax_names, broadcast_shape, const_like, is_one
from .pooling_nd import pool_nd, widest_bin
from .reduction import count_of, norm_axes
from .utils import ieee_max

__all__ = [
    "matmul", "conv", "conv_transpose", "pool2d", "adaptive_avg_pool2d", "softmax",
    "log_softmax", "layer_norm", "group_norm", "rms_norm", "batch_norm", "gelu", "gelu_tanh",
    "silu", "relu6", "leaky_relu", "attention",
]


def _i64(v) -> E.PrimExpr:
    return v if isinstance(v, E.PrimExpr) else E.IntImm("int64", int(v))


def _zero(like) -> E.IntImm:
    return E.IntImm(like.dtype if hasattr(like, "dtype") else "int64", 0)


def _to(v, dtype):
    return v if v.dtype == dtype else E.Cast(dtype, v)


def _norm_acc(dtype: str) -> str:
    """The dtype a normalization's statistics are computed in (float16: float32, as the sum of
    squares ``_moments`` accumulates)."""
    return "float32" if dtype == "float16" else dtype


def _simplify(e):
    from ..arith import Analyzer

    return Analyzer().simplify(e)


# ------------------------------------------------------------------ matmul
def matmul(a, b, out_dtype: str | None = None, out_shape=None):
    """numpy ``matmul`` (1-D operands promoted, batch dims broadcast): stage ``matmul`` over
    ``i0, i1...`` with reduction axis ``k``, as TVM's legalization writes it."""
    dtype = out_dtype or a.dtype
    an, bn = len(a.shape), len(b.shape)
    a_shape = list(a.shape) if an > 1 else [E.IntImm("int64", 1)] + list(a.shape)
    b_shape = list(b.shape) if bn > 1 else list(b.shape) + [E.IntImm("int64", 1)]
    batch = broadcast_shape(a_shape[:-2], b_shape[:-2])
    shape = list(out_shape) if out_shape is not None else (
        batch + ([a_shape[-2]] if an > 1 else []) + ([b_shape[-1]] if bn > 1 else []))
    k = te.reduce_axis((_zero(a.shape[-1]), a.shape[-1]), name="k")
    nb = len(batch)

    def body(*i):
        ib = list(i[:nb])
        rest = list(i[nb:])
        row = rest.pop(0) if an > 1 else None
        col = rest.pop(0) if bn > 1 else None

        def bidx(shape_b):
            # a unit axis broadcast against a longer one of the output is read at 0; any
            # other batch axis at the output's
            lead = nb - len(shape_b)
            return [E.IntImm(i[0].dtype, 0) if is_one(d) and not is_one(batch[lead + q])
                    else ib[lead + q] for q, d in enumerate(shape_b)]

        ai = bidx(a_shape[:-2]) + ([row] if an > 1 else []) + [k]
        bi = bidx(b_shape[:-2]) + [k] + ([col] if bn > 1 else [])
        return te.sum(_to(a[tuple(ai)], dtype) * _to(b[tuple(bi)], dtype), axis=k)

    if not shape:
        return te.compute((), lambda: body(), name="matmul")
    return te.compute(shape, body, name="matmul")


# ------------------------------------------------------------------ convolution
def _layout_pos(layout: str) -> dict:
    return {c: k for k, c in enumerate(layout)}


def conv(data, weight, strides, padding, dilation, groups: int, data_layout: str,
         kernel_layout: str, out_layout: str, out_dtype: str | None = None):
    """N-d convolution (1-D or 2-D) for any order of the layout letters N, C, spatial (W; H, W)
    and O, I: a ``pad_temp`` stage when padded, then ``conv<nd>d_<layout>``."""
    dtype = out_dtype or data.dtype
    sp = [c for c in data_layout if c not in "NC"]
    nd = len(sp)
    dpos, kpos, opos = _layout_pos(data_layout), _layout_pos(kernel_layout), \
        _layout_pos(out_layout)
    pads_before = list(padding[:nd])
    pads_after = list(padding[nd:2 * nd]) if len(padding) >= 2 * nd else pads_before
    if any(pads_before) or any(pads_after):
        from .manipulation import pad

        before = [pads_before[sp.index(c)] if c in sp else 0 for c in data_layout]
        after = [pads_after[sp.index(c)] if c in sp else 0 for c in data_layout]
        data = pad(data, before, after, 0.0, name="pad_temp")
    n = data.shape[dpos["N"]]
    oc = weight.shape[kpos["O"]]
    icg = weight.shape[kpos["I"]]
    ksz = [weight.shape[kpos[c]] for c in sp]
    insz = [data.shape[dpos[c]] for c in sp]
    out_sp = [_simplify(E.FloorDiv(insz[q] - (ksz[q] - 1) * int(dilation[q]) - 1,
                                   _i64(int(strides[q]))) + 1) for q in range(nd)]
    logical = {"N": n, "C": oc}
    for q, c in enumerate(sp):
        logical[c] = out_sp[q]
    shape = [logical[c] for c in out_layout]
    rc = te.reduce_axis((_zero(icg), icg), name="rc")
    rk = [te.reduce_axis((_zero(ksz[q]), ksz[q]), name="r" + sp[q].lower()) for q in range(nd)]
    og = None if groups == 1 else _simplify(E.FloorDiv(oc, _i64(groups)))

    def body(*i):
        b = i[opos["N"]]
        o = i[opos["C"]]
        ic = rc if groups == 1 else E.FloorDiv(o, og) * icg + rc
        didx = [None] * len(data_layout)
        didx[dpos["N"]], didx[dpos["C"]] = b, ic
        for q, c in enumerate(sp):
            y = i[opos[c]]
            s, d = int(strides[q]), int(dilation[q])
            didx[dpos[c]] = (y * s if s != 1 else y) + (rk[q] * d if d != 1 else rk[q])
        kidx = [None] * len(kernel_layout)
        kidx[kpos["O"]], kidx[kpos["I"]] = o, rc
        for q, c in enumerate(sp):
            kidx[kpos[c]] = rk[q]
        return te.sum(_to(data[tuple(didx)], dtype) * _to(weight[tuple(kidx)], dtype),
                      axis=[rc, *rk])

    name = f"conv{nd}d_{out_layout.lower()}"
    return te.compute(shape, body, name=name, varargs_names=_names_for(out_layout))


def _names_for(layout: str) -> list[str]:
    base = {"N": "nn", "C": "ff", "H": "yy", "W": "xx", "D": "zz"}
    return [base.get(c, f"ax{k}") for k, c in enumerate(layout)]


def conv_transpose(data, weight, strides, padding, output_padding, dilation, groups: int,
                   out_shape, out_dtype: str | None = None):
    """Transposed convolution for NC(H)W data and IO(H)W kernels (stage
    ``conv<nd>d_transpose_nc<hw>``): every output element gathers the input positions that
    scatter onto it."""
    dtype = out_dtype or data.dtype
    nd = len(data.shape) - 2
    icn = data.shape[1]
    ocg = weight.shape[1]
    ksz = list(weight.shape[2:])
    insz = list(data.shape[2:])
    pb = list(padding[:nd])
    icg = icn if groups == 1 else _simplify(E.FloorDiv(icn, _i64(groups)))
    rc = te.reduce_axis((_zero(icg), icg), name="rc")
    rk = [te.reduce_axis((_zero(ksz[q]), ksz[q]), name=f"r{q}") for q in range(nd)]

    def body(b, o, *ys):
        g = None if groups == 1 else E.FloorDiv(o, ocg)
        ic = rc if groups == 1 else g * icg + rc
        conds, idx = [], []
        for q in range(nd):
            s, d = int(strides[q]), int(dilation[q])
            t = ys[q] + pb[q] - rk[q] * d
            j = E.FloorDiv(t, _i64(s)) if s != 1 else t
            conds.append(t >= 0)
            if s != 1:
                conds.append(E.EQ(E.FloorMod(t, _i64(s)), _zero(t)))
            conds.append(j < insz[q])
            idx.append(E.Min(E.Max(j, _zero(j)), insz[q] - 1))
        c = conds[0]
        for more in conds[1:]:
            c = E.And(c, more)
        oo = o if groups == 1 else E.FloorMod(o, ocg)
        v = _to(data[(b, ic, *idx)], dtype) * _to(weight[(ic, oo, *rk)], dtype)
        return te.sum(E.Select(c, v, const_like(0, dtype)), axis=[rc, *rk])

    names = ["b", "c"] + ["h", "w"][-nd:] if nd <= 2 else None
    return te.compute(out_shape, body, name=f"conv{nd}d_transpose_nc{'hw'[-nd:]}",
                      varargs_names=names)


# ------------------------------------------------------------------ pooling
def pool2d(x, kind: str, pool_size, strides, dilation, padding, count_include_pad: bool,
           layout: str, out_shape):
    """Max or average pooling over the H, W letters of ``layout`` (``pool_max`` /
    ``pool_sum`` + ``pool_avg`` stages); padded positions never win a max and are counted by
    an average only with ``count_include_pad``."""
    return pool_nd(x, kind, pool_size, strides, dilation, padding, count_include_pad, layout,
                   out_shape)


def adaptive_avg_pool2d(x, layout: str, out_shape):
    """Adaptive average pooling: output cell ``o`` of ``n`` over a dim of size ``H`` averages
    rows ``floor(o*H/n)`` to ``ceil((o+1)*H/n)``."""
    pos = _layout_pos(layout)
    hw = [pos["H"], pos["W"]]
    sizes = [x.shape[a] for a in hw]
    outs = [out_shape[a] for a in hw]

    def start(o, q):
        return E.FloorDiv(o * sizes[q], outs[q])

    def end(o, q):
        return E.FloorDiv((o + 1) * sizes[q] + outs[q] - 1, outs[q])

    maxw = []
    for q in range(2):
        if isinstance(sizes[q], E.IntImm) and isinstance(outs[q], E.IntImm):
            h, n = sizes[q].value, outs[q].value
            maxw.append(max(-(-((o + 1) * h) // n) - (o * h) // n for o in range(n)))
        else:
            maxw.append(None)
    rk = [te.reduce_axis((E.IntImm("int64", 0), _i64(maxw[q]) if maxw[q] is not None
                          else widest_bin(sizes[q], outs[q])), name=f"rv{q}") for q in range(2)]

    def sbody(*i):
        idx, conds = list(i), []
        for q, ax in enumerate(hw):
            j = start(i[ax], q) + rk[q]
            conds.append(j < end(i[ax], q))
            idx[ax] = E.Min(j, sizes[q] - 1)
        return te.sum(E.Select(E.And(conds[0], conds[1]), x[tuple(idx)],
                               const_like(0, x.dtype)), axis=rk)

    summed = te.compute(out_shape, sbody, name="adaptive_pool_sum",
                        varargs_names=ax_names(len(x.shape)))

    def avg(*i):
        cnt = None
        for q, ax in enumerate(hw):
            w = end(i[ax], q) - start(i[ax], q)
            cnt = w if cnt is None else cnt * w
        return summed[i] / _to(cnt, x.dtype)

    return te.compute(out_shape, avg, name="adaptive_pool_avg",
                      varargs_names=ax_names(len(x.shape)))


# ------------------------------------------------------------------ softmax
def _reduce_along(x, axis: int, kind: str, name: str, f=None):
    """Reduce ``x`` along ``axis`` keeping it as a unit dim; ``f`` maps each element first."""
    nd = len(x.shape)
    n = x.shape[axis]
    k = te.reduce_axis((_zero(n), n), name="k")
    shape = [E.IntImm("int64", 1) if d == axis else x.shape[d] for d in range(nd)]
    red = ieee_max if kind == "max" else te.sum

    def body(*i):
        idx = tuple(k if d == axis else i[d] for d in range(nd))
        v = x[idx]
        return red(f(v, i) if f is not None else v, axis=k)

    return te.compute(shape, body, name=name, varargs_names=ax_names(nd))


def _at_unit(i, axis):
    return tuple(E.IntImm(i[d].dtype, 0) if d == axis else i[d] for d in range(len(i)))


def softmax(x, axis: int = -1):
    """``exp(x - max) / sum(exp(x - max))`` along ``axis`` (TVM's four stages)."""
    nd = len(x.shape)
    axis = axis % nd
    mx = _reduce_along(x, axis, "max", "T_softmax_maxelem")
    ex = te.compute(x.shape, lambda *i: tir_op.exp(x[i] - mx[_at_unit(i, axis)]),
                    name="T_softmax_exp", varargs_names=ax_names(nd))
    sm = _reduce_along(ex, axis, "sum", "T_softmax_expsum")
    return te.compute(x.shape, lambda *i: ex[i] / sm[_at_unit(i, axis)],
                      name="T_softmax_norm", varargs_names=ax_names(nd))


def log_softmax(x, axis: int = -1):
    """``x - max - log(sum(exp(x - max)))`` along ``axis``."""
    nd = len(x.shape)
    axis = axis % nd
    mx = _reduce_along(x, axis, "max", "T_softmax_maxelem")
    sm = _reduce_along(x, axis, "sum", "compute_red",
                       f=lambda v, i: tir_op.exp(v - mx[_at_unit(i, axis)]))
    return te.compute(x.shape, lambda *i: x[i] - mx[_at_unit(i, axis)] -
                      tir_op.log(sm[_at_unit(i, axis)]), name="compute",
                      varargs_names=ax_names(nd))


# ------------------------------------------------------------------ norms
def _moments(x, axes, name: str, square_only: bool = False):
    """Per-group sums over ``axes`` (kept as unit dims; float32 for a float16 ``x``, as
    ``_norm_acc``): of squares, and unless ``square_only`` of values and of squares *shifted by
    the group's first element* (``shift``: read it back with ``_at_units``). The shift keeps
    ``var = sq / n - (s / n) ** 2`` from cancelling for values close together (two elements
    one ulp of 1 apart gave a variance off by more than eps, layer_norm off by percents); the
    cost is one subtraction per element, still one pass as TVM's tuple reduction."""
    nd = len(x.shape)
    rv = [te.reduce_axis((_zero(x.shape[a]), x.shape[a]), name=f"k{a}") for a in axes]
    shape = [E.IntImm("int64", 1) if d in axes else x.shape[d] for d in range(nd)]
    acc = _norm_acc(x.dtype)

    def src(i):
        it = iter(rv)
        return _to(x[tuple(next(it) if d in axes else i[d] for d in range(nd))], acc)

    if square_only:
        sq = te.compute(shape, lambda *i: te.sum(src(i) * src(i), axis=rv),
                        name=f"{name}_sqsum", varargs_names=ax_names(nd))
        return None, sq

    def dev(i):  # read inside the reduction only: an empty group never reads its first element
        return src(i) - _to(x[_at_units(i, axes)], acc)

    s = te.compute(shape, lambda *i: te.sum(dev(i), axis=rv), name=f"{name}_sum",
                   varargs_names=ax_names(nd))
    sq = te.compute(shape, lambda *i: te.sum(dev(i) * dev(i), axis=rv), name=f"{name}_sqsum",
                    varargs_names=ax_names(nd))
    return s, sq


def layer_norm(x, gamma, beta, axes, epsilon: float, center: bool = True, scale: bool = True):
    """``(x - mean) / sqrt(var + eps) * gamma + beta`` over ``axes`` (gamma/beta shaped as
    those axes)."""
    nd = len(x.shape)
    axes = norm_axes(nd, axes)
    s, sq = _moments(x, axes, "T_layer_norm")
    acc = _norm_acc(x.dtype)  # float16: the statistics in float32 (as the sum of squares)
    n = _to(count_of(x, axes), acc)
    eps = const_like(epsilon, acc)

    def body(*i):
        u = _at_units(i, axes)
        mean = s[u] / n  # of the values shifted by the group's first, x[u]
        var = sq[u] / n - mean * mean
        v = (_to(x[i], acc) - _to(x[u], acc) - mean) * tir_op.rsqrt(var + eps)
        gi = tuple(i[a] for a in axes)
        if scale and gamma is not None:
            v = v * _to(gamma[gi], acc)
        if center and beta is not None:
            v = v + _to(beta[gi], acc)
        return _to(v, x.dtype)

    return te.compute(x.shape, body, name="T_layer_norm", varargs_names=ax_names(nd))


def _at_units(i, axes):
    return tuple(E.IntImm(i[d].dtype, 0) if d in axes else i[d] for d in range(len(i)))


def rms_norm(x, weight, axes, epsilon: float):
    """``x / sqrt(mean(x^2) + eps) * weight`` over ``axes``."""
    nd = len(x.shape)
    axes = norm_axes(nd, axes)
    _, sq = _moments(x, axes, "T_rms_norm", square_only=True)
    acc = _norm_acc(x.dtype)
    n = _to(count_of(x, axes), acc)
    eps = const_like(epsilon, acc)

    def body(*i):
        v = _to(x[i], acc) * tir_op.rsqrt(sq[_at_units(i, axes)] / n + eps)
        return _to(v * _to(weight[tuple(i[a] for a in axes)], acc), x.dtype)

    return te.compute(x.shape, body, name="T_rms_norm", varargs_names=ax_names(nd))


def group_norm(x, gamma, beta, num_groups: int, channel_axis: int, axes, epsilon: float,
               center: bool = True, scale: bool = True):
    """Normalization over each group of ``channels / num_groups`` channels and ``axes``."""
    nd = len(x.shape)
    c_ax = channel_axis % nd
    axes = norm_axes(nd, axes)
    c = x.shape[c_ax]
    cg = _simplify(E.FloorDiv(c, _i64(num_groups)))
    # view: channel split into (group, channel-in-group)
    gshape = []
    for d in range(nd):
        if d == c_ax:
            gshape += [_i64(num_groups), cg]
        else:
            gshape.append(x.shape[d])
    xg = te.compute(gshape, lambda *i: x[tuple(
        i[d] * cg + i[d + 1] if d == c_ax else (i[d + 1] if d > c_ax else i[d])
        for d in range(nd))], name="T_reshape", varargs_names=ax_names(len(gshape)))
    red = [c_ax + 1] + [a + 1 if a > c_ax else a for a in axes]
    s, sq = _moments(xg, red, "T_group_norm")
    acc = _norm_acc(x.dtype)
    n = _to(count_of(xg, red), acc)
    eps = const_like(epsilon, acc)

    def body(*i):
        gi = []
        for d in range(nd):
            if d == c_ax:
                gi += [E.FloorDiv(i[d], cg), E.FloorMod(i[d], cg)]
            else:
                gi.append(i[d])
        u = _at_units(tuple(gi), red)
        mean = s[u] / n  # of the values shifted by the group's first, xg[u]
        var = sq[u] / n - mean * mean
        v = (_to(x[i], acc) - _to(xg[u], acc) - mean) * tir_op.rsqrt(var + eps)
        if scale and gamma is not None:
            v = v * _to(gamma[(i[c_ax],)], acc)
        if center and beta is not None:
            v = v + _to(beta[(i[c_ax],)], acc)
        return _to(v, x.dtype)

    return te.compute(x.shape, body, name="T_group_norm", varargs_names=ax_names(nd))


def batch_norm(x, gamma, beta, mean, var, axis: int, epsilon: float, center: bool = True,
               scale: bool = True):
    """Inference batch norm with the moving statistics; returns (out, mean, var) as Relax's
    ``batch_norm`` does (the statistics pass through)."""
    nd = len(x.shape)
    axis = axis % nd
    eps = const_like(epsilon, x.dtype)

    def body(*i):
        c = (i[axis],)
        v = (x[i] - mean[c]) * tir_op.rsqrt(var[c] + eps)
        if scale:
            v = v * gamma[c]
        if center:
            v = v + beta[c]
        return v

    out = te.compute(x.shape, body, name="T_batch_norm", varargs_names=ax_names(nd))
    m = te.compute(mean.shape, lambda i: mean[i], name="T_moving_mean")
    v = te.compute(var.shape, lambda i: var[i], name="T_moving_var")
    return [out, m, v]


def batch_norm_affine(x, scale, shift, mean, var, axis: int):
    """Inference batch norm whose statistics are folded into a per-channel ``scale`` and
    ``shift`` (``x * scale + shift``: a multiply-add an element, where ``batch_norm`` takes a
    subtract, a reciprocal square root and two more operations); returns (out, mean, var) as
    ``batch_norm`` does."""
    nd = len(x.shape)
    axis = axis % nd
    out = te.compute(x.shape, lambda *i: x[i] * scale[(i[axis],)] + shift[(i[axis],)],
                     name="T_batch_norm", varargs_names=ax_names(nd))
    m = te.compute(mean.shape, lambda i: mean[i], name="T_moving_mean")
    v = te.compute(var.shape, lambda i: var[i], name="T_moving_var")
    return [out, m, v]


# ------------------------------------------------------------------ activations
def gelu(x):
    """``0.5 * x * (1 + erf(x / sqrt(2)))``."""
    half, one = const_like(0.5, x.dtype), const_like(1, x.dtype)
    r = const_like(1 / math.sqrt(2), x.dtype)
    return te.compute(x.shape, lambda *i: half * x[i] * (one + tir_op.erf(x[i] * r)),
                      name="T_gelu", varargs_names=ax_names(len(x.shape)))


def gelu_tanh(x):
    """``0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))``."""
    half, one = const_like(0.5, x.dtype), const_like(1, x.dtype)
    c = const_like(math.sqrt(2 / math.pi), x.dtype)
    k = const_like(0.044715, x.dtype)
    return te.compute(x.shape, lambda *i: half * x[i] * (
        one + tir_op.tanh(c * (x[i] + k * x[i] * x[i] * x[i]))), name="T_gelu_tanh",
        varargs_names=ax_names(len(x.shape)))


def silu(x):
    """``x * sigmoid(x)``."""
    return te.compute(x.shape, lambda *i: x[i] * tir_op.sigmoid(x[i]), name="T_silu",
                      varargs_names=ax_names(len(x.shape)))


def relu6(x):
    return te.compute(x.shape, lambda *i: E.Min(E.Max(x[i], const_like(0, x.dtype)),
                                                const_like(6, x.dtype)), name="compute")


def leaky_relu(x, alpha: float):
    a = const_like(alpha, x.dtype)
    return te.compute(x.shape, lambda *i: E.Select(x[i] > const_like(0, x.dtype), x[i],
                                                   x[i] * a), name="compute")


# ------------------------------------------------------------------ attention
def attention(q, k, v, bias=None, scale=None, causal_mask=None, window_size=None):
    """Multi-head attention over (batch, seq, heads, dim): ``softmax(q k^T * scale + bias,
    masked) v``."""
    b, s, h, d = q.shape
    skv = k.shape[1]
    dv = v.shape[3]
    sc = const_like(scale if scale is not None else 1.0, q.dtype)
    if scale is None:
        sc = const_like(1, q.dtype) / tir_op.sqrt(_to(d, q.dtype))
    r = te.reduce_axis((_zero(d), d), name="k")
    logits = te.compute((b, h, s, skv), lambda ib, ih, i, j: te.sum(
        q[ib, i, ih, r] * k[ib, j, ih, r], axis=r), name="T_batch_matmul_NT")

    def masked(ib, ih, i, j):
        val = logits[ib, ih, i, j] * sc
        if bias is not None:
            bs = bias.shape
            idx = [E.IntImm("int64", 0) if is_one(bs[-4 + p]) else (ib, ih, i, j)[p]
                   for p in range(4)] if len(bs) == 4 else [i, j]
            val = val + bias[tuple(idx)]
        keep = None
        if causal_mask == "TopLeft":
            keep = j <= i
        elif causal_mask == "BottomRight":
            keep = j <= i + (skv - s)
        if window_size is not None:
            near = j > i - int(window_size) if causal_mask != "BottomRight" else \
                j > i + (skv - s) - int(window_size)
            keep = near if keep is None else E.And(keep, near)
        if keep is not None:
            val = E.Select(keep, val, tir_op.min_value(q.dtype))
        return val

    scored = te.compute((b, h, s, skv), masked, name="T_scores")
    probs = softmax(scored, 3)
    r2 = te.reduce_axis((_zero(skv), skv), name="k")
    return te.compute((b, s, h, dv), lambda ib, i, ih, j: te.sum(
        probs[ib, ih, i, r2] * v[ib, r2, ih, j], axis=r2), name="T_attention")

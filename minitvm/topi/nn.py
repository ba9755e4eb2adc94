"""Computes of the neural-network operators: dense/matmul, conv2d, global pooling (the window
and adaptive pools are in ``pooling``), softmax, bias_add.

Heavy ops carry a ``tag`` (``dense``, ``batch_matmul``, ``conv2d_nchw``) and their parameters in
the compute's ``attrs``, so the scheduler can route them to a GEMM (BLAS or generated) instead of
lowering the plain reduction.
"""

from __future__ import annotations

from .. import te
from ..tir import expr as E
from ..tir import op as tir_op
from .utils import compute, dims, fast_exp, ieee_max, out_dims, out_tensor_types
from .utils import i32 as _i


def _acc(x, dtype):
    return x if x.dtype == dtype else E.Cast(dtype, x)


@compute("nn.bias_add")
def _bias_add(attrs, inputs, out_type):
    shape = out_dims(out_tensor_types(out_type)[0])
    x, b = inputs
    axis = attrs.axis + len(shape) if attrs.axis < 0 else attrs.axis
    return [te.compute(shape, lambda *i: x[i] + b[i[axis]], name="bias_add")]


@compute("nn.dense")
def _dense(attrs, inputs, out_type):
    t = out_tensor_types(out_type)[0]
    shape = out_dims(t)
    x, w = inputs
    k = dims(x)[-1]
    r = te.reduce_axis((0, k), name="k")
    lead = len(shape) - 1
    return [te.compute(shape, lambda *i: te.sum(_acc(x[(*i[:lead], r)], t.dtype) *
                                                _acc(w[i[lead], r], t.dtype), axis=r),
                       name="dense", tag="dense",
                       attrs={"transpose_b": True, "operands": (x, w)})]


@compute("nn.matmul")
def _matmul(attrs, inputs, out_type):
    t = out_tensor_types(out_type)[0]
    shape = out_dims(t)
    a, b = inputs
    ta, tb = bool(attrs.transpose_a), bool(attrs.transpose_b)
    k = dims(a)[0] if ta else dims(a)[-1]
    r = te.reduce_axis((0, k), name="k")

    def body(i, j):
        av = a[r, i] if ta else a[i, r]
        bv = b[j, r] if tb else b[r, j]
        return te.sum(_acc(av, t.dtype) * _acc(bv, t.dtype), axis=r)

    if len(shape) != 2:
        raise ValueError("nn.matmul is lowered natively for 2-D operands only")
    return [te.compute(shape, body, name="matmul", tag="matmul",
                       attrs={"transpose_a": ta, "transpose_b": tb, "operands": (a, b)})]


@compute("nn.batch_matmul")
def _batch_matmul(attrs, inputs, out_type):
    t = out_tensor_types(out_type)[0]
    shape = out_dims(t)
    a, b = inputs
    ta, tb = bool(attrs.transpose_a), bool(attrs.transpose_b)
    k = dims(a)[1] if ta else dims(a)[2]
    r = te.reduce_axis((0, k), name="k")
    ab, bb = dims(a)[0], dims(b)[0]

    def body(n, i, j):
        na = n if ab != 1 else _i(0)
        nb = n if bb != 1 else _i(0)
        av = a[na, r, i] if ta else a[na, i, r]
        bv = b[nb, j, r] if tb else b[nb, r, j]
        return te.sum(_acc(av, t.dtype) * _acc(bv, t.dtype), axis=r)

    return [te.compute(shape, body, name="batch_matmul", tag="batch_matmul",
                       attrs={"transpose_a": ta, "transpose_b": tb, "operands": (a, b)})]


def _pads(padding, nd=2):
    p = list(padding)
    if len(p) == 1:
        p = p * (2 * nd)
    elif len(p) == nd:
        p = p + p
    return p  # top, left, bottom, right


def padded_load(x, idx, hw_axes, sizes):
    """``x[idx]`` where the spatial indices may fall outside: zero there (loads stay in bounds)."""
    conds, fixed = [], list(idx)
    for ax, n in zip(hw_axes, sizes):
        j = idx[ax]
        conds.append(E.And(j >= 0, j < n))
        fixed[ax] = E.Max(E.Min(j, _i(n - 1)), _i(0))
    c = E.And(conds[0], conds[1]) if len(conds) == 2 else conds[0]
    return c, x[tuple(fixed)]


@compute("nn.conv2d")
def _conv2d(attrs, inputs, out_type):
    t = out_tensor_types(out_type)[0]
    shape = out_dims(t)
    x, w = inputs
    if attrs.data_layout != "NCHW" or attrs.kernel_layout != "OIHW":
        raise ValueError("conv2d is lowered natively for NCHW/OIHW only")
    n, c, h, wd = dims(x)
    o, cg, kh, kw = dims(w)
    groups = int(attrs.groups)
    og = o // groups
    sh, sw = attrs.strides
    dh, dw = attrs.dilation
    pt, pl, _, _ = _pads(attrs.padding)
    rc = te.reduce_axis((0, cg), name="rc")
    ry = te.reduce_axis((0, kh), name="ry")
    rx = te.reduce_axis((0, kw), name="rx")
    padded = any(_pads(attrs.padding))

    def body(b, oc, y, xx):
        ic = (oc // og) * cg + rc if groups > 1 else rc
        iy = y * sh + ry * dh - pt
        ix = xx * sw + rx * dw - pl
        if padded:
            cond, v = padded_load(x, (b, ic, iy, ix), (2, 3), (h, wd))
            v = E.Select(cond, v, E.const(0, x.dtype))
        else:
            v = x[b, ic, iy, ix]
        return te.sum(_acc(v, t.dtype) * _acc(w[oc, rc, ry, rx], t.dtype), axis=[rc, ry, rx])

    info = {"strides": (sh, sw), "dilation": (dh, dw), "padding": tuple(_pads(attrs.padding)),
            "groups": groups, "operands": (x, w)}
    return [te.compute(shape, body, name="conv2d", tag="conv2d_nchw", attrs=info)]


# nn.max_pool1d/2d, nn.avg_pool1d/2d and the adaptive pools: topi/pooling.py
from . import pooling  # noqa: E402,F401


def _global_pool(kind):
    def fcompute(attrs, inputs, out_type):
        t = out_tensor_types(out_type)[0]
        shape = out_dims(t)
        x = inputs[0]
        if attrs.layout != "NCHW":
            raise ValueError("global pooling is lowered natively for NCHW only")
        _, _, h, wd = dims(x)
        ry = te.reduce_axis((0, h), name="ry")
        rx = te.reduce_axis((0, wd), name="rx")
        red = ieee_max if kind == "max" else te.sum
        s = te.compute(shape, lambda b, c, y, xx: red(x[b, c, ry, rx], axis=[ry, rx]),
                       name=f"global_{kind}_pool")
        if kind == "max":
            return [s]
        # (an integer mean divides by an integer count, truncating as the reference does)
        if not isinstance(h * wd, int):  # (symbolic sizes: their product, converted)
            count = E.Cast(t.dtype, h * wd)
        elif t.dtype.startswith(("float", "bfloat")):
            count = E.FloatImm(t.dtype, float(h * wd))
        else:
            count = E.IntImm(t.dtype, h * wd)
        return [te.compute(shape, lambda b, c, y, xx: s[b, c, y, xx] / count,
                           name="global_avg_pool2d")]

    return fcompute


compute("nn.global_avg_pool2d")(_global_pool("avg"))
compute("nn.global_max_pool2d")(_global_pool("max"))


def _softmax_parts(attrs, inputs, out_type, exp=None):
    t = out_tensor_types(out_type)[0]
    shape = out_dims(t)
    x = inputs[0]
    nd = len(shape)
    axis = attrs.axis + nd if attrs.axis < 0 else attrs.axis
    rshape = tuple(1 if d == axis else shape[d] for d in range(nd))
    k1 = te.reduce_axis((0, shape[axis]), name="k")
    k2 = te.reduce_axis((0, shape[axis]), name="k")

    def at(i, k):
        return tuple(k if d == axis else i[d] for d in range(nd))

    def red_idx(i):
        return tuple(_i(0) if d == axis else i[d] for d in range(nd))

    mx = te.compute(rshape, lambda *i: te.max(x[at(i, k1)], axis=k1), name="softmax_max")
    exp = exp or tir_op.exp  # IEEE exp (inf/nan propagate); fast_softmax passes fast_exp
    ex = te.compute(rshape, lambda *i: te.sum(exp(x[at(i, k2)] - mx[i]), axis=k2),
                    name="softmax_sum")
    return shape, x, mx, ex, red_idx


def _softmax_with(exp):
    def fcompute(attrs, inputs, out_type):
        shape, x, mx, ex, red_idx = _softmax_parts(attrs, inputs, out_type, exp)
        one = E.FloatImm(x.dtype, 1.0)
        inv = te.compute(dims(ex), lambda *i: one / ex[i], name="softmax_inv")
        return [te.compute(shape, lambda *i: exp(x[i] - mx[red_idx(i)]) * inv[red_idx(i)],
                           name="softmax")]

    return fcompute


_softmax = compute("nn.softmax")(_softmax_with(tir_op.exp))
compute("nn.fast_softmax")(_softmax_with(fast_exp))


@compute("nn.log_softmax")
def _log_softmax(attrs, inputs, out_type):
    shape, x, mx, ex, red_idx = _softmax_parts(attrs, inputs, out_type)
    lg = te.compute(dims(ex), lambda *i: tir_op.log(ex[i]), name="log_softmax_log")
    return [te.compute(shape, lambda *i: x[i] - mx[red_idx(i)] - lg[red_idx(i)],
                       name="log_softmax")]


@compute("nn.prelu")
def _prelu(attrs, inputs, out_type):
    shape = out_dims(out_tensor_types(out_type)[0])
    x, a = inputs
    axis = attrs.axis + len(shape) if attrs.axis < 0 else attrs.axis
    zero = E.const(0, x.dtype)
    return [te.compute(shape, lambda *i: E.Select(x[i] > zero, x[i], x[i] * a[i[axis]]),
                       name="prelu")]


@compute("nn.dropout")
def _dropout(attrs, inputs, out_type):
    ts = out_tensor_types(out_type)
    x = inputs[0]
    shape = out_dims(ts[0])
    out = te.compute(shape, lambda *i: x[i], name="dropout")
    if len(ts) == 1:
        return [out]
    mask = te.compute(out_dims(ts[1]), lambda *i: E.FloatImm(ts[1].dtype, 1.0),
                      name="dropout_mask")
    return [out, mask]


# TVM's te-level ``topi.nn`` API (te tensors in and out, symbolic shapes; ``topi.nn_te``), as
# custom legalizations write ``bb.call_te(topi.nn.relu, x)``
from .manipulation import pad  # noqa: E402,F401
from .math import relu  # noqa: E402,F401
from .nn_te import (  # noqa: E402,F401
    adaptive_avg_pool2d,
    attention,
    batch_norm,
    gelu,
    group_norm,
    layer_norm,
    leaky_relu,
    log_softmax,
    relu6,
    rms_norm,
    silu,
    softmax,
)


# ------------------------------------------------------------------ graph-level layout hooks
def _keep_op(attrs, inputs, tinfos, out_type):
    """No rewrite (None): the op stays as it is, TVM's default where a target has no rule."""
    return None


def _layout_hook(name: str):
    from ..target.generic_func import GenericFunc

    return GenericFunc(name, _keep_op)


# TVM's ``topi.nn.conv2d_alter_layout`` / ``dense_alter_layout``: dispatched on the current
# target's keys; topi.x86 registers its rules for "cpu"
conv2d_alter_layout = _layout_hook("conv2d_alter_layout")
dense_alter_layout = _layout_hook("dense_alter_layout")


def _no_legalization(attrs, inputs, types):
    """No rewrite (None): TVM's default ``conv2d_legalize`` where a target has no rule."""
    return None


# TVM's ``topi.nn.conv2d_legalize`` (Legalize's nn.conv2d hook): topi.arm_cpu registers its rule
conv2d_legalize = _layout_hook("conv2d_legalize")
conv2d_legalize.set_default(_no_legalization, allow_override=True)


@compute("nn.nll_loss")
def _nll_loss(attrs, inputs, out_type):
    """Negative log likelihood of the targets' classes (dim 1), weighted, ``ignore_index``
    skipped, reduced by ``mean`` (over the kept weight), ``sum`` or ``none``."""
    from .transform_extra import nll_loss

    pred, targets, weights = inputs
    return [nll_loss(pred, targets, weights, str(attrs.reduction), int(attrs.ignore_index))]

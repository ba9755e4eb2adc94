"""ONNX ops the Relax importer converts beyond the core set: gathers and scatters, TopK,
OneHot / Hardmax, DepthToSpace / SpaceToDepth, CastLike, bit shifts, the rarer activations,
ReduceLogSum, and the normalizations and (de)quantization of exported real-world models."""

from __future__ import annotations

import numpy as np

from .... import tir
from ....frontend_common import onnx_model as _om
from ....frontend_common.bit_shift import shift
from ....frontend_common.fold_plan import onnx_col2im_geometry
from ....frontend_common.onnx_finite import quantizes_finite, reciprocal_scale
from ....frontend_common.onnx_quant import (
    NAN_QUANTIZES_TO,
    QRANGE,
    UNKNOWN,
    dequantized_weight_scale,
    dequantized_zero_point_weight,
    fake_quant_bounds,
    scalar_qparams,
)
from ....frontend_common.scatter_plan import identity, plan_scatter
from ....ir.prim_expr import PrimExpr
from ... import op as _op
from ...expr import TupleGetItem, const
from ..fold import col2im
from .context import Context, onnx_dtype, register
from .ops_math import reduce_axes
from .qdq_softmax import quantized_softmax
from .qdq_vnni import remember_activation


def _scalar(ctx: Context, x, value: float):
    """``value`` as a constant of ``x``'s dtype (a double stays double)."""
    return const(np.array(value, dtype=ctx.dtype(x)), ctx.dtype(x))


def _wrap_negative(ctx: Context, idx, bound):
    """Indices with negative entries counted from ``bound`` (ONNX allows negative indices)."""
    zero = const(np.array(0, dtype=ctx.dtype(idx)))
    b = bound if not isinstance(bound, int) else const(np.array(bound, dtype=ctx.dtype(idx)))
    return _op.where(_op.less(idx, zero), _op.add(idx, b), idx)


@register("CastLike")
def _cast_like(ctx: Context, ins, attrs):
    x, dtype = ctx.expr(ins[0]), ctx.dtype(ins[1])
    return x if ctx.dtype(x) == dtype else ctx.emit(_op.astype(x, dtype))


@register("GatherElements")
def _gather_elements(ctx: Context, ins, attrs):
    x, idx = ctx.expr(ins[0]), ctx.expr(ins[1])
    axis = _om.axis_attr(attrs.get("axis", 0), ctx.ndim(x))
    dim = ctx.shape(x)[axis]
    if isinstance(dim, int):
        idx = _wrap_negative(ctx, idx, dim)
    return ctx.emit(_op.gather_elements(x, idx, axis))


@register("GatherND")
def _gather_nd(ctx: Context, ins, attrs):
    x, idx = ctx.expr(ins[0]), ctx.expr(ins[1])
    return ctx.emit(_op.gather_nd(x, idx, int(attrs.get("batch_dims", 0))))


_SCATTER_REDUCTION = {"none": "update", "add": "add", "mul": "mul", "max": "max", "min": "min"}


def _reduction(ctx: Context, attrs) -> str:
    r = attrs.get("reduction", "none")
    if r not in _SCATTER_REDUCTION:
        raise ctx.fail(f"reduction {r!r} is not supported (none, add, mul, max, min are)")
    return _SCATTER_REDUCTION[r]


_REDUCERS = {"add": _op.sum, "mul": _op.prod, "max": _op.max, "min": _op.min}
_COMBINE = {"add": _op.add, "mul": _op.multiply, "max": _op.maximum, "min": _op.minimum}


def _scatter_gathered(ctx: Context, x, upd, axis: int, red: str, plan, shape):
    """A scatter by a known index as a gather and a reduction (``scatter_plan``)."""
    dt = ctx.dtype(x)
    pad_shape = list(shape)
    pad_shape[axis] = 1
    fill = 0 if red == "update" else identity(red, dt)
    src = ctx.emit(_op.concat([upd, const(np.full(pad_shape, fill, dt), dt)], axis))
    g = ctx.emit(_op.take(src, const(plan.table.astype("int64")), axis=axis))
    if red == "update":
        hit = plan.hit.reshape([shape[axis] if d == axis else 1 for d in range(len(shape))])
        return ctx.emit(_op.where(const(hit), _op.squeeze(g, [axis + 1]), x))
    return ctx.emit(_COMBINE[red](x, _REDUCERS[red](g, axis=axis + 1)))


def _bool_reduced(ctx: Context, reduce, x, values, red: str):
    """``reduce(x, values)`` (an accumulating scatter) of a bool ``x`` done in int32 and read
    back as ``!= 0``: bool's add and max are or, its mul and min and (in bool the kernels add
    in one bit, True + True was False); ``reduce`` as is otherwise."""
    if ctx.dtype(x) != "bool" or red == "update":
        return reduce(x, values)
    out = reduce(ctx.emit(_op.astype(x, "int32")), ctx.emit(_op.astype(values, "int32")))
    return ctx.emit(_op.not_equal(out, const(np.array(0, "int32"))))


@register("ScatterElements", "Scatter")
def _scatter_elements(ctx: Context, ins, attrs):
    x, idx, upd = ctx.expr(ins[0]), ctx.expr(ins[1]), ctx.expr(ins[2])
    return _bool_reduced(ctx, lambda a, b: _scatter_elements_of(ctx, ins, attrs, a, idx, b),
                         x, upd, _reduction(ctx, attrs))


def _scatter_elements_of(ctx: Context, ins, attrs, x, idx, upd):
    axis = _om.axis_attr(attrs.get("axis", 0), ctx.ndim(x))
    known = ctx.known(ins[1])
    shape = ctx.shape(x)
    if known is not None and known.dtype != object and all(isinstance(d, int) for d in shape) \
            and tuple(ctx.shape(upd)) == tuple(known.shape):
        red = _reduction(ctx, attrs)
        plan = plan_scatter(known, shape, axis, red)
        if plan is not None:
            return _scatter_gathered(ctx, x, upd, axis, red, plan, shape)
    dim = ctx.shape(x)[axis]
    if isinstance(dim, int):
        idx = _wrap_negative(ctx, idx, dim)
    return ctx.emit(_op.scatter_elements(x, idx, upd, axis, _reduction(ctx, attrs)))


@register("ScatterND")
def _scatter_nd(ctx: Context, ins, attrs):
    x, idx, upd = ctx.expr(ins[0]), ctx.expr(ins[1]), ctx.expr(ins[2])
    red = _reduction(ctx, attrs)
    return _bool_reduced(ctx, lambda a, b: ctx.emit(_op.scatter_nd(a, idx, b, red)), x, upd,
                         red)


@register("TopK")
def _topk(ctx: Context, ins, attrs):
    x = ctx.expr(ins[0])
    if ctx.opset < 10:
        k = int(attrs["k"])
    else:
        k = ctx.ints(ins[1], "TopK's K")[0]
    axis = _om.axis_attr(attrs.get("axis", -1), ctx.ndim(x))
    largest = bool(attrs.get("largest", 1))
    dim = ctx.shape(x)[axis]
    if isinstance(k, PrimExpr):  # (K from the batch: checked at run time, a sort's head)
        ctx.require(tir.all(tir.GE(k, 0), tir.LE(k, dim)),
                    "K={} is outside [0, {}], the size of axis " + str(axis), [k, dim])
        return _sorted_head(ctx, x, k, axis, largest)
    ctx.require(k >= 0 and (k <= dim if isinstance(dim, int) else tir.LE(k, dim)),
                f"K={k} is outside [0, {{}}], the size of axis {axis}", [dim])
    if k == 0:  # (empty outputs, as onnxruntime gives them)
        shape = ctx.shape(x)
        shape[axis] = 0
        return [ctx.emit(_op.zeros(ctx.shape_expr(shape), ctx.dtype(x))),
                ctx.emit(_op.zeros(ctx.shape_expr(shape), "int64"))]
    out = ctx.emit(_op.topk(x, k, axis, "both", largest, "int64"))
    return [ctx.emit(TupleGetItem(out, 0)), ctx.emit(TupleGetItem(out, 1))]


def _sorted_head(ctx: Context, x, k, axis: int, largest: bool) -> list:
    """TopK of a ``k`` known only at run time (a symbolic expression of the batch): the first
    ``k`` of a stable sort (``relax.topk`` takes ``k`` as an integer attribute); equal values
    keep the lower index first, as onnxruntime."""
    order = ctx.emit(_op.argsort(x, axis, largest, "int64"))
    idx = ctx.emit(_op.strided_slice(order, [axis], [0], [k]))
    return [ctx.emit(_op.gather_elements(x, idx, axis)), idx]


@register("OneHot")
def _one_hot(ctx: Context, ins, attrs):
    idx = ctx.expr(ins[0])
    depth = ctx.ints(ins[1], "OneHot's depth")[0]
    vals = np.asarray(ctx.value(ins[2], "OneHot's values")).reshape(-1)
    if ctx.dtype(idx).startswith("float"):
        idx = ctx.emit(_op.astype(idx, "int64"))
    if isinstance(depth, PrimExpr):  # (a depth from the batch: checked at run time)
        ctx.require(tir.GT(depth, 0), "depth {} must be positive", [depth])
        return _one_hot_symbolic(ctx, idx, depth, vals, int(attrs.get("axis", -1)))
    idx = ctx.emit(_wrap_negative(ctx, idx, depth))
    off, on = vals[0].item(), vals[1].item()
    out = ctx.emit(_op.one_hot(idx, on, off, depth, int(attrs.get("axis", -1))))
    if ctx.dtype(out) != str(vals.dtype):
        out = ctx.emit(_op.astype(out, str(vals.dtype)))
    return out


def _one_hot_symbolic(ctx: Context, idx, depth, vals: np.ndarray, axis: int):
    """OneHot to a symbolic ``depth``: ``idx`` (negatives counted from it) compared with
    ``arange(depth)`` on a new ``axis``; ``on`` where equal, else ``off`` (an index outside
    [-depth, depth) matches nothing, as onnxruntime)."""
    nd = ctx.ndim(idx) + 1
    axis %= nd
    d = ctx.emit(_op.astype(ctx.emit(_op.reshape(ctx.expr(np.array([depth], dtype=object)),
                                                 ctx.shape_expr([]))), ctx.dtype(idx)))
    idx = ctx.emit(_wrap_negative(ctx, idx, d))
    shape = [1] * nd
    shape[axis] = depth
    pos = ctx.emit(_op.reshape(_op.arange(0, depth, 1, ctx.dtype(idx)), ctx.shape_expr(shape)))
    hit = ctx.emit(_op.equal(_op.expand_dims(idx, axis), pos))
    on, off = (ctx.expr(np.asarray(v, dtype=vals.dtype)) for v in (vals[1], vals[0]))
    return ctx.emit(_op.where(hit, on, off))


@register("Hardmax")
def _hardmax(ctx: Context, ins, attrs):
    x = ctx.expr(ins[0])
    shape = ctx.shape(x)
    axis = _om.axis_attr(attrs.get("axis", -1 if ctx.opset >= 13 else 1), len(shape),
                        "Hardmax's axis")
    if ctx.opset < 13 and axis != len(shape) - 1:  # coerced to 2-D at axis before opset 13
        rows, cols = 1, 1
        for d in shape[:axis]:
            rows *= d
        for d in shape[axis:]:
            cols *= d
        flat = ctx.emit(_op.reshape(x, ctx.shape_expr([rows, cols])))
        hot = _hardmax_last(ctx, flat, 1, cols)
        return ctx.emit(_op.reshape(hot, ctx.shape_expr(shape)))
    return _hardmax_last(ctx, x, axis, shape[axis])


def _hardmax_last(ctx: Context, x, axis: int, depth):
    if not isinstance(depth, int):
        raise ctx.fail("Hardmax needs a static size along its axis")
    arg = ctx.emit(_op.argmax(x, axis, False))
    hot = ctx.emit(_op.one_hot(arg, 1.0, 0.0, depth, axis))
    return hot if ctx.dtype(hot) == ctx.dtype(x) else ctx.emit(_op.astype(hot, ctx.dtype(x)))


def _blocks(ctx: Context, x, attrs, what: str):
    """(n, c, h, w) and the block size; the batch and spatial dims may be symbolic, the channel
    count, which the rearrangement splits, must be static."""
    shape = ctx.shape(x)
    if len(shape) != 4 or not isinstance(shape[1], int):
        raise ctx.fail(f"{what} needs a 4-D input with a static channel count, got {shape}")
    return shape, int(attrs["blocksize"])


@register("DepthToSpace")
def _depth_to_space(ctx: Context, ins, attrs):
    x = ctx.expr(ins[0])
    (n, c, h, w), b = _blocks(ctx, x, attrs, "DepthToSpace")
    if attrs.get("mode", "DCR") == "DCR":
        t = _op.reshape(x, ctx.shape_expr([n, b, b, c // (b * b), h, w]))
        t = _op.permute_dims(t, [0, 3, 4, 1, 5, 2])
    else:
        t = _op.reshape(x, ctx.shape_expr([n, c // (b * b), b, b, h, w]))
        t = _op.permute_dims(t, [0, 1, 4, 2, 5, 3])
    return ctx.emit(_op.reshape(t, ctx.shape_expr([n, c // (b * b), h * b, w * b])))


@register("SpaceToDepth")
def _space_to_depth(ctx: Context, ins, attrs):
    x = ctx.expr(ins[0])
    (n, c, h, w), b = _blocks(ctx, x, attrs, "SpaceToDepth")
    t = _op.reshape(x, ctx.shape_expr([n, c, h // b, b, w // b, b]))
    if attrs.get("mode", "DCR") == "CRD":  # channel-major output blocks (opset 25)
        t = _op.permute_dims(t, [0, 1, 3, 5, 2, 4])
    else:
        t = _op.permute_dims(t, [0, 3, 5, 1, 2, 4])
    return ctx.emit(_op.reshape(t, ctx.shape_expr([n, c * b * b, h // b, w // b])))


@register("BitShift")
def _bit_shift(ctx: Context, ins, attrs):
    """Amounts outside [0, bits) shift every bit out (``frontend_common.bit_shift``)."""
    x, y = ctx.expr(ins[0]), ctx.expr(ins[1])
    return ctx.emit(shift(_op, x, y, attrs.get("direction", "LEFT") == "LEFT", ctx.dtype(x),
                          ctx.known(ins[1]), lambda v: _scalar(ctx, x, v), ctx.emit))


@register("BitwiseXor")
def _bitwise_xor(ctx: Context, ins, attrs):
    return ctx.emit(_op.bitwise_xor(ctx.expr(ins[0]), ctx.expr(ins[1])))


@register("BitwiseNot")
def _bitwise_not(ctx: Context, ins, attrs):
    return ctx.emit(_op.bitwise_not(ctx.expr(ins[0])))


@register("Acosh", "Asinh", "Atanh")
def _inverse_hyperbolic(ctx: Context, ins, attrs):
    fn = {"Acosh": _op.acosh, "Asinh": _op.asinh, "Atanh": _op.atanh}[ctx.node.op_type]
    return ctx.emit(fn(ctx.expr(ins[0])))


@register("Celu")
def _celu(ctx: Context, ins, attrs):
    x = ctx.expr(ins[0])
    a = float(attrs.get("alpha", 1.0))
    neg = _op.multiply(_scalar(ctx, x, a),
                       _op.subtract(_op.exp(_op.divide(x, _scalar(ctx, x, a))),
                                    _scalar(ctx, x, 1.0)))
    zero = _scalar(ctx, x, 0.0)
    return ctx.emit(_op.add(_op.maximum(x, zero), _op.minimum(neg, zero)))


@register("Mish")
def _mish(ctx: Context, ins, attrs):
    x = ctx.expr(ins[0])
    sp = _op.log(_op.add(_op.exp(x), _scalar(ctx, x, 1.0)))
    return ctx.emit(_op.multiply(x, _op.tanh(sp)))


@register("Swish")
def _swish(ctx: Context, ins, attrs):
    x = ctx.expr(ins[0])
    alpha = float(attrs.get("alpha", 1.0))
    return ctx.emit(_op.multiply(x, _op.sigmoid(_op.multiply(x, _scalar(ctx, x, alpha)))))


@register("ThresholdedRelu")
def _thresholded_relu(ctx: Context, ins, attrs):
    x = ctx.expr(ins[0])
    alpha = float(attrs.get("alpha", 1.0))
    return ctx.emit(_op.where(_op.greater(x, _scalar(ctx, x, alpha)), x, _scalar(ctx, x, 0.0)))


@register("Shrink")
def _shrink(ctx: Context, ins, attrs):
    x = ctx.expr(ins[0])
    lambd, bias = float(attrs.get("lambd", 0.5)), float(attrs.get("bias", 0.0))
    lo = _op.where(_op.less(x, _scalar(ctx, x, -lambd)), _op.add(x, _scalar(ctx, x, bias)),
                   _scalar(ctx, x, 0.0))
    return ctx.emit(_op.where(_op.greater(x, _scalar(ctx, x, lambd)),
                              _op.subtract(x, _scalar(ctx, x, bias)), lo))


@register("ReduceLogSum")
def _reduce_log_sum(ctx: Context, ins, attrs):
    x = ctx.expr(ins[0])
    keep = bool(attrs.get("keepdims", 1))
    axes, noop = reduce_axes(ctx, ins, attrs)
    if noop:
        return x
    s = ctx.emit(_op.sum(x, axes, keep))
    dt = ctx.dtype(s)
    if dt.startswith("float"):
        return ctx.emit(_op.log(s))
    # (an integer sum's log in float64, truncated back: Relax's log takes floats only)
    return ctx.emit(_op.astype(ctx.emit(_op.log(ctx.emit(_op.astype(s, "float64")))), dt))


@register("GroupNormalization")
def _group_norm(ctx: Context, ins, attrs):
    x, scale, bias = ctx.expr(ins[0]), ctx.expr(ins[1]), ctx.expr(ins[2])
    shape = ctx.shape(x)
    groups = int(attrs["num_groups"])
    eps = float(attrs.get("epsilon", 1e-5))
    c = shape[1]
    if not isinstance(c, int):
        raise ctx.fail("GroupNormalization needs a static channel dim")
    rest = list(shape[2:])
    g = _op.reshape(x, ctx.shape_expr([shape[0], groups, -1]))
    mean = _op.mean(g, [2], True)
    cent = _op.subtract(g, mean)
    var = _op.mean(_op.multiply(cent, cent), [2], True)
    y = _op.divide(cent, _op.sqrt(_op.add(var, _scalar(ctx, x, eps))))
    y = _op.reshape(y, ctx.shape_expr(shape))
    per = [1] * len(rest)
    if ctx.shape(scale)[0] != c:  # opset 18's per-group scale and bias
        scale = _op.repeat(scale, c // groups, 0)
        bias = _op.repeat(bias, c // groups, 0)
    scale = _op.reshape(scale, ctx.shape_expr([c, *per]))
    bias = _op.reshape(bias, ctx.shape_expr([c, *per]))
    return ctx.emit(_op.add(_op.multiply(y, scale), bias))


@register("LpNormalization")
def _lp_norm(ctx: Context, ins, attrs):
    x = ctx.expr(ins[0])
    axis, p = int(attrs.get("axis", -1)), int(attrs.get("p", 2))
    if p == 1:
        n = _op.sum(_op.abs(x), [axis], True)
    elif p == 2:
        n = _op.sqrt(_op.sum(_op.multiply(x, x), [axis], True))
    else:
        raise ctx.fail(f"p={p} is not supported (1 or 2)")
    # a zero norm gives 0 (the spec's 0/0 = 0), not NaN
    zero = _scalar(ctx, x, 0)
    is_zero = _op.equal(n, zero)
    safe = _op.where(is_zero, _scalar(ctx, x, 1), n)
    return ctx.emit(_op.where(is_zero, zero, _op.divide(x, safe)))


@register("MeanVarianceNormalization")
def _mvn(ctx: Context, ins, attrs):
    x = ctx.expr(ins[0])
    axes = [int(a) for a in attrs.get("axes", [0, 2, 3])]
    mean = _op.mean(x, axes, True)
    cent = _op.subtract(x, mean)
    var = _op.mean(_op.multiply(cent, cent), axes, True)
    return ctx.emit(_op.divide(cent, _op.sqrt(_op.add(var, _scalar(ctx, x, 1e-9)))))


def _axis_shape(ctx: Context, param, ndim: int, axis: int, x_shape=None, block: int = 0):
    """A per-axis (1-D) quantization parameter reshaped to broadcast along ``axis``; a
    blocked one (``block`` > 0, one value per ``block`` elements) repeated to ``x_shape``."""
    if block:
        axis = _om.axis_attr(axis, ndim, "the quantization axis")
        d = x_shape[axis % ndim]
        if not isinstance(d, int):
            raise ctx.fail("blocked (de)quantization needs a static blocked axis")
        return _op.take(param, const(np.arange(d, dtype="int64") // block), axis % ndim)
    if ctx.ndim(param) != 1 or ndim == 0:
        return param
    if ctx.shape(param)[0] != 1:  # (one value: a per-tensor parameter, whatever the axis)
        axis = _om.axis_attr(axis, ndim, "the quantization axis")
    shape = [1] * ndim
    shape[axis % ndim] = -1
    return _op.reshape(param, ctx.shape_expr(shape))


def _known_zero(ctx: Context, zp) -> bool:
    """``zp`` is absent or a constant of zeros: adding or subtracting it is skipped, so a
    fused kernel's quantize / dequantize epilogue carries no ``+ 0.0`` (which the code
    generator may not drop: ``-0.0 + 0.0`` is ``+0.0``)."""
    if zp is None:
        return True
    v = ctx.known(zp)
    return v is not None and v.dtype != object and not np.any(v)


_QRANGE = QRANGE


@register("QuantizeLinear")
def _quantize_linear(ctx: Context, ins, attrs):
    x, scale = ctx.expr(ins[0]), ctx.expr(ins[1])
    zp = ctx.expr(ins[2]) if len(ins) > 2 and ins[2] is not None else None
    out_dtype = ctx.dtype(zp) if zp is not None else "uint8"
    if "output_dtype" in attrs and attrs["output_dtype"]:
        out_dtype = onnx_dtype(int(attrs["output_dtype"]))
    if out_dtype not in _QRANGE:
        raise ctx.fail(f"quantizing to {out_dtype} is not supported")
    fused = quantized_softmax(ctx, ins[1], zp, out_dtype)
    if fused is not None:  # (ORT's QDQ softmax: its integer kernel)
        return fused
    shape, bs = ctx.shape(x), int(attrs.get("block_size", 0))
    ndim = len(shape)
    axis = int(attrs.get("axis", 1))
    finite = quantizes_finite(ctx.node, ctx.finite)  # (no NaN select, and a multiply)
    y = _op.round(_scaled(ctx, x, scale, finite,  # (round half to even)
                          lambda s: _axis_shape(ctx, s, ndim, axis, shape, bs)))
    if not _known_zero(ctx, zp):
        y = _op.add(y, _op.astype(_axis_shape(ctx, zp, ndim, axis, shape, bs), ctx.dtype(x)))
    lo, hi = _QRANGE[out_dtype]
    y = ctx.emit(_op.clip(y, float(lo), float(hi)))  # (saturating; a NaN to the lowest)
    if not finite:
        y = _op.where(_op.isnan(y), const(np.array(NAN_QUANTIZES_TO[out_dtype],
                                                    ctx.dtype(x))), y)
    qparams = _scalar_qparams(ctx, ins[1], zp, bs)
    if qparams is not None:  # (a DequantizeLinear of it may skip the 8-bit round trip)
        ctx.quantized[ctx.node.output[0]] = (x, qparams, out_dtype, finite)
    return ctx.emit(_op.astype(y, out_dtype))


def _scaled(ctx: Context, x, scale, finite: bool, shaped):
    """``x / scale`` (``shaped`` makes a scale broadcast along x), as ``x * (1 / scale)`` with
    the reciprocal folded at import where x cannot be NaN (``onnx_finite.reciprocal_scale``)."""
    dt = ctx.dtype(x)
    sv = ctx.known(scale) if finite else None
    r = None if sv is None or sv.dtype == object else reciprocal_scale(sv.astype(dt))
    if r is not None:
        return _op.multiply(x, shaped(ctx.expr(r)))
    return _op.divide(x, _op.astype(shaped(ctx.expr(scale)), dt))


def _scalar_qparams(ctx: Context, scale, zp, bs: int):
    """``onnx_quant.scalar_qparams`` of a scale and zero point (expressions or values)."""
    zv = None if zp is None else ctx.known(zp)
    if zp is not None and (zv is None or zv.dtype == object):
        return None
    sv = ctx.known(scale)
    return None if sv is None or sv.dtype == object else scalar_qparams(sv, zv, bs)


def _fake_quant(ctx: Context, scale, zp, bs: int):
    """``onnx_quant.fake_quant_bounds``' form of the current DequantizeLinear when its input is
    a QuantizeLinear's output with the same scalar scale and zero point, else None."""
    if ctx.node.op_type != "DequantizeLinear":  # (a QLinear op's dequantized inputs)
        return None
    found = ctx.quantized.get(ctx.node.input[0])
    if found is None:
        return None
    x, qparams, q_dtype, finite = found
    bounds = fake_quant_bounds(q_dtype, qparams, _scalar_qparams(ctx, scale, zp, bs))
    if bounds is None or ctx.dtype(x) != "float32":
        return None
    s, lo, hi = (const(np.array(v, "float32")) for v in bounds)
    y = ctx.emit(_op.clip(_op.round(_scaled(ctx, x, np.asarray(bounds[0], "float32"), finite,
                                            lambda v: v)), bounds[1], bounds[2]))
    return ctx.emit(_op.multiply(y if finite else _op.where(_op.isnan(y), lo, y), s))


@register("DequantizeLinear")
def _dequantize_linear(ctx: Context, ins, attrs):
    x, scale = ctx.expr(ins[0]), ctx.expr(ins[1])
    zp = ctx.expr(ins[2]) if len(ins) > 2 and ins[2] is not None else None
    shape, bs = ctx.shape(x), int(attrs.get("block_size", 0))
    ndim = len(shape)
    axis = int(attrs.get("axis", 1))
    zv = None if zp is None else ctx.known(zp)
    s = dequantized_weight_scale(ctx.known(ins[0]), ctx.dtype(x), ctx.known(ins[1]),
                                 UNKNOWN if zp is not None and zv is None else zv, axis, bs)
    if s is not None:  # (a Conv may read the int8 values themselves: ops_nn)
        ctx.int8_weights[ctx.node.output[0]] = (ctx.known(ins[0]), s)
    else:  # (a MatMul's weight with a zero point, uint8: read on VNNI with it)
        found = dequantized_zero_point_weight(ctx.known(ins[0]), ctx.dtype(x), ctx.known(ins[1]),
                                              zv, axis, bs)
        if found is not None:
            ctx.zp_weights[ctx.node.output[0]] = (ctx.known(ins[0]), *found)
    remember_activation(ctx, ins[0], ins[1], ins[2] if zp is not None else None, bs)
    fake = _fake_quant(ctx, scale, zp, bs)
    if fake is not None:  # (a Conv / MatMul may still read x itself)
        return fake
    fdtype = ctx.dtype(scale)
    y = _op.astype(x, "float64" if ctx.dtype(x) == "int32" else fdtype)
    if not _known_zero(ctx, zp):
        y = _op.subtract(y, _op.astype(_axis_shape(ctx, zp, ndim, axis, shape, bs),
                                       "float64" if ctx.dtype(x) == "int32" else fdtype))
    if ctx.dtype(x) == "int32":
        y = _op.astype(y, fdtype)
    return ctx.emit(_op.multiply(y, _axis_shape(ctx, scale, ndim, axis, shape, bs)))


@register("Col2Im")
def _col2im(ctx, ins, attrs):
    """Col2Im (opset 18): ``relax.frontend.fold.col2im``. The columns may be known at import
    time (a fold of ``ones_like`` counting each pixel's overlapping windows, which the exporter
    folds to an initializer): they become a constant first."""
    geometry = onnx_col2im_geometry(ctx.value(ins[1], "Col2Im's image_shape"),
                                    ctx.value(ins[2], "Col2Im's block_shape"), attrs, ctx.fail)
    return col2im(ctx, ctx.expr(ins[0]), *geometry)

"""Elementwise ONNX ops (arithmetic, comparisons, activations, Cast, Clip) and reductions.

Arithmetic on values known at import time (constants, shape arithmetic) is folded here, so
shape computations stay symbolic instead of becoming tensors."""

from __future__ import annotations

import numpy as np

from ....frontend_common import onnx_model as _om
from ....frontend_common.onnx_qsoftmax import note_softmax
from ....ir.prim_expr import IntImm, PrimExpr
from ....ir.structural import structural_equal
from ....tir.expr import Add, FloorDiv, FloorMod, Max, Min, Mul, Var
from ... import op as _op
from ...expr import const
from .context import Context, normalize_known, onnx_dtype, register

_BINARY = {
    "Add": (_op.add, np.add), "Sub": (_op.subtract, np.subtract),
    "Mul": (_op.multiply, np.multiply), "Div": (_op.divide, None),
    "Equal": (_op.equal, np.equal),
    "Less": (_op.less, np.less), "LessOrEqual": (_op.less_equal, np.less_equal),
    "Greater": (_op.greater, np.greater), "GreaterOrEqual": (_op.greater_equal, np.greater_equal),
    "And": (_op.logical_and, np.logical_and), "Or": (_op.logical_or, np.logical_or),
    "Xor": (_op.logical_xor, np.logical_xor), "BitwiseAnd": (_op.bitwise_and, np.bitwise_and),
    "BitwiseOr": (_op.bitwise_or, np.bitwise_or),
}
_SYMBOLIC_OK = {"Add", "Sub", "Mul", "Div"}


def _fold_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype == object or b.dtype == object or (a.dtype.kind in "iu" and b.dtype.kind in "iu"):
        if a.dtype != object and b.dtype != object:
            return (np.trunc(a / b)).astype(np.result_type(a, b))  # ONNX truncates
        return np.floor_divide(a, b)  # symbolic dims are non-negative
    return np.true_divide(a, b).astype(np.result_type(a, b))


# x OP y for a symbolic dimension x (a shape variable: never negative) and a negative integer y
_ABOVE_NEGATIVE = {"Equal": False, "Less": False, "LessOrEqual": False, "Greater": True,
                   "GreaterOrEqual": True}
_MIRRORED = {"Equal": "Equal", "Less": "Greater", "LessOrEqual": "GreaterOrEqual",
             "Greater": "Less", "GreaterOrEqual": "LessOrEqual"}


def _nonnegative(x) -> bool:
    """Is symbolic dim ``x`` provably >= 0: a shape variable, a non-negative constant, or sums,
    products, floor divisions / remainders, minima and maxima of such, or a maximum with a
    non-negative constant (an iterative walk; ``b * 5`` rows of a flattened batch, not
    ``b - 1``)."""
    stack = [x]
    while stack:
        e = stack.pop()
        if isinstance(e, (int, np.integer)):
            if e < 0:
                return False
        elif isinstance(e, IntImm):
            if e.value < 0:
                return False
        elif isinstance(e, Max) and any(isinstance(v, IntImm) and v.value >= 0
                                        for v in (e.a, e.b)):
            continue  # max(anything, c >= 0)
        elif isinstance(e, (Add, Mul, FloorDiv, FloorMod, Min, Max)):
            stack += [e.a, e.b]
        elif not isinstance(e, Var):
            return False
    return True


def _decide(name: str, x, y):
    """``x <name> y`` for known elements where one may be symbolic, or None if undecided: a
    size expression of shape variables is never negative (``batch == -1`` in an exporter's
    ``expand(B, -1, -1)``, ``5 * batch == -1`` in its ``expand_as`` of flattened rows, are
    false), and an expression compares equal to itself."""
    xs, ys = isinstance(x, PrimExpr), isinstance(y, PrimExpr)
    if not xs and not ys:
        return bool(_BINARY[name][1](x, y))
    if xs and ys:
        if structural_equal(x, y):
            return name in ("Equal", "LessOrEqual", "GreaterOrEqual")
        return None
    if ys:
        return _decide(_MIRRORED[name], y, x)
    if isinstance(y, (int, np.integer)) and y < 0 and _nonnegative(x):
        return _ABOVE_NEGATIVE[name]
    return None


def _fold_compare(name: str, a: np.ndarray, b: np.ndarray):
    """An import-time comparison of known values holding symbolic dims (None if some element
    is undecided: the comparison is then emitted)."""
    a, b = np.broadcast_arrays(a.astype(object), b.astype(object))
    out = np.empty(a.shape, dtype=bool)
    for idx in np.ndindex(a.shape):
        r = _decide(name, a[idx], b[idx])
        if r is None:
            return None
        out[idx] = r
    return out


def _binary(name, rop, nfn):
    def convert(ctx: Context, ins, attrs):
        a, b = ctx.known(ins[0]), ctx.known(ins[1])
        if a is not None and b is not None and name in _MIRRORED and \
                (a.dtype == object or b.dtype == object):
            out = _fold_compare(name, a, b)
            if out is not None:
                return normalize_known(out)
        if a is not None and b is not None and (
                name in _SYMBOLIC_OK or (a.dtype != object and b.dtype != object)):
            out = _fold_div(a, b) if name == "Div" else nfn(a, b)
            if out.dtype == object:
                out = np.vectorize(ctx.simplify, otypes=[object])(out)
            elif a.dtype == b.dtype and out.dtype != np.bool_:
                out = out.astype(a.dtype)
            return normalize_known(np.asarray(out))
        x, y = ctx.expr(ins[0]), ctx.expr(ins[1])
        if name == "Div" and ctx.dtype(x).startswith(("int", "uint")):
            return ctx.emit(_op.astype(_op.trunc(_op.divide(
                _op.astype(x, "float64"), _op.astype(y, "float64"))), ctx.dtype(x)))
        if name == "Mod" or rop is None:
            raise ctx.fail(f"{name} is not supported here")
        return ctx.emit(rop(x, y))

    return convert


for _name, (_rop, _nfn) in _BINARY.items():
    register(_name)(_binary(_name, _rop, _nfn))


@register("Mod")
def _mod(ctx: Context, ins, attrs):
    a, b = ctx.known(ins[0]), ctx.known(ins[1])
    if a is not None and b is not None and a.dtype != object and b.dtype != object:
        # folded like the other arithmetic (an exporter's slice ends: Mod of two constants)
        out = np.fmod(a, b) if attrs.get("fmod", 0) else np.mod(a, b)
        return normalize_known(np.asarray(out).astype(np.result_type(a, b)))
    x, y = ctx.expr(ins[0]), ctx.expr(ins[1])
    if attrs.get("fmod", 0):  # C fmod: the sign of the dividend
        if ctx.dtype(x).startswith("float"):
            return ctx.emit(_op.subtract(x, _op.multiply(_op.trunc(_op.divide(x, y)), y)))
        return ctx.emit(_op.mod(x, y))
    return ctx.emit(_op.floor_mod(x, y))  # Python's %: the sign of the divisor


_UNARY = {
    "Relu": _op.nn.relu, "Sigmoid": _op.sigmoid, "Tanh": _op.tanh, "Erf": _op.erf,
    "Exp": _op.exp, "Log": _op.log, "Sqrt": _op.sqrt, "Neg": _op.negative, "Abs": _op.abs,
    "Floor": _op.floor, "Ceil": _op.ceil, "Sin": _op.sin, "Cos": _op.cos, "Tan": _op.tan,
    "Not": _op.logical_not, "Round": _op.round, "Asin": _op.asin,
    "Acos": _op.acos, "Atan": _op.atan, "Sinh": _op.sinh, "Cosh": _op.cosh,
    "IsNaN": _op.isnan,
}
_UNARY_NP = {
    "Neg": np.negative, "Abs": np.abs, "Sqrt": np.sqrt, "Exp": np.exp, "Log": np.log,
    "Floor": np.floor, "Ceil": np.ceil, "Not": np.logical_not,
    "Round": np.round,
}


def _unary(name, rop):
    def convert(ctx: Context, ins, attrs):
        k = ctx.known(ins[0])
        if k is not None and k.dtype != object and name in _UNARY_NP:
            return np.asarray(_UNARY_NP[name](k)).astype(k.dtype)
        return ctx.emit(rop(ctx.expr(ins[0])))

    return convert


for _name, _rop in _UNARY.items():
    register(_name)(_unary(_name, _rop))


def _scalar(ctx: Context, x, value: float):
    """``value`` as a constant of ``x``'s dtype (a double stays double)."""
    return const(np.array(value, dtype=ctx.dtype(x)), ctx.dtype(x))


@register("Sign")
def _sign(ctx: Context, ins, attrs):
    """-1, 0 or 1, as ONNX Runtime's kernels: NaN stays NaN in float32 / float64 (Relax's
    ``sign``, numpy's rule) and is 0 in float16 (ORT computes half by comparisons)."""
    k = ctx.known(ins[0])
    if k is not None and k.dtype != object:
        s = np.sign(k)
        return np.asarray(np.where(np.isnan(k), 0, s) if k.dtype == np.float16 else s
                          ).astype(k.dtype)
    x = ctx.expr(ins[0])
    s = ctx.emit(_op.sign(x))
    if ctx.dtype(x) != "float16":
        return s
    return ctx.emit(_op.where(ctx.emit(_op.isnan(x)), _scalar(ctx, x, 0.0), s))


@register("IsInf")
def _isinf(ctx: Context, ins, attrs):
    x = ctx.expr(ins[0])
    pos, neg = attrs.get("detect_positive", 1), attrs.get("detect_negative", 1)
    inf = _op.isinf(x)
    if pos and neg:
        return ctx.emit(inf)
    if not pos and not neg:
        return ctx.emit(_op.logical_and(inf, _op.logical_not(inf)))
    side = _op.greater if pos else _op.less
    return ctx.emit(_op.logical_and(inf, side(x, _scalar(ctx, x, 0.0))))


@register("Pow")
def _pow(ctx: Context, ins, attrs):
    kx, ky = ctx.known(ins[0]), ctx.known(ins[1])
    if kx is not None and ky is not None and kx.dtype != object and ky.dtype != object:
        return np.asarray(np.power(kx.astype("float64"), ky)).astype(kx.dtype)
    x, y = ctx.expr(ins[0]), ctx.expr(ins[1])
    dt = ctx.dtype(x)
    if ctx.dtype(y) == dt:
        return ctx.emit(_op.power(x, y))
    if dt.startswith("float"):  # the output has the base's type
        return ctx.emit(_op.power(x, _op.astype(y, dt)))
    # an integer base with another exponent type: compute in float64, back to the base's
    return ctx.emit(_op.astype(_op.power(_op.astype(x, "float64"), _op.astype(y, "float64")),
                               dt))


@register("Reciprocal")
def _reciprocal(ctx: Context, ins, attrs):
    x = ctx.expr(ins[0])
    return ctx.emit(_op.divide(_scalar(ctx, x, 1.0), x))


@register("Gelu")
def _gelu(ctx: Context, ins, attrs):
    x = ctx.expr(ins[0])
    if attrs.get("approximate", "none") == "tanh":
        return ctx.emit(_op.nn.gelu_tanh(x))
    return ctx.emit(_op.nn.gelu(x))


@register("LeakyRelu")
def _leaky_relu(ctx: Context, ins, attrs):
    return ctx.emit(_op.nn.leakyrelu(ctx.expr(ins[0]), float(attrs.get("alpha", 0.01))))


@register("Elu")
def _elu(ctx: Context, ins, attrs):
    x = ctx.expr(ins[0])
    alpha = float(attrs.get("alpha", 1.0))
    neg = _op.multiply(_scalar(ctx, x, alpha), _op.subtract(_op.exp(x), _scalar(ctx, x, 1.0)))
    return ctx.emit(_op.where(_op.greater(x, _scalar(ctx, x, 0.0)), x, neg))


@register("HardSigmoid")
def _hard_sigmoid(ctx: Context, ins, attrs):
    x = ctx.expr(ins[0])
    a, b = float(attrs.get("alpha", 0.2)), float(attrs.get("beta", 0.5))
    lin = _op.add(_op.multiply(x, _scalar(ctx, x, a)), _scalar(ctx, x, b))
    return ctx.emit(_op.clip(lin, 0.0, 1.0))


@register("HardSwish")
def _hard_swish(ctx: Context, ins, attrs):
    x = ctx.expr(ins[0])
    gate = _op.clip(_op.add(_op.multiply(x, _scalar(ctx, x, 1 / 6)), _scalar(ctx, x, 0.5)),
                    0.0, 1.0)
    return ctx.emit(_op.multiply(x, gate))


@register("Softplus")
def _softplus(ctx: Context, ins, attrs):
    x = ctx.expr(ins[0])
    return ctx.emit(_op.log(_op.add(_op.exp(x), _scalar(ctx, x, 1.0))))


@register("Clip")
def _clip(ctx: Context, ins, attrs):
    x = ctx.expr(ins[0])
    if ctx.opset < 11:
        lo, hi = attrs.get("min", -np.inf), attrs.get("max", np.inf)
    else:
        lo = ctx.value(ins[1], "Clip's min").item() if len(ins) > 1 and ins[1] is not None \
            else -np.inf
        hi = ctx.value(ins[2], "Clip's max").item() if len(ins) > 2 and ins[2] is not None \
            else np.inf
    if np.isinf(lo) and np.isinf(hi):
        return x
    if np.isinf(lo):
        return ctx.emit(_op.minimum(x, _scalar(ctx, x, hi)))
    if np.isinf(hi):
        return ctx.emit(_op.maximum(x, _scalar(ctx, x, lo)))
    return ctx.emit(_op.clip(x, float(lo), float(hi)))


_VARIADIC_FOLD = {"Max": (np.maximum, Max), "Min": (np.minimum, Min), "Sum": (np.add, None)}


def _fold_variadic(ctx: Context, name: str, values: list) -> np.ndarray:
    """Max / Min / Sum of integer values known at import (shape arithmetic such as the
    exporter's diagonal length ``max(min(rows, cols - offset), 0)``), symbolic dims through
    ``tir`` min / max, simplified."""
    nfn, tnode = _VARIADIC_FOLD[name]
    if all(v.dtype != object for v in values):
        out = values[0]
        for v in values[1:]:
            out = nfn(out, v)
        return normalize_known(np.asarray(out))
    arrays = np.broadcast_arrays(*[v.astype(object) for v in values])
    out = np.empty(arrays[0].shape, dtype=object)
    for idx in np.ndindex(out.shape):
        acc = arrays[0][idx]
        for a in arrays[1:]:
            x, y = acc, a[idx]
            if not isinstance(x, PrimExpr) and not isinstance(y, PrimExpr):
                acc = nfn(x, y)
                continue
            x, y = (e if isinstance(e, PrimExpr) else IntImm("int64", int(e)) for e in (x, y))
            acc = ctx.simplify(x + y if tnode is None else tnode(x, y))
        out[idx] = acc
    return normalize_known(out)


@register("Max", "Min", "Sum", "Mean")
def _variadic(ctx: Context, ins, attrs):
    name = ctx.node.op_type
    known = [ctx.known(v) for v in ins]
    if name != "Mean" and all(k is not None and (k.dtype == object or k.dtype.kind in "iu")
                              for k in known):
        return _fold_variadic(ctx, name, known)
    fn = {"Max": _op.maximum, "Min": _op.minimum}.get(name, _op.add)
    acc = ctx.expr(ins[0])
    for other in ins[1:]:
        acc = fn(acc, ctx.expr(other))
    if ctx.node.op_type == "Mean":
        acc = _op.divide(acc, _scalar(ctx, ctx.expr(ins[0]), float(len(ins))))
    return ctx.emit(acc) if len(ins) > 1 else acc


@register("Identity")
def _identity(ctx: Context, ins, attrs):
    return ins[0]


@register("Cast")
def _cast(ctx: Context, ins, attrs):
    dtype = onnx_dtype(int(attrs["to"]))
    k = ctx.known(ins[0])
    if k is not None and (k.dtype != object or dtype.startswith("int")):
        return k if k.dtype == object else k.astype(dtype)
    x = ctx.expr(ins[0])
    return x if ctx.dtype(x) == dtype else ctx.emit(_op.astype(x, dtype))


@register("Softmax", "LogSoftmax")
def _softmax(ctx: Context, ins, attrs):
    x = ctx.expr(ins[0])
    axis = int(attrs.get("axis", -1 if ctx.opset >= 13 else 1))
    fn = _op.nn.softmax if ctx.node.op_type == "Softmax" else _op.nn.log_softmax
    if ctx.node.op_type == "Softmax":  # (its QuantizeLinear may take ORT's integer form)
        note_softmax(ctx, attrs)
    shape = ctx.shape(x)
    if ctx.opset >= 13 or axis % len(shape) == len(shape) - 1:
        return ctx.emit(fn(x, axis))
    # before opset 13 the input is coerced to 2-D at ``axis`` (the same when axis is the last)
    axis = axis % len(shape)
    flat = _op.reshape(x, ctx.shape_expr([_prod(ctx, shape[:axis]), _prod(ctx, shape[axis:])]))
    return ctx.emit(_op.reshape(fn(flat, 1), ctx.shape_expr(shape)))


def _prod(ctx: Context, dims):
    out = 1
    for d in dims:
        out = out * d
    return ctx.simplify(out)


def _fold_known_reduce(ctx: Context, name: str, v, axes, keep: bool):
    """ReduceProd / ReduceSum of a value known at import (an exporter's ``numel`` is the
    ReduceProd of a Shape), kept known so that a Range or Reshape built on it stays symbolic;
    ReduceMax / ReduceMin only of numbers. None when the value is not known."""
    k = ctx.known(v)
    if k is None or name not in ("ReduceProd", "ReduceSum", "ReduceMax", "ReduceMin"):
        return None
    if k.dtype == object and name in ("ReduceMax", "ReduceMin"):
        return None
    fn = {"ReduceProd": np.prod, "ReduceSum": np.sum, "ReduceMax": np.max,
          "ReduceMin": np.min}[name]
    red = None if axes is None else tuple(a % max(k.ndim, 1) for a in axes)
    out = np.asarray(fn(k, axis=red, keepdims=keep))
    if out.dtype == object:
        out = np.vectorize(ctx.simplify, otypes=[object])(out)
        return normalize_known(out)
    return normalize_known(out.astype(k.dtype))


_REDUCE = {
    "ReduceSum": _op.sum, "ReduceMean": _op.mean, "ReduceMax": _op.max, "ReduceMin": _op.min,
    "ReduceProd": _op.prod,
}


def reduce_axes(ctx: Context, ins, attrs) -> tuple[list[int] | None, bool]:
    """``(axes, noop)`` of a Reduce* node: its axes (an input from opset 13 for ReduceSum, 18
    for the others; an attribute before), None for all of them; ``noop`` when there are none
    and ``noop_with_empty_axes`` makes the node return its input."""
    name = ctx.node.op_type
    if name == "ReduceSum" and ctx.opset >= 13 or ctx.opset >= 18:
        axes = ctx.ints(ins[1], f"{name}'s axes") if len(ins) > 1 and ins[1] is not None \
            else None
    else:
        axes = attrs.get("axes")
    if not axes:
        return None, _om.flag_attr(attrs, "noop_with_empty_axes", 0)
    return [int(a) for a in axes], False


@register(*_REDUCE, "ReduceL1", "ReduceL2", "ReduceSumSquare", "ReduceLogSumExp")
def _reduce(ctx: Context, ins, attrs):
    name = ctx.node.op_type
    x = ctx.expr(ins[0])
    keep = _om.flag_attr(attrs, "keepdims", 1)
    axes, noop = reduce_axes(ctx, ins, attrs)
    if noop:
        return x
    folded = _fold_known_reduce(ctx, name, ins[0], axes, keep)
    if folded is not None:
        return folded
    if name in ("ReduceMax", "ReduceMin", "ReduceLogSumExp"):
        shape = ctx.shape(x)
        red = range(len(shape)) if axes is None else [a % len(shape) for a in axes]
        if all(isinstance(d, int) for d in shape) and any(shape[a] == 0 for a in red):
            # an empty reduction: ONNX's identity value (-inf/+inf, the integer extreme, bool)
            out = [1 if a in red else d for a, d in enumerate(shape)] if keep else \
                [d for a, d in enumerate(shape) if a not in red]
            dt, low = np.dtype(ctx.dtype(x)), name != "ReduceMin"
            fill = (not low) if dt.kind == "b" else (
                (np.iinfo(dt).min if low else np.iinfo(dt).max) if dt.kind in "iu"
                else (-np.inf if low else np.inf))
            return np.full(out, fill, dtype=dt)
    if name == "ReduceL1":
        return ctx.emit(_op.sum(_op.abs(x), axes, keep))
    if name == "ReduceSumSquare":
        return ctx.emit(_op.sum(_op.multiply(x, x), axes, keep))
    if name in ("ReduceL2", "ReduceLogSumExp"):
        dt = ctx.dtype(x)
        if dt.startswith("float"):
            return ctx.emit(_float_reduce(ctx, name, x, axes, keep))
        # (an integer tensor, which ONNX allows: each float function in float64 truncated back
        # to the dtype, as ORT's and Relay's in-dtype exp / log / sqrt: Relax's take floats)
        if name == "ReduceL2":
            out = _float_reduce(ctx, name, ctx.emit(_op.astype(x, "float64")), axes, keep)
            return ctx.emit(_op.astype(ctx.emit(out), dt))

        def trunc(fn, v):
            return ctx.emit(_op.astype(ctx.emit(fn(ctx.emit(_op.astype(v, "float64")))), dt))

        m = ctx.emit(_op.max(x, axes, True))
        s = ctx.emit(_op.sum(trunc(_op.exp, ctx.emit(_op.subtract(x, m))), axes, True))
        out = _op.add(trunc(_op.log, s), m)
        return ctx.emit(out if keep else _op.squeeze(out, axes))
    return ctx.emit(_REDUCE[name](x, axes, keep))


def _float_reduce(ctx: Context, name: str, x, axes, keep: bool):
    """ReduceL2 / ReduceLogSumExp of a float tensor ``x`` (the LSE shifted by its max)."""
    if name == "ReduceL2":
        return _op.sqrt(_op.sum(_op.multiply(x, x), axes, keep))
    m = ctx.emit(_op.max(x, axes, True))
    out = _op.add(_op.log(_op.sum(_op.exp(_op.subtract(x, m)), axes, True)), m)
    return out if keep else _op.squeeze(out, axes if axes is not None else None)


@register("ArgMax", "ArgMin")
def _argmax(ctx: Context, ins, attrs):
    fn = _op.argmax if ctx.node.op_type == "ArgMax" else _op.argmin
    x = ctx.expr(ins[0])
    axis = _om.axis_attr(attrs.get("axis", 0), ctx.ndim(x))
    keep = _om.flag_attr(attrs, "keepdims", 1)
    if not attrs.get("select_last_index", 0):
        return ctx.emit(fn(x, axis, keep))
    # the last index of the extreme: the first one in the flipped input, mapped back
    dim = ctx.shape(x)[axis]
    idx = ctx.emit(fn(ctx.emit(_op.flip(x, axis)), axis, keep))
    last = dim - 1 if isinstance(dim, int) else ctx.simplify(dim - 1)
    return ctx.emit(_op.subtract(ctx.expr(np.array(last, dtype=object)
                                          if not isinstance(last, int)
                                          else np.array(last, "int64"), ctx.dtype(idx)), idx))


@register("PRelu")
def _prelu(ctx: Context, ins, attrs):
    x, slope = ctx.expr(ins[0]), ctx.expr(ins[1])
    return ctx.emit(_op.where(_op.less(x, _scalar(ctx, x, 0.0)), _op.multiply(x, slope), x))


@register("Selu")
def _selu(ctx: Context, ins, attrs):
    x = ctx.expr(ins[0])
    alpha = float(attrs.get("alpha", 1.67326319217681884765625))
    gamma = float(attrs.get("gamma", 1.05070102214813232421875))
    neg = _op.multiply(_scalar(ctx, x, alpha), _op.subtract(_op.exp(x), _scalar(ctx, x, 1.0)))
    body = _op.where(_op.greater(x, _scalar(ctx, x, 0.0)), x, neg)
    return ctx.emit(_op.multiply(body, _scalar(ctx, x, gamma)))


@register("Softsign")
def _softsign(ctx: Context, ins, attrs):
    x = ctx.expr(ins[0])
    return ctx.emit(_op.divide(x, _op.add(_op.abs(x), _scalar(ctx, x, 1.0))))

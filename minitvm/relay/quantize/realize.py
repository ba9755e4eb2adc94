"""QuantizeRealize: replace calibrated simulated_quantize calls by integer arithmetic
(TVM's realize step).

Each value is either float or an integer tensor ``q`` standing for ``q * dom_scale``. A float
value entering a simulated_quantize becomes ``cast(clip(round(x / dom_scale)))`` (constants
fold to integer constants); an integer one is requantized to the new scale — by
``left_shift`` / rounding ``right_shift`` when the ratio is a power of two, in float otherwise —
then clipped and cast to the kind's dtype. conv2d / dense / batch_matmul take ``dtype_input`` /
``dtype_weight`` operands and accumulate in ``dtype_activation`` (scale: the product); multiply
and add work in ``dtype_activation`` (add on a common scale, the finer one); value-moving ops
run on the integers. Values reaching any other op, or the function's result, are dequantized
(``cast(q, float32) * dom_scale``).
"""

from __future__ import annotations

import math

import numpy as np

from ...ir.op import Op
from ..expr import Call, Constant, Function, const
from ..expr_functor import ExprMutator
from ..op import tensor as _t
from .annotate import ANCHORS, IDENTITY_OPS, SQ_NAME, QAnnotateKind, kind2str


class _QInt:
    """An integer value: ``data * dom_scale`` (``dom_scale`` a Python float)."""

    __slots__ = ("data", "scale", "dtype")

    def __init__(self, data, scale: float, dtype: str):
        self.data, self.scale, self.dtype = data, float(scale), dtype


def _scalar(e, what: str) -> float:
    if not isinstance(e, Constant):
        raise ValueError(f"QuantizeRealize: the {what} of a simulated_quantize is not a "
                         "constant; run calibrate first")
    return float(e.data.numpy())


class _Realizer(ExprMutator):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.q: dict = {}  # rewritten expr -> _QInt

    def _float(self, e):
        qi = self.q.get(e)
        if qi is None:
            return e
        return _t.multiply(_t.cast(qi.data, "float32"), const(qi.scale, "float32"))

    def _requantize(self, qi: _QInt, scale: float, out_dtype: str):
        data = qi.data
        if qi.scale == scale:
            return data
        ratio = qi.scale / scale
        shift = math.log2(ratio)
        if shift == int(shift):
            if qi.dtype != self.cfg.dtype_activation:
                data = _t.cast(data, self.cfg.dtype_activation)
            n = int(shift)
            if n > 0:
                return _t.left_shift(data, const(n, self.cfg.dtype_activation))
            if self.cfg.round_for_shift:
                data = _t.add(data, const(1 << (-n - 1), self.cfg.dtype_activation))
            return _t.right_shift(data, const(-n, self.cfg.dtype_activation))
        v = _t.round(_t.multiply(_t.cast(data, "float32"), const(ratio, "float32")))
        return _t.cast(v, self.cfg.dtype_activation)

    def _sq(self, call, x):
        kind = call.attrs.kind
        scale = _scalar(call.args[1], "dom_scale")
        lo, hi = _scalar(call.args[2], "clip_min"), _scalar(call.args[3], "clip_max")
        dtype = getattr(self.cfg, "dtype_" + kind2str(kind))
        qi = self.q.get(x)
        if qi is None:
            if isinstance(x, Constant):
                arr = np.clip(np.round(x.data.numpy() / scale), lo, hi).astype(dtype)
                return const(arr, dtype), _QInt(None, scale, dtype)
            v = _t.round(_t.divide(x, const(scale, "float32")))
        else:
            v = self._requantize(qi, scale, dtype)
        return _t.cast(_t.clip(v, lo, hi), dtype), _QInt(None, scale, dtype)

    def _mark(self, e, qi):
        qi.data = e
        self.q[e] = qi
        return e

    def visit_call(self, call):
        new = super().visit_call(call)
        op = new.op
        name = op.name if isinstance(op, Op) else None
        args = list(new.args)
        cfg = self.cfg
        if name == SQ_NAME:
            if call.attrs.kind == QAnnotateKind.IDENTITY:
                return args[0]
            e, qi = self._sq(new, args[0])
            return self._mark(e, qi)
        qs = [self.q.get(a) for a in args]
        if name in ANCHORS and all(q is not None for q in qs[:2]):
            lhs = qs[0].data if qs[0].dtype == cfg.dtype_input else _t.cast(qs[0].data,
                                                                            cfg.dtype_input)
            rhs = qs[1].data
            attrs = new.attrs
            if "out_dtype" in attrs:
                attrs = attrs.with_fields(out_dtype=cfg.dtype_activation)
            out = Call(op, [lhs, rhs], attrs, new.type_args, new.span)
            return self._mark(out, _QInt(None, qs[0].scale * qs[1].scale,
                                         cfg.dtype_activation))
        if name == "multiply" and all(q is not None for q in qs):
            act = cfg.dtype_activation
            out = _t.multiply(_t.cast(qs[0].data, act), _t.cast(qs[1].data, act))
            return self._mark(out, _QInt(None, qs[0].scale * qs[1].scale, act))
        if name == "add" and all(q is not None for q in qs):
            act = cfg.dtype_activation
            scale = min(qs[0].scale, qs[1].scale)
            out = _t.add(*(_t.cast(self._requantize(q, scale, act), act) for q in qs))
            return self._mark(out, _QInt(None, scale, act))
        if name in IDENTITY_OPS and qs and qs[0] is not None:
            q0 = qs[0]
            attrs = new.attrs
            x = q0.data
            if name == "clip":
                lo = round(float(attrs.a_min) / q0.scale)
                hi = round(float(attrs.a_max) / q0.scale)
                return self._mark(_t.clip(x, lo, hi), _QInt(None, q0.scale, q0.dtype))
            dtype = q0.dtype
            if name == "nn.avg_pool2d":
                x, dtype = _t.cast(x, cfg.dtype_activation), cfg.dtype_activation
            out = Call(op, [x, *args[1:]], attrs, new.type_args, new.span)
            return self._mark(out, _QInt(None, q0.scale, dtype))
        fixed = [self._float(a) for a in args]
        if all(a is b for a, b in zip(fixed, args, strict=True)):
            return new
        return Call(op, fixed, new.attrs, new.type_args, new.span)

    def visit_tuple(self, tup):
        new = super().visit_tuple(tup)
        return new.with_fields([self._float(f) for f in new.fields])


def realize_function(func: Function, cfg) -> Function:
    """The realize step on one calibrated function."""
    r = _Realizer(cfg)
    body = r._float(r.visit(func.body))
    return Function(func.params, body, func.ret_type, func.type_params, func.attrs, func.span)


def realize():
    """The QuantizeRealize pass (module pass, opt 1): simulated quantization to integers."""
    from ...transform.decorators import module_pass
    from .quantize import current_qconfig

    def transform(mod, ctx):
        out = mod.shallow_copy()
        out["main"] = realize_function(mod["main"], current_qconfig())
        return out

    return module_pass(transform, opt_level=1, name="QuantizeRealize")


__all__ = ["realize", "realize_function"]

"""QConfig and the quantize flow (see the package docstring)."""

from __future__ import annotations

import threading

import numpy as np

from ...ir.module import IRModule
from ...ir.op import Op
from ...transform.sequential import Sequential
from ..expr import Constant, Function, const
from ..expr_functor import ExprMutator

_FIELDS = {
    "nbit_input": 8, "nbit_weight": 8, "nbit_activation": 32, "dtype_input": "int8",
    "dtype_weight": "int8", "dtype_activation": "int32", "calibrate_mode": "global_scale",
    "global_scale": 8.0, "weight_scale": "power2", "skip_dense_layer": True,
    "skip_conv_layers": [0], "do_simulation": False, "round_for_shift": True,
    "debug_enabled_ops": None, "rounding": "UPWARD", "calibrate_chunk_by": -1,
    "partition_conversions": "disabled",
}


class QConfig:
    """Quantization settings with TVM's field names and defaults; a context manager."""

    def __init__(self, **kwargs):
        unknown = sorted(set(kwargs) - set(_FIELDS))
        if unknown:
            raise ValueError(f"qconfig: unknown option(s) {', '.join(unknown)}; known: "
                             f"{', '.join(sorted(_FIELDS))}")
        for k, v in _FIELDS.items():
            setattr(self, k, kwargs.get(k, v))

    def __enter__(self):
        _STACK.items.append(self)
        return self

    def __exit__(self, *exc):
        _STACK.items.pop()

    def __repr__(self):
        return "qconfig(" + ", ".join(f"{k}={getattr(self, k)!r}" for k in _FIELDS) + ")"


class _Stack(threading.local):
    def __init__(self):
        self.items: list[QConfig] = []


_STACK = _Stack()
_DEFAULT = QConfig()


def qconfig(**kwargs) -> QConfig:
    """A QConfig (use ``with relay.quantize.qconfig(...):``)."""
    return QConfig(**kwargs)


def current_qconfig() -> QConfig:
    return _STACK.items[-1] if _STACK.items else _DEFAULT


def _power2_scale(w: np.ndarray, nbit: int) -> float:
    peak = float(np.max(np.abs(w))) if w.size else 0.0
    if peak == 0.0:
        return 1.0
    return 2.0 ** np.ceil(np.log2(peak)) / (2 ** (nbit - 1))


class _Realize(ExprMutator):
    """conv2d/dense with a constant weight -> dequantize(qnn op(quantize(x), quantize(w)))."""

    def __init__(self, cfg: QConfig):
        super().__init__()
        self.cfg = cfg
        self.conv_index = 0
        self.count = 0

    def visit_call(self, call):
        new = super().visit_call(call)
        op = call.op
        if not isinstance(op, Op) or op.name not in ("nn.conv2d", "nn.dense"):
            return new
        if op.name == "nn.conv2d":
            index = self.conv_index
            self.conv_index += 1
            if index in (self.cfg.skip_conv_layers or []):
                return new
        elif self.cfg.skip_dense_layer:
            return new
        weight = new.args[1]
        if not isinstance(weight, Constant) or str(weight.data.dtype) != "float32":
            return new
        return self._quantized(op.name, new)

    def _quantized(self, name, call):
        from ..qnn import op as qnn

        cfg = self.cfg
        w = call.args[1].data.numpy()
        ws = _power2_scale(w, cfg.nbit_weight)
        xs = float(cfg.global_scale) / (2 ** (cfg.nbit_input - 1))
        qx = qnn.quantize(call.args[0], xs, 0, out_dtype=cfg.dtype_input)
        qw = qnn.quantize(call.args[1], ws, 0, out_dtype=cfg.dtype_weight)
        a = call.attrs
        if name == "nn.conv2d":
            acc = qnn.conv2d(qx, qw, 0, 0, xs, ws, a.kernel_size, a.channels, a.strides,
                             a.padding, a.dilation, a.groups, a.data_layout, a.kernel_layout,
                             a.out_layout, out_dtype=cfg.dtype_activation)
        else:
            acc = qnn.dense(qx, qw, 0, 0, xs, ws, a.units, out_dtype=cfg.dtype_activation)
        self.count += 1
        return qnn.dequantize(acc, const(xs * ws, "float32"), 0)


def quantize(mod, params: dict | None = None, dataset=None) -> IRModule:
    """Quantize ``mod``'s main function with the current qconfig (params bound first)."""
    from ..transform import FoldConstant, InferType

    cfg = current_qconfig()
    if cfg.calibrate_mode != "global_scale":
        raise ValueError(f"quantize: calibrate_mode {cfg.calibrate_mode!r} is not supported; "
                         "minitvm implements 'global_scale'")
    if cfg.weight_scale != "power2":
        raise ValueError(f"quantize: weight_scale {cfg.weight_scale!r} is not supported; "
                         "minitvm implements 'power2'")
    if isinstance(mod, Function):
        mod = IRModule.from_expr(mod)
    if params:
        mod = _bind(mod, params)
    mod = Sequential([InferType(), FoldConstant()])(mod)
    realize = _Realize(cfg)
    main = realize.visit(mod["main"])
    out = mod.shallow_copy() if hasattr(mod, "shallow_copy") else IRModule(dict(mod.functions))
    out["main"] = main
    # quantize(constant weight) becomes an int8 constant, as TVM's realize leaves it
    return Sequential([InferType(), FoldConstant(fold_qnn=True)])(out)


def _bind(mod, params):
    from ..transform.bind_params import bind_params_by_name

    out = mod.shallow_copy()
    out["main"] = bind_params_by_name(mod["main"], params)
    return out


__all__ = ["QConfig", "qconfig", "current_qconfig", "quantize"]

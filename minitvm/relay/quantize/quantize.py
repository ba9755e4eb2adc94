"""QConfig and the quantize flow (see the package docstring)."""

from __future__ import annotations

import threading
import warnings

from ...ir.module import IRModule
from ...transform.context import PassContext
from ...transform.sequential import Sequential
from ..expr import Function

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
        if unknown:  # TVM ignores them silently; say so
            warnings.warn(f"qconfig: unknown option(s) {', '.join(unknown)} ignored; known: "
                          f"{', '.join(sorted(_FIELDS))}", stacklevel=3)
        for k, v in _FIELDS.items():
            object.__setattr__(self, k, kwargs.get(k, v))

    def __setattr__(self, name, value):
        if name in _FIELDS:
            raise AttributeError(f"QConfig field {name!r} cannot be set; build a new qconfig")
        object.__setattr__(self, name, value)

    def get_nbit_by_kind(self, kind: int) -> int:
        from .annotate import kind2str

        return getattr(self, "nbit_" + kind2str(kind))

    def get_dtype_by_kind(self, kind: int) -> str:
        from .annotate import kind2str

        return getattr(self, "dtype_" + kind2str(kind))

    def guard(self, ref_call) -> bool:
        """Whether ``ref_call``'s op may be quantized under ``debug_enabled_ops``."""
        ops = self.debug_enabled_ops
        return ops is None or ref_call.op.name in [str(x) for x in ops]

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


def prerequisite_optimize(mod, params: dict | None = None) -> IRModule:
    """Bind ``params`` and run SimplifyInference, FoldConstant, FoldScaleAxis,
    CanonicalizeOps, FoldConstant (TVM's preparation for quantization)."""
    from ..transform import (
        CanonicalizeOps,
        FoldConstant,
        FoldScaleAxis,
        InferType,
        SimplifyInference,
    )

    if isinstance(mod, Function):
        mod = IRModule.from_expr(mod)
    if params:
        mod = _bind(mod, params)
    seq = Sequential([InferType(), SimplifyInference(), FoldConstant(), FoldScaleAxis(),
                      CanonicalizeOps(), FoldConstant()])
    with PassContext(opt_level=3):
        return seq(mod)


def quantize(mod, params: dict | None = None, dataset=None) -> IRModule:
    """Quantize ``mod``'s main function with the current qconfig: prerequisite_optimize, then
    annotate, calibrate (on ``dataset`` for kl_divergence / percentile), realize (unless
    ``do_simulation``) and FoldConstant."""
    from ...transform.decorators import module_pass
    from ..transform import FoldConstant, InferType
    from .annotate import annotate
    from .calibrate import calibrate
    from .realize import realize

    cfg = current_qconfig()
    if cfg.partition_conversions not in ("disabled", "enabled", "fully_integral"):
        raise ValueError(f"quantize: partition_conversions must be disabled, enabled or "
                         f"fully_integral, got {cfg.partition_conversions!r}")
    if cfg.partition_conversions != "disabled":
        raise NotImplementedError("quantize: partition_conversions="
                                  f"{cfg.partition_conversions!r} (splitting the result into "
                                  "prefix/middle/suffix functions) is not implemented")
    mod = prerequisite_optimize(mod, params)
    passes = [annotate(), module_pass(calibrate(dataset), opt_level=1, name="QuantizeCalibrate"),
              InferType()]
    if not cfg.do_simulation:
        passes.append(realize())
    passes += [InferType(), FoldConstant()]
    with PassContext(opt_level=3):
        return Sequential(passes)(mod)


def _bind(mod, params):
    from ..transform.bind_params import bind_params_by_name

    out = mod.shallow_copy()
    out["main"] = bind_params_by_name(mod["main"], params)
    return out


__all__ = ["QConfig", "qconfig", "current_qconfig", "quantize", "prerequisite_optimize"]

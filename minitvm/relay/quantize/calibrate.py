"""Calibration: choose every simulated_quantize's scale and bind its parameter variables
(TVM's ``relay.quantize.calibrate``).

A WEIGHT's scale comes from its constant (``weight_scale``: "power2" rounds the largest
magnitude up to a power of two, "max" takes it as is). INPUT/ACTIVATION scales come from
``calibrate_mode``: "global_scale" uses ``global_scale``; "kl_divergence" and "percentile" run
the model on ``dataset`` (simulated quantization as identity) and pick, per annotated value,
the clipping threshold minimising the KL divergence of the int8 histogram, or the 99.99th
percentile of magnitudes. With ``nbit`` bits (one for the sign), ``dom_scale = scale /
2^(nbit-1)`` and values clip to ``±(2^(nbit-1) - 1)``.
"""

from __future__ import annotations

import numpy as np

from ...ir.module import IRModule
from ..expr import Call, Constant, Function, Tuple, const
from ..expr_functor import ExprMutator, post_order_visit
from .annotate import SQ_NAME, QAnnotateKind, kind2str
from .kl_threshold import kl_divergence_scale


def _sq_calls(func) -> list:
    found = []

    def visit(e):
        if isinstance(e, Call) and getattr(e.op, "name", None) == SQ_NAME:
            found.append(e)

    post_order_visit(func, visit)
    return found


def power2_scale(arr: np.ndarray) -> float:
    """The largest magnitude rounded up to a power of two (1.0 for an all-zero tensor)."""
    peak = float(np.max(np.abs(arr))) if arr.size else 0.0
    return float(2.0 ** np.ceil(np.log2(peak))) if peak > 0 else 1.0


def max_scale(arr: np.ndarray) -> float:
    """The largest magnitude (1.0 for an all-zero tensor)."""
    peak = float(np.max(np.abs(arr))) if arr.size else 0.0
    return peak if peak > 0 else 1.0


def percentile_scale(arr: np.ndarray) -> float:
    """The 99.99th percentile of the magnitudes."""
    return float(np.percentile(np.abs(arr), 99.99)) or 1.0


def _collect_stats(func, calls, dataset) -> list:
    """The values reaching each calibrated call over the dataset, concatenated."""
    class _Identity(ExprMutator):
        def visit_call(self, call):
            new = super().visit_call(call)
            if getattr(new.op, "name", None) == SQ_NAME:
                return new.args[0]
            return new

    m = _Identity()
    m.visit(func)
    outs = Tuple([m.memo_map[c] for c in calls])
    stats_fn = Function(func.params, outs)
    from ..build_module import create_executor

    run = create_executor("debug", mod=IRModule.from_expr(stats_fn)).evaluate()
    names = [p.name_hint for p in func.params]
    samples: list = [[] for _ in calls]
    for batch in dataset:
        missing = [n for n in names if n not in batch]
        if missing:
            raise ValueError(f"calibration data lacks input(s) {', '.join(missing)}")
        res = run(*[np.asarray(batch[n], "float32") for n in names])
        for i, v in enumerate(res):
            samples[i].append(np.asarray(v.numpy()).ravel())
    return [np.concatenate(s) for s in samples]


def calibrate(dataset=None):
    """A ``(mod, ctx) -> mod`` function (wrap it in a module pass, as TVM's quantize does)
    that binds every simulated_quantize's dom_scale / clip_min / clip_max."""

    def wrapped(mod, ctx=None):
        from .quantize import current_qconfig

        cfg = current_qconfig()
        func = mod["main"]
        calls = _sq_calls(func)
        mode = cfg.calibrate_mode
        if mode not in ("global_scale", "kl_divergence", "percentile"):
            raise ValueError(f"calibrate: unknown calibrate_mode {mode!r}; use global_scale, "
                             "kl_divergence or percentile")
        if cfg.weight_scale not in ("power2", "max"):
            raise ValueError(f"calibrate: unknown weight_scale {cfg.weight_scale!r}; use power2 "
                             "or max")
        data_calls = [c for c in calls if c.attrs.kind != QAnnotateKind.WEIGHT]
        stats = {}
        if mode != "global_scale" and data_calls:
            if not dataset:
                raise ValueError(f"calibrate_mode {mode!r} needs a calibration dataset")
            pick = kl_divergence_scale if mode == "kl_divergence" else percentile_scale
            for c, arr in zip(data_calls, _collect_stats(func, data_calls, dataset),
                              strict=True):
                stats[c] = pick(arr)
        binds = {}
        for c in calls:
            kind = c.attrs.kind
            nbit = int(getattr(cfg, "nbit_" + kind2str(kind)))
            valid_range = 2 ** (nbit - int(bool(c.attrs.sign)))
            if kind == QAnnotateKind.WEIGHT:
                if not isinstance(c.args[0], Constant):
                    raise ValueError("calibrate: a WEIGHT annotation needs a constant operand")
                w = c.args[0].data.numpy()
                scale = power2_scale(w) if cfg.weight_scale == "power2" else max_scale(w)
            else:
                scale = stats.get(c, float(cfg.global_scale))
            for var, value in zip(c.args[1:], (scale / valid_range, -(valid_range - 1),
                                               valid_range - 1), strict=True):
                binds[var] = const(float(value), "float32")
        out = mod.shallow_copy()
        from ..expr import bind

        out["main"] = bind(func, binds)
        return out

    return wrapped


__all__ = ["calibrate", "power2_scale", "max_scale", "percentile_scale",
           "kl_divergence_scale"]

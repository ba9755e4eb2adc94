"""ONNX Resize whose scales or sizes are read from data (graph inputs, values computed at run
time) onto Relax: each spatial axis sampled by its run-time scale as onnxruntime
(``frontend_common.onnx_run_time_taps``: fractional output sizes, antialiased downscales), the
output lengths bound to fresh shape variables (``tensor_to_shape`` + ``match_cast``). Scales or
sizes <= 0, and leading scales / sizes that would resize the batch or channels, fail at run
time (``R.assert_op``); an integer input resizes in float64 and truncates back;
keep_aspect_ratio_policy over the spatial axes takes one scale; attributes with no run-time form
are refused by name."""

from __future__ import annotations

import numpy as np

from ....frontend_common import onnx_run_time_taps
from ....tir import Var as TirVar
from ... import op as _op
from ...expr import const
from ...struct_info import ShapeStructInfo
from .context import Context

__all__ = ["run_time_resize"]

_MODES = ("nearest", "linear", "cubic")
_COORDINATES = ("half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel",
                "tf_half_pixel_for_nn", "tf_crop_and_resize")


class _RelaxOps:
    """The ops ``onnx_run_time_taps`` builds with: each Relax call bound at once (a value used
    twice is computed once), the rest by name from ``relax.op``."""

    def __init__(self, ctx: Context):
        self._ctx = ctx

    def __getattr__(self, name: str):
        op = getattr(_op, name)
        return lambda *args, **kwargs: self._ctx.emit(op(*args, **kwargs))

    def const(self, v):
        v = np.asarray(v)
        return const(v, str(v.dtype))

    def cast(self, x, dtype: str):
        return self._ctx.emit(_op.astype(x, dtype))

    def dim(self, x, axis: int):
        d = self._ctx.shape(x)[axis]
        if isinstance(d, int):
            return const(np.array(d, "int64"), "int64")
        return self._ctx.emit(_op.reshape(self._ctx.expr(np.array([d], dtype=object)), []))

    def positions(self, n):
        length = TirVar("resize_len", "int64")
        self._ctx.bb.match_cast(self._ctx.emit(_op.tensor_to_shape(_op.reshape(n, [1]))),
                                ShapeStructInfo([length]))  # (binds ``length``)
        return self._ctx.emit(_op.arange(0, length, 1, "int64"))

    def dense(self, a, b):
        return self._ctx.emit(_op.matmul(a, _op.permute_dims(b, [1, 0])))

    def transpose(self, x, axes):
        return self._ctx.emit(_op.permute_dims(x, [int(a) for a in axes]))

    def materialize(self, x):
        return x  # (every value is bound already)

    def ndim(self, x) -> int:
        return self._ctx.ndim(x)

    def dtype(self, x) -> str:
        return self._ctx.dtype(x)

    def fail(self, message: str):
        return self._ctx.fail(message)


def _unsupported(attrs: dict, nd: int, dtype: str) -> str:
    """The attribute (or input property) with no run-time form, as ``name=value``; ""."""
    mode = attrs.get("mode", "nearest")
    checks = (
        ("the input rank", nd, nd >= 3),
        ("the input dtype", dtype, dtype.startswith(("float", "int", "uint"))),
        ("mode", mode, mode in _MODES),
        ("antialias", attrs.get("antialias", 0), mode != "nearest" or
         not attrs.get("antialias", 0)),  # (onnxruntime: linear and cubic only)
        ("coordinate_transformation_mode",
         attrs.get("coordinate_transformation_mode", "half_pixel"),
         attrs.get("coordinate_transformation_mode", "half_pixel") in _COORDINATES),
        ("keep_aspect_ratio_policy", attrs.get("keep_aspect_ratio_policy", "stretch"),
         attrs.get("keep_aspect_ratio_policy", "stretch") in ("stretch", "not_larger",
                                                              "not_smaller")),
    )
    return next((f"{n}={v!r}" for n, v, ok in checks if not ok), "")


def run_time_resize(ctx: Context, ins, attrs: dict):
    """``ins[0]`` (N, C, spatial...) resized by the run-time scales (``ins[2]``) or sizes
    (``ins[3]``) of its spatial axes; ``ins[1]``: the roi, known at import when
    tf_crop_and_resize reads it. An integer input resizes in float64."""
    x = ctx.expr(ins[0])
    nd, dtype = ctx.ndim(x), ctx.dtype(x)
    bad = _unsupported(attrs, nd, dtype)
    if not bad and not dtype.startswith("float"):
        # (sampled in float64 and truncated back toward zero, as onnxruntime casts; a cubic
        # overshoot saturated)
        y = run_time_resize(ctx, [ctx.emit(_op.astype(x, "float64"))] + list(ins[1:]), attrs)
        if attrs.get("mode", "nearest") == "cubic":
            info = np.iinfo(dtype)
            y = ctx.emit(_op.clip(y, float(info.min), float(info.max)))
        return ctx.emit(_op.astype(y, dtype))
    by_sizes = len(ins) > 3 and ins[3] is not None
    what = "sizes" if by_sizes else "scales"
    if bad:
        raise ctx.fail(f"Resize's {what} are known only at run time, and its {bad} has no "
                       "run-time form; bind them with from_onnx(..., const_inputs=...)")
    axes = [int(a) % nd for a in attrs.get("axes", range(nd))]
    policy = attrs.get("keep_aspect_ratio_policy", "stretch")
    if policy != "stretch" and by_sizes and axes != list(range(2, nd)):
        raise ctx.fail(f"Resize's sizes are known only at run time, and its "
                       f"keep_aspect_ratio_policy={policy!r} over axes {axes} would resize "
                       "the batch and channels too: name the spatial axes in its axes")
    if axes not in (list(range(nd)), list(range(2, nd))):
        raise ctx.fail(f"Resize's {what} are known only at run time over axes {axes}: only "
                       f"the spatial axes {list(range(2, nd))} can be resized so")
    given = ctx.expr(ins[3] if by_sizes else ins[2])
    dims = ctx.shape(x)
    old = ctx.emit(_op.astype(ctx.expr(np.array(list(dims), dtype=object), "int64"), "float32"))
    where = ctx.where().replace("{", "{{").replace("}", "}}")

    def require(ok, message: str, shown):
        ctx.emit(_op.assert_op(ctx.emit(ok), [shown], format=f"{where}: {message}"))

    values = ctx.emit(_op.astype(given, "float32"))
    if len(axes) == nd:  # (the batch and channels must keep their sizes)
        lead = ctx.emit(_op.strided_slice(values, [0], [0], [2]))
        kept = _op.strided_slice(old, [0], [0], [2]) if by_sizes else \
            const(np.ones(2, "float32"))
        require(_op.equal(_op.min(_op.astype(_op.equal(lead, kept), "int64")),
                          const(np.array(1, "int64"))),
                f"the {what} {{}} must keep axes 0 and 1 (the batch and channels)", values)
        values = ctx.emit(_op.strided_slice(values, [0], [2], [nd]))
    spatial = ctx.emit(_op.strided_slice(old, [0], [2], [nd]))
    require(_op.greater(_op.min(values), const(np.array(0, "float32"))),
            f"the spatial {what} {{}} must be positive", values)
    if by_sizes and policy != "stretch":
        # (one scale for every axis, the least or greatest of sizes / input; each output
        # round(scale * input), sampled by that scale)
        ratio = _op.divide(values, spatial)
        one = (_op.min if policy == "not_larger" else _op.max)(ratio, keepdims=True)
        scale = ctx.emit(_op.multiply(_op.ones_like(ratio), one))
        size = ctx.emit(_op.astype(_op.floor(_op.add(_op.multiply(spatial, scale),
                                                     const(np.array(0.5, "float32")))), "int64"))
    elif by_sizes:
        size = ctx.emit(_op.astype(values, "int64"))
        scale = ctx.emit(_op.divide(values, spatial))
    else:
        scale = values
        size = ctx.emit(_op.astype(_op.floor(_op.multiply(spatial, scale)), "int64"))
    lo, hi = _roi(ctx, attrs, ins, nd, size, spatial)
    return onnx_run_time_taps.resize_by_scales(_RelaxOps(ctx), x, attrs, size, scale, lo, hi)


def _roi(ctx: Context, attrs: dict, ins, nd: int, size, spatial):
    """(starts, ends) of each spatial axis' region, float32 tensors: tf_crop_and_resize's roi
    (known at import; given for every axis or for the spatial ones) except on an axis whose
    run-time size is its input's (onnxruntime leaves it as it is), else the whole axis."""
    k = nd - 2
    whole = (const(np.zeros(k, "float32")), const(np.ones(k, "float32")))
    if attrs.get("coordinate_transformation_mode") != "tf_crop_and_resize":
        return whole
    v = ctx.known(ins[1]) if len(ins) > 1 and ins[1] is not None else None
    if v is None or v.dtype == object:
        raise ctx.fail("Resize's scales or sizes are known only at run time, and "
                       "tf_crop_and_resize needs its roi known at import")
    bounds = onnx_run_time_taps.split_roi(v, nd)
    if isinstance(bounds, str):
        raise ctx.fail(bounds)
    lo, hi = bounds
    same = ctx.emit(_op.equal(_op.astype(size, "float32"), spatial))
    return tuple(ctx.emit(_op.where(same, w, const(g))) for w, g in zip(whole, (lo, hi),
                                                                       strict=True))

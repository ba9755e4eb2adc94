"""Pieces the Relax importers share: ``detach_params`` (TVM's ``relax.frontend.detach_params``)
for modules imported with their weights kept as function inputs, and ``crop_negative_pads``
(ONNX's Pad and torch's constant pad crop where a width is negative)."""

from __future__ import annotations

import numpy as np

from ...ir.module import IRModule
from .. import op as _op
from ..expr import Expr, Function, const

__all__ = ["crop_negative_pads", "detach_params", "contract_axis", "dynamic_quantize_uint8",
           "RelaxBuilder"]

_TO_END = 2 ** 62  # a slice end past any axis: "up to the end"


def crop_negative_pads(x: Expr, flat: list[int]) -> tuple[Expr | None, list[int]]:
    """``flat`` holds (before, after) widths per axis, as ``relax.op.nn.pad`` takes them; the
    negative ones remove that many elements instead. Returns the crop (a strided_slice of
    ``x``, or None when nothing is negative) and ``flat`` with the negative widths zeroed. The
    slice's negative end counts from the axis's end, so it serves symbolic lengths too."""
    axes = [a for a in range(len(flat) // 2) if flat[2 * a] < 0 or flat[2 * a + 1] < 0]
    if not axes:
        return None, list(flat)
    begin = [max(-flat[2 * a], 0) for a in axes]
    end = [flat[2 * a + 1] if flat[2 * a + 1] < 0 else _TO_END for a in axes]
    return _op.strided_slice(x, axes, begin, end), [max(int(p), 0) for p in flat]


def detach_params(mod: IRModule) -> tuple[IRModule, dict[str, list]]:
    """Split the ``"params"`` attribute off each function: (module without it, {name: params}).

    An importer called with ``keep_params_in_input=True`` (ONNX) or ``keep_params_as_input=True``
    (torch) records the weights' values there, in the order of the trailing parameters."""
    out = mod.shallow_copy()
    detached: dict[str, list] = {}
    for gv, func in list(mod.functions.items()):
        if not isinstance(func, Function) or not func.attrs or "params" not in func.attrs:
            continue
        detached[gv.name_hint] = list(func.attrs["params"])
        attrs = {k: func.attrs[k] for k in func.attrs.keys() if k != "params"}
        out[gv] = Function(func.params, func.body, func.ret_struct_info, func.is_pure,
                           attrs or None, func.span)
    return out, detached


def contract_axis(ctx, x, axis: int, mat: np.ndarray):
    """``x`` contracted along ``axis`` with the constant ``mat`` [n_in, n_out], each step
    bound through ``ctx.emit`` (either importer's context): the axis moved last, one matmul,
    moved back (the DFT matrices of ONNX's DFT / STFT and torch.fft)."""
    nd = ctx.ndim(x)
    perm = [d for d in range(nd) if d != axis] + [axis]
    moved = x if axis == nd - 1 else ctx.emit(_op.permute_dims(x, perm))
    y = ctx.emit(_op.matmul(moved, const(mat.astype(ctx.dtype(x)), ctx.dtype(x))))
    if axis == nd - 1:
        return y
    return ctx.emit(_op.permute_dims(y, [int(b) for b in np.argsort(perm)]))


def dynamic_quantize_uint8(ctx, x, dtype: str):
    """ONNX's ``DynamicQuantizeLinear`` of ``x`` (of float ``dtype``), each step bound through
    ``ctx.emit``: uint8 over its range widened to hold 0, scale ``(max - min) / 255`` (1 for an
    all-zero input, as onnxruntime), zero point ``round(-min / scale)``; (the uint8 tensor, the
    scale, the zero point as a float of ``dtype``). Also how a ``DynamicQuantizeLSTM``
    quantizes its input and state."""
    def f(v):
        return const(np.array(v, dtype), dtype)

    lo = ctx.emit(_op.minimum(_op.min(x), f(0)))
    hi = ctx.emit(_op.maximum(_op.max(x), f(0)))
    scale = ctx.emit(_op.divide(_op.subtract(hi, lo), f(255)))
    safe = ctx.emit(_op.where(_op.equal(scale, f(0)), f(1), scale))
    zp = ctx.emit(_op.clip(_op.round(_op.divide(_op.negative(lo), safe)), 0.0, 255.0))
    q = _op.clip(_op.add(_op.round(_op.divide(x, safe)), zp), 0.0, 255.0)
    return ctx.emit(_op.astype(q, "uint8")), safe, zp


class RelaxBuilder:
    """The operations every ``frontend_common`` plan's builder has (``torch_order.OrderBuilder``,
    ``unique_plan.UniqueBuilder``) on ``relax.op``, values bound through the importer's ``ctx``:
    constants, casts, slices along one axis and concatenation. Each plan's builder adds its
    ``emit`` and its own operations."""

    ops = _op

    def __init__(self, ctx):
        self.ctx = ctx

    @staticmethod
    def const(value: np.ndarray):
        """A constant of the array's own dtype (``relax.const`` alone narrows float64)."""
        return const(value, str(value.dtype)) if isinstance(value, np.ndarray | np.generic) \
            else const(value)

    @staticmethod
    def cast(x, dtype: str):
        return _op.astype(x, dtype)

    @staticmethod
    def slice_axis(x, axis: int, begin: int, end: int):
        return _op.strided_slice(x, [axis], [begin], [end])

    @staticmethod
    def concat(parts: list, axis: int):
        return _op.concat(parts, axis)

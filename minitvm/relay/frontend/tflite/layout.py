"""NCHW through layout-free operators: quantized convs are imported as NCHW convs between two
transposes (``quantized._conv``), so the NHWC tensors between them are ``transpose(x, (0, 2,
3, 1))`` of NCHW values. An operator that does not care about the layout (elementwise ones,
a residual ADD of two quantized tensors above all), knows both (the 2-D pools, reductions) or
works along an axis its converter maps (CONCATENATION) is computed here on the NCHW values
themselves and its 4-D result transposed back; that transpose then cancels with the next
conv's (SimplifyExpr), so a MobileNetV2's residual adds no longer bounce to NHWC and back (10
layout kernels of 12-38 us each at 224x224).

ConvertNHWCConvs (ConvertLayout) does this for float models, whose convs are NHWC
``nn.conv2d`` calls; the quantized convs are not, so it never sees them."""

from __future__ import annotations

import numpy as np

from ... import expr as _expr
from ... import op as _op
from ...op.op import Op
from .importer import quant_params
from .tensor_data import infer_shape

TO_NHWC = (0, 2, 3, 1)
TO_NCHW = (0, 3, 1, 2)
NCHW_AXIS = (0, 2, 3, 1)  # NHWC axis a is NCHW axis NCHW_AXIS[a]

# elementwise operators (per-tensor quantized): any layout computes the same values
ELEMENTWISE = frozenset({
    "ADD", "SUB", "MUL", "DIV", "MAXIMUM", "MINIMUM", "SQUARED_DIFFERENCE", "RELU", "RELU6",
    "RELU_N1_TO_1", "RELU_0_TO_1", "LOGISTIC", "TANH", "HARD_SWISH", "LEAKY_RELU", "GELU",
    "ELU", "EXP", "LOG", "SQRT", "RSQRT", "ABS", "NEG", "SQUARE", "SIN", "COS", "QUANTIZE",
    "DEQUANTIZE"})
POOLS = frozenset({"AVERAGE_POOL_2D", "MAX_POOL_2D"})  # (converters read ``ctx.layout``)
AXIS_OPS = frozenset({"CONCATENATION"})  # (their converters map the axis by ``ctx.layout``)
REDUCTIONS = frozenset({"MEAN", "SUM", "REDUCE_MAX", "REDUCE_MIN"})  # (axes: input 1)


def _nchw_source(e):
    """``x`` when ``e`` is ``transpose(x, (0, 2, 3, 1))`` of a 4-D ``x``, else None."""
    if isinstance(e, _expr.Call) and isinstance(e.op, Op) and e.op.name == "transpose" and \
            e.attrs.axes is not None and tuple(int(a) for a in e.attrs.axes) == TO_NHWC:
        return e.args[0]
    return None


def _per_tensor(ctx, tensor_id: int) -> bool:
    """Is the tensor unquantized or quantized with one scale (so no axis is special)?"""
    q = quant_params(ctx.importer.subgraph.Tensors(tensor_id))
    return q is None or q[0].size <= 1


def _nchw_constant(e: _expr.Constant):
    """A constant operand of an elementwise op on NHWC tensors, for the same op in NCHW:
    broadcast to rank 4 (leading ones, as broadcasting would) and transposed."""
    v = e.data.numpy()
    if v.size == 1:
        return e
    v = v.reshape((1,) * (4 - v.ndim) + v.shape) if v.ndim < 4 else v
    return _expr.const(np.ascontiguousarray(v.transpose(TO_NCHW)), str(v.dtype))


def _elementwise_inputs(ctx) -> list | None:
    """The NCHW inputs of an elementwise op, or None when it cannot take them (an input that
    is neither a transposed NCHW tensor nor a constant of rank <= 4, or none transposed)."""
    new, found = [], False
    for e in ctx.inputs:
        src = _nchw_source(e) if e is not None else None
        if src is not None:
            new.append(src)
            found = True
            continue
        c = ctx.importer.fold(e) if e is not None else None
        if not isinstance(c, _expr.Constant) or c.data.numpy().ndim > 4:
            return None
        new.append(_nchw_constant(c))
    return new if found else None


def _reduce_axes(ctx) -> tuple[list[int], bool] | None:
    """(NCHW axes, transpose the result back) of a reduction of a transposed tensor: None when
    its kept axes would come out in another order than NHWC's."""
    v = ctx.importer.fold(ctx.inputs[1]) if len(ctx.inputs) > 1 else None
    if not isinstance(v, _expr.Constant):
        return None
    axes = sorted({int(a) % 4 for a in v.data.numpy().reshape(-1)})
    opt = ctx.options()
    keep = bool(opt.KeepDims()) if opt is not None else False
    if keep:
        return [NCHW_AXIS[a] for a in axes], True
    kept = [NCHW_AXIS[a] for a in range(4) if a not in axes]
    if kept != sorted(kept):
        return None
    return [NCHW_AXIS[a] for a in axes], False


def convert_in_nchw(ctx, convert):
    """``convert(ctx)`` computed on NCHW values where the op allows it and its inputs are
    transposed NCHW tensors (see the module), the 4-D results transposed back to NHWC; else
    plainly. ``ctx.inputs`` and ``ctx.layout`` are set for the NCHW form."""
    ids = [*ctx.input_ids, *(int(i) for i in ctx.op.OutputsAsNumpy())]
    back = True
    if ctx.name in ELEMENTWISE or ctx.name in AXIS_OPS:
        new = _elementwise_inputs(ctx)
        if new is None or not all(_per_tensor(ctx, i) for i in ids if i >= 0):
            return convert(ctx)
    elif ctx.name in POOLS or ctx.name in REDUCTIONS:
        src = _nchw_source(ctx.inputs[0])
        if src is None or not _per_tensor(ctx, ids[0]):
            return convert(ctx)
        new = [src, *ctx.inputs[1:]]
        if ctx.name in REDUCTIONS:
            got = _reduce_axes(ctx)
            if got is None:
                return convert(ctx)
            axes, back = got
            new[1] = _expr.const(np.array(axes, "int32"), "int32")
    else:
        return convert(ctx)
    ctx.inputs, ctx.layout = new, "NCHW"
    out = convert(ctx)
    outs = out if isinstance(out, list) else [out]
    res = [_op.transpose(e, TO_NHWC) if back and len(infer_shape(e)) == 4 else e
           for e in outs]
    return res if isinstance(out, list) else res[0]

"""Which tensors of an ONNX graph cannot be NaN: what lets both importers requantize a QDQ
model's activations the way onnxruntime's fused QLinear kernels do.

A QuantizeLinear quantizes a NaN to its dtype's lowest value (``onnx_quant.NAN_QUANTIZES_TO``),
a select per element of every requantizing epilogue, and divides by its scale. Where its input
is computed only from dequantized 8-bit data, finite constants and ops that keep finite values
finite, no NaN can reach it, so the importer drops the select and multiplies by the reciprocal
scale (what ORT's QLinearConv / QLinearMatMul do after fusing DequantizeLinear -> op ->
QuantizeLinear). "Finite" leaves float32 overflow aside: 8-bit values times finite scales stay
orders of magnitude below it, and an overflow gives an infinity, which quantizes the same way
multiplied or divided.

Pure python over the ONNX protos, computed once per graph in one pass in node order (ONNX
graphs are topologically sorted), no recursion."""

from __future__ import annotations

import numpy as np

from .onnx_model import ONNX_DOMAINS

# ops whose outputs are finite when all their inputs are (reductions and windows non-empty: a
# mean over an empty axis is 0 / 0). Left out on purpose: Div (but for a constant divisor:
# ``_keeps_finite``), Reciprocal, Sqrt, Log, Pow, Exp, Softplus (a zero or negative argument,
# or an overflow the next op may turn into NaN), BatchNormalization (a negative variance)
KEEPS_FINITE = frozenset({
    "Add", "Sub", "Mul", "Neg", "Abs", "Sum", "Max", "Min", "Mean",
    "Conv", "ConvTranspose", "MatMul", "Gemm", "Einsum",
    "Relu", "LeakyRelu", "PRelu", "Clip", "Elu", "Selu", "Celu", "Sigmoid", "HardSigmoid",
    "HardSwish", "Tanh", "Erf", "Gelu", "Softmax", "LogSoftmax", "LayerNormalization",
    "MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool", "ReduceMax", "ReduceMin",
    "ReduceSum", "ReduceMean", "Floor", "Ceil", "Round", "Sign",
    "Reshape", "Flatten", "Transpose", "Squeeze", "Unsqueeze", "Concat", "Split", "Slice",
    "Gather", "GatherElements", "Expand", "Tile", "Pad", "Resize", "Upsample", "DepthToSpace",
    "SpaceToDepth", "Identity", "Dropout", "Cast", "Where",
    "DequantizeLinear", "DynamicQuantizeLinear",
})

# ops whose outputs are integers or booleans: finite whatever their inputs (a QuantizeLinear
# of a NaN gives the lowest value), and the QLinear ops, whose float op between dequantized
# inputs the ``QLINEAR_OPS`` table names
INTEGER_OUT = frozenset({
    "QuantizeLinear", "Shape", "Size", "Equal", "Less", "LessOrEqual", "Greater",
    "GreaterOrEqual", "Not", "And", "Or", "Xor", "IsNaN", "IsInf", "ArgMax", "ArgMin",
    "NonZero", "MatMulInteger", "ConvInteger",
})

# a QLinear op (op type, or domain.op_type outside the default domain) -> the float op it
# computes between its dequantized inputs before requantizing
QLINEAR_OPS = {
    "QLinearConv": "Conv", "QLinearMatMul": "MatMul", "com.microsoft.QGemm": "Gemm",
    "com.microsoft.QLinearConv": "Conv", "com.microsoft.QLinearAdd": "Add",
    "com.microsoft.QLinearMul": "Mul", "com.microsoft.QLinearGlobalAveragePool":
    "GlobalAveragePool", "com.microsoft.QLinearAveragePool": "AveragePool",
    "com.microsoft.QLinearSigmoid": "Sigmoid", "com.microsoft.QLinearLeakyRelu": "LeakyRelu",
    "com.microsoft.QLinearSoftmax": "Softmax", "com.microsoft.QLinearConcat": "Concat",
}

_FLOAT_TYPES = frozenset({1, 10, 11, 16})  # TensorProto FLOAT, FLOAT16, DOUBLE, BFLOAT16
_QUANTIZED_OPS = frozenset({"QuantizeLinear", "DequantizeLinear"}) | frozenset(
    k.rsplit(".", 1)[-1] for k in QLINEAR_OPS)


def _key(node) -> str:
    return node.op_type if node.domain in ONNX_DOMAINS else f"{node.domain}.{node.op_type}"


def _float_values(t) -> np.ndarray | None:
    """The values of a float TensorProto (an initializer, a Constant's value), else None."""
    if t.data_type not in _FLOAT_TYPES:
        return None
    from onnx import numpy_helper

    return numpy_helper.to_array(t)


def _constant_values(node):
    """A Constant node's float values; None when it holds none (value_int(s), strings)."""
    for a in node.attribute:
        if a.name == "value":
            return _float_values(a.t)
        if a.name in ("value_float", "value_floats"):
            return np.asarray(a.floats if a.name == "value_floats" else a.f, "float32")
    return None


def _note_constant(name: str, values, finite: set, divisors: set) -> None:
    """Note a constant: finite when it holds no NaN or infinity (or is not float), a divisor
    as well when no value is zero or so small that its reciprocal overflows."""
    if values is None:
        finite.add(name)
        return
    v = np.asarray(values)
    if not np.all(np.isfinite(v)):
        return
    finite.add(name)
    if v.size and np.all(np.abs(v) >= np.finfo(v.dtype).tiny):
        divisors.add(name)


def _keeps_finite(node, finite: set, divisors: set) -> bool:
    """``node``'s outputs are finite given which of its inputs are (``finite``), and which
    are constant divisors (``divisors``: a Div by one of them is finite)."""
    key = _key(node)
    if key in INTEGER_OUT or key in QLINEAR_OPS:
        return True
    if key == "ConstantOfShape":
        values = [_float_values(a.t) for a in node.attribute if a.name == "value"]
        return all(v is None or bool(np.all(np.isfinite(v))) for v in values)
    if key == "Div":
        return len(node.input) == 2 and node.input[0] in finite and node.input[1] in divisors
    return key in KEEPS_FINITE and all(i in finite for i in node.input if i) and \
        _finite_attributes(node)


def _finite_attributes(node) -> bool:
    """No float attribute of ``node`` (Gemm's alpha, LeakyRelu's alpha...) is NaN or inf."""
    return all(bool(np.isfinite(a.f)) and bool(np.all(np.isfinite(np.asarray(a.floats))))
               for a in node.attribute)


def finite_tensors(graph) -> frozenset:
    """The names of the tensors of ``graph`` (not of its subgraphs) that cannot be NaN or
    infinite: finite constants, integer graph inputs, and the outputs of ``_keeps_finite``
    nodes. Empty for a graph with no quantize / dequantize op (where nobody asks)."""
    if not any(n.op_type in _QUANTIZED_OPS for n in graph.node):
        return frozenset()
    finite: set = set()
    divisors: set = set()
    for t in graph.initializer:
        _note_constant(t.name, _float_values(t), finite, divisors)
    for vi in graph.input:
        code = vi.type.tensor_type.elem_type if vi.type.HasField("tensor_type") else 0
        if code and code not in _FLOAT_TYPES and vi.name not in finite:
            finite.add(vi.name)
    for node in graph.node:
        if _key(node) == "Constant":
            for o in node.output:
                _note_constant(o, _constant_values(node), finite, divisors)
        elif _keeps_finite(node, finite, divisors):
            finite.update(o for o in node.output if o)
    return frozenset(finite)


def quantizes_finite(node, finite) -> bool:
    """The float value that ``node`` quantizes cannot be NaN: a QuantizeLinear's input is in
    ``finite`` (``finite_tensors``), or a QLinear op's float op keeps its finite inputs
    finite (the requantize of its output)."""
    key = _key(node)
    if key == "QuantizeLinear":
        return bool(node.input) and node.input[0] in finite
    op = QLINEAR_OPS.get(key)
    return op is not None and op in KEEPS_FINITE and \
        all(i in finite for i in node.input if i) and _finite_attributes(node)


def reciprocal_scale(scale) -> np.ndarray | None:
    """``1 / scale`` in the scale's float dtype, to multiply by where ``quantizes_finite``; None
    when the scale is not known or a reciprocal is not finite (a zero or subnormal scale, where
    ``0 * inf`` would make the NaN the divide does not)."""
    if scale is None or scale.dtype.kind != "f":
        return None
    with np.errstate(divide="ignore", over="ignore"):
        r = (np.ones((), scale.dtype) / scale).astype(scale.dtype)
    return r if bool(np.all(np.isfinite(r))) else None

"""Operators on ``nn.Tensor`` (TVM's ``nn/op.py``).

Each builds the Relax operator call (``relax.op.*``) on the tensors' expressions and emits it in
the function being exported under TVM's name hint (``matmul`` -> ``matmul``, ``multiply`` ->
``mul``, ...); a later binding with the same hint is numbered (``matmul1``). Every function takes
``name=`` to choose the hint.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence

import numpy as np

from ....ir.prim_expr import FloatImm, IntImm, PrimExpr
from ... import expr as rx
from ...block_builder import BlockBuilder
from .core import Tensor, wrap_nested

__all__ = [
    "add", "subtract", "multiply", "divide", "maximum", "minimum", "matmul", "negative",
    "less", "less_equal", "greater", "greater_equal", "equal", "not_equal", "where",
    "exp", "log", "sqrt", "square", "tanh", "sigmoid", "floor",
    "relu", "relu6", "silu", "gelu", "softmax",
    "sum", "max", "min", "mean",
    "permute_dims", "permute", "reshape", "repeat", "squeeze", "unsqueeze", "concat", "split",
    "chunk", "take", "astype", "broadcast_to", "triu", "full", "zeros", "ones", "pad",
    "layer_norm", "rms_norm", "group_norm",
    "conv1d", "conv2d", "conv1d_transpose", "scaled_dot_product_attention",
    "extern", "tensor_expr_op", "tensor_ir_op",
]


def _relax_op(path: str):
    """``relax.op.<path>`` (``"matmul"``, ``"nn.relu"``), with a clear error when minitvm does
    not provide it."""
    obj = importlib.import_module("minitvm.relax.op")
    parts = path.split(".")
    for i, part in enumerate(parts):
        nxt = getattr(obj, part, None)
        if nxt is None and i < len(parts) - 1:
            try:
                nxt = importlib.import_module(f"{obj.__name__}.{part}")
            except ImportError:
                nxt = None
        if nxt is None:
            raise NotImplementedError(f"relax.op.{path} is not available in minitvm (needed by "
                                      "relax.frontend.nn)")
        obj = nxt
    return obj


def _expr(x, what: str = "argument"):
    if not isinstance(x, Tensor):
        raise TypeError(f"nn.op: {what} must be an nn.Tensor, got {type(x).__name__} {x!r}")
    return x._expr


# ---------------------------------------------------------------------- elementwise binary
def add(a: Tensor, b: Tensor, name: str = "add") -> Tensor:
    """``a + b`` with numpy-style broadcasting."""
    return wrap_nested(_relax_op("add")(_expr(a), _expr(b)), name)


def subtract(a: Tensor, b: Tensor, name: str = "subtract") -> Tensor:
    """``a - b`` with broadcasting."""
    return wrap_nested(_relax_op("subtract")(_expr(a), _expr(b)), name)


def multiply(a: Tensor, b: Tensor, name: str = "mul") -> Tensor:
    """``a * b`` with broadcasting."""
    return wrap_nested(_relax_op("multiply")(_expr(a), _expr(b)), name)


def divide(a: Tensor, b: Tensor, name: str = "divide") -> Tensor:
    """``a / b`` with broadcasting."""
    return wrap_nested(_relax_op("divide")(_expr(a), _expr(b)), name)


def maximum(x1: Tensor, x2: Tensor, name: str = "maximum") -> Tensor:
    """Elementwise maximum."""
    return wrap_nested(_relax_op("maximum")(_expr(x1), _expr(x2)), name)


def minimum(x1: Tensor, x2: Tensor, name: str = "minimum") -> Tensor:
    """Elementwise minimum."""
    return wrap_nested(_relax_op("minimum")(_expr(x1), _expr(x2)), name)


def less(a: Tensor, b: Tensor, name: str = "less") -> Tensor:
    return wrap_nested(_relax_op("less")(_expr(a), _expr(b)), name)


def less_equal(a: Tensor, b: Tensor, name: str = "less_equal") -> Tensor:
    return wrap_nested(_relax_op("less_equal")(_expr(a), _expr(b)), name)


def greater(a: Tensor, b: Tensor, name: str = "greater") -> Tensor:
    return wrap_nested(_relax_op("greater")(_expr(a), _expr(b)), name)


def greater_equal(a: Tensor, b: Tensor, name: str = "greater_equal") -> Tensor:
    return wrap_nested(_relax_op("greater_equal")(_expr(a), _expr(b)), name)


def equal(a: Tensor, b: Tensor, name: str = "equal") -> Tensor:
    return wrap_nested(_relax_op("equal")(_expr(a), _expr(b)), name)


def not_equal(a: Tensor, b: Tensor, name: str = "not_equal") -> Tensor:
    return wrap_nested(_relax_op("not_equal")(_expr(a), _expr(b)), name)


def where(condition: Tensor, x1: Tensor, x2: Tensor, name: str = "where") -> Tensor:
    """``x1`` where ``condition`` else ``x2`` (the condition is cast to bool)."""
    condition = astype(condition, "bool")
    return wrap_nested(_relax_op("where")(_expr(condition), _expr(x1), _expr(x2)), name)


def matmul(a: Tensor, b: Tensor, out_dtype: str | None = None, name: str = "matmul") -> Tensor:
    """Matrix product with batch broadcasting; ``out_dtype`` None keeps the input dtype
    (printed ``out_dtype="void"``)."""
    return wrap_nested(_relax_op("matmul")(_expr(a), _expr(b), out_dtype=out_dtype), name)


# ---------------------------------------------------------------------- elementwise unary
def negative(x: Tensor, name: str = "neg") -> Tensor:
    return wrap_nested(_relax_op("negative")(_expr(x)), name)


def exp(x: Tensor, name: str = "exp") -> Tensor:
    return wrap_nested(_relax_op("exp")(_expr(x)), name)


def log(x: Tensor, name: str = "log") -> Tensor:
    return wrap_nested(_relax_op("log")(_expr(x)), name)


def sqrt(x: Tensor, name: str = "sqrt") -> Tensor:
    return wrap_nested(_relax_op("sqrt")(_expr(x)), name)


def square(x: Tensor, name: str = "square") -> Tensor:
    return wrap_nested(_relax_op("square")(_expr(x)), name)


def tanh(x: Tensor, name: str = "tanh") -> Tensor:
    return wrap_nested(_relax_op("tanh")(_expr(x)), name)


def sigmoid(x: Tensor, name: str = "sigmoid") -> Tensor:
    return wrap_nested(_relax_op("sigmoid")(_expr(x)), name)


def floor(x: Tensor, name: str = "floor") -> Tensor:
    return wrap_nested(_relax_op("floor")(_expr(x)), name)


def relu(x: Tensor, name: str = "relu") -> Tensor:
    """``max(x, 0)`` (``R.nn.relu``)."""
    return wrap_nested(_relax_op("nn.relu")(_expr(x)), name)


def relu6(x: Tensor, name: str = "relu6") -> Tensor:
    return wrap_nested(_relax_op("nn.relu6")(_expr(x)), name)


def silu(x: Tensor, name: str = "silu") -> Tensor:
    """``x * sigmoid(x)`` (``R.nn.silu``)."""
    return wrap_nested(_relax_op("nn.silu")(_expr(x)), name)


def gelu(x: Tensor, approximate: str | None = None, name: str = "gelu") -> Tensor:
    """GELU (``R.nn.gelu``; ``approximate="tanh"``: ``R.nn.gelu_tanh``)."""
    if approximate == "tanh":
        return wrap_nested(_relax_op("nn.gelu_tanh")(_expr(x)), name)
    if approximate not in (None, "none"):
        raise ValueError(f"gelu: approximate must be None or 'tanh', got {approximate!r}")
    return wrap_nested(_relax_op("nn.gelu")(_expr(x)), name)


def softmax(x: Tensor, axis: int = -1, name: str = "softmax") -> Tensor:
    """Softmax over ``axis`` (``R.nn.softmax``)."""
    return wrap_nested(_relax_op("nn.softmax")(_expr(x), axis), name)


# ---------------------------------------------------------------------- reductions
def sum(x: Tensor, axis=None, keepdims: bool = False, name: str = "sum") -> Tensor:
    return wrap_nested(_relax_op("sum")(_expr(x), axis, keepdims), name)


def max(x: Tensor, axis=None, keepdims: bool = False, name: str = "max") -> Tensor:
    return wrap_nested(_relax_op("max")(_expr(x), axis, keepdims), name)


def min(x: Tensor, axis=None, keepdims: bool = False, name: str = "min") -> Tensor:
    return wrap_nested(_relax_op("min")(_expr(x), axis, keepdims), name)


def mean(x: Tensor, axis=None, keepdims: bool = False, name: str = "mean") -> Tensor:
    return wrap_nested(_relax_op("mean")(_expr(x), axis, keepdims), name)


# ---------------------------------------------------------------------- shapes and layout
def permute_dims(x: Tensor, axes: list[int] | None = None, name: str = "permute_dims") -> Tensor:
    """Permute the axes (reversed when ``axes`` is None; printed ``axes=None``)."""
    return wrap_nested(_relax_op("permute_dims")(_expr(x), axes=axes), name)


def permute(x: Tensor, axes: list[int] | None, name: str = "permute") -> Tensor:
    return wrap_nested(_relax_op("permute_dims")(_expr(x), axes=axes), name)


def reshape(x: Tensor, shape: Sequence, name: str = "reshape") -> Tensor:
    """Reshape; ``-1`` infers one dimension, ``0`` keeps the input's."""
    return wrap_nested(_relax_op("reshape")(_expr(x), _shape_arg(shape)), name)


def repeat(x: Tensor, repeats: int, axis: int | None = None, name: str = "repeat") -> Tensor:
    return wrap_nested(_relax_op("repeat")(_expr(x), repeats, axis), name)


def squeeze(x: Tensor, axis: int = -1, name: str = "squeeze") -> Tensor:
    return wrap_nested(_relax_op("squeeze")(_expr(x), axis), name)


def unsqueeze(x: Tensor, dim: int, name: str = "unsqueeze") -> Tensor:
    return wrap_nested(_relax_op("expand_dims")(_expr(x), dim), name)


def concat(x: list[Tensor], dim: int, name: str = "concat") -> Tensor:
    """Concatenate along ``dim``."""
    return wrap_nested(_relax_op("concat")([_expr(t) for t in x], dim), name)


def split(ary: Tensor, indices_or_sections, axis: int = 0, name: str = "split"):
    """Split into a tuple of tensors (named ``split_0``, ``split_1``, ...)."""
    return wrap_nested(_relax_op("split")(_expr(ary), indices_or_sections, axis), name)


def chunk(x: Tensor, chunks: int, dim: int = 0, name: str = "chunk"):
    return wrap_nested(_relax_op("split")(_expr(x), chunks, dim), name)


def take(x: Tensor, indices: Tensor, axis: int | None = None, name: str = "take") -> Tensor:
    return wrap_nested(_relax_op("take")(_expr(x), _expr(indices), axis), name)


def astype(x: Tensor, dtype: str, name: str = "astype") -> Tensor:
    """Cast to ``dtype`` (the tensor itself when it already has it)."""
    if x.dtype == dtype:
        return x
    return wrap_nested(_relax_op("astype")(_expr(x), dtype), name)


def broadcast_to(x: Tensor, shape: Sequence, name: str = "broadcast_to") -> Tensor:
    return wrap_nested(_relax_op("broadcast_to")(_expr(x), _shape_arg(shape)), name)


def triu(x: Tensor, diagonal: int = 0, name: str = "triu") -> Tensor:
    return wrap_nested(_relax_op("triu")(_expr(x), diagonal), name)


def full(shape: Sequence, fill_value, dtype: str = "float32", name: str = "full") -> Tensor:
    if isinstance(fill_value, FloatImm | IntImm):
        fill_value = rx.const(fill_value.value, dtype=dtype)
    elif isinstance(fill_value, int | float):
        fill_value = rx.const(fill_value, dtype=dtype)
    else:
        fill_value = _expr(fill_value, "fill_value")
    return wrap_nested(_relax_op("full")(_shape_arg(shape), fill_value, dtype), name)


def zeros(shape: Sequence, dtype: str = "float32", name: str = "zeros") -> Tensor:
    return wrap_nested(_relax_op("zeros")(_shape_arg(shape), dtype), name)


def ones(shape: Sequence, dtype: str = "float32", name: str = "ones") -> Tensor:
    return wrap_nested(_relax_op("ones")(_shape_arg(shape), dtype), name)


def pad(x: Tensor, pad: list[int], mode: str = "constant", value: float = 0.0,
        name: str = "pad") -> Tensor:
    return wrap_nested(_relax_op("nn.pad")(_expr(x), pad_width=pad, pad_mode=mode,
                                           pad_value=value), name)


# ---------------------------------------------------------------------- normalization
def layer_norm(x: Tensor, normalized_shape, weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5, name: str = "layer_norm") -> Tensor:
    """Layer norm over the last ``len(normalized_shape)`` axes (``R.nn.layer_norm``)."""
    if isinstance(normalized_shape, int):
        normalized_shape = [normalized_shape]
    axes = list(range(-len(normalized_shape), 0))
    dtype = x.dtype
    gamma = _expr(weight) if weight is not None else rx.const(np.ones(normalized_shape), dtype)
    beta = _expr(bias) if bias is not None else rx.const(np.zeros(normalized_shape), dtype)
    return wrap_nested(_relax_op("nn.layer_norm")(_expr(x), gamma=gamma, beta=beta, axes=axes,
                                                  epsilon=eps), name)


def rms_norm(x: Tensor, weight: Tensor, axes, epsilon: float = 1e-5,
             name: str = "rms_norm") -> Tensor:
    """RMS norm over ``axes`` (``R.nn.rms_norm``)."""
    return wrap_nested(_relax_op("nn.rms_norm")(_expr(x), _expr(weight), axes, epsilon), name)


def group_norm(x: Tensor, num_groups: int, weight: Tensor | None, bias: Tensor | None,
               eps: float = 1e-5, channel_axis: int = 1, axes: list[int] | None = None,
               name: str = "group_norm") -> Tensor:
    """Group norm (``R.nn.group_norm``); ``axes`` defaults to all axes after the first two."""
    if axes is None:
        axes = list(range(2, x.ndim))
    gamma = _expr(weight) if weight is not None else None
    beta = _expr(bias) if bias is not None else None
    return wrap_nested(_relax_op("nn.group_norm")(_expr(x), gamma, beta, num_groups,
                                                  channel_axis=channel_axis, axes=axes,
                                                  epsilon=eps), name)


# ---------------------------------------------------------------------- convolution
def conv1d(x: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
           dilation=1, groups: int = 1, name: str = "conv1d") -> Tensor:
    """1-D convolution, NCW / OIW; the bias is reshaped to ``[1, -1, 1]`` and added."""
    out = _relax_op("nn.conv1d")(data=_expr(x), weight=_expr(weight), strides=stride,
                                 padding=padding, dilation=dilation, groups=groups)
    if bias is not None:
        out = _relax_op("add")(out, _relax_op("reshape")(_expr(bias), [1, -1, 1]))
    return wrap_nested(out, name)


def conv2d(x: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
           dilation=1, groups: int = 1, data_layout: str = "NCHW", name: str = "conv2d") -> Tensor:
    """2-D convolution (NCHW or NHWC data, OIHW weight); the bias is broadcast and added."""
    out = _relax_op("nn.conv2d")(data=_expr(x), weight=_expr(weight), strides=stride,
                                 padding=padding, dilation=dilation, data_layout=data_layout,
                                 groups=groups)
    if bias is not None:
        if data_layout == "NCHW":
            shape = [1, -1, 1, 1]
        elif data_layout == "NHWC":
            shape = [1, 1, 1, -1]
        else:
            raise NotImplementedError(f"conv2d: cannot add a bias for layout {data_layout}")
        out = _relax_op("add")(out, _relax_op("reshape")(_expr(bias), shape))
    return wrap_nested(out, name)


def conv1d_transpose(x: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
                     output_padding=0, dilation=1, groups: int = 1,
                     name: str = "conv1d_transpose") -> Tensor:
    """1-D transposed convolution (NCW / IOW)."""
    out = _relax_op("nn.conv1d_transpose")(data=_expr(x), weight=_expr(weight), strides=stride,
                                           padding=padding, output_padding=output_padding,
                                           dilation=dilation, groups=groups)
    if bias is not None:
        out = _relax_op("add")(out, _relax_op("reshape")(_expr(bias), [1, -1, 1]))
    return wrap_nested(out, name)


def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor,
                                 attn_mask: Tensor | None = None, is_causal: bool = False,
                                 scale: float | None = None,
                                 name: str = "scaled_dot_product_attention") -> Tensor:
    """Attention over ``[batch, seq, heads, head_dim]`` tensors (``R.nn.attention``)."""
    if attn_mask is not None:
        raise NotImplementedError("scaled_dot_product_attention: attn_mask is not supported")
    causal_mask = "TopLeft" if is_causal else None
    return wrap_nested(_relax_op("nn.attention")(_expr(query), _expr(key), _expr(value),
                                                 causal_mask=causal_mask, scale=scale), name)


# ---------------------------------------------------------------------- calls out of the module
def _out_sinfo(out, what: str):
    """The struct info of ``out``: an ``nn.Tensor`` placeholder or a tuple/list of them."""
    if isinstance(out, Tensor):
        return out._expr.struct_info
    if isinstance(out, list | tuple) and out and all(isinstance(t, Tensor) for t in out):
        return [t._expr.struct_info for t in out]
    raise TypeError(f"nn.{what}: out must be an nn.Tensor placeholder or a list of them, got "
                    f"{type(out).__name__}")


def _arg_expr(arg, what: str):
    if isinstance(arg, Tensor):
        return arg._expr
    if isinstance(arg, int | float):
        return rx.PrimValue(arg)
    if isinstance(arg, PrimExpr):
        return rx.PrimValue(arg)
    raise TypeError(f"nn.{what}: unsupported argument {type(arg).__name__} {arg!r}")


def extern(name: str, args: Sequence, out) -> Tensor:
    """Call the external (packed) function ``name`` destination-passing style:
    ``R.call_dps_packed(name, args, out_sinfo)``, ``out`` giving the result's shape."""
    from ...op.base import call_dps_packed

    call = call_dps_packed(name, [_arg_expr(a, "extern") for a in args],
                           _out_sinfo(out, "extern"))
    return wrap_nested(call, name)


def tensor_expr_op(tensor_expr_func, name_hint: str, args: Sequence, *,
                   attrs: dict | None = None) -> Tensor:
    """Apply a te (topi) function to ``args``: a PrimFunc named ``name_hint`` added to the
    module and called with ``R.call_tir``."""
    bb = _current_builder("tensor_expr_op")
    te_args = [a._expr if isinstance(a, Tensor) else a for a in args]
    call = bb.call_te(tensor_expr_func, *te_args, primfunc_name_hint=name_hint,
                      primfunc_attrs=attrs)
    return wrap_nested(call, name_hint)


def tensor_ir_op(func, name_hint: str, args, out) -> Tensor:
    """Call the TIR PrimFunc ``func`` (added to the module as ``name_hint``) on ``args``
    (tensors; ints and PrimExprs become its symbolic ``tir_vars``) with ``R.call_tir``."""
    from ...op.base import call_tir

    bb = _current_builder("tensor_ir_op")
    args = list(args) if isinstance(args, list | tuple) else [args]
    tensors = [a._expr for a in args if isinstance(a, Tensor)]
    tir_vars = [a for a in args if not isinstance(a, Tensor)]
    for a in tir_vars:
        if not isinstance(a, int | PrimExpr):
            raise TypeError(f"nn.tensor_ir_op: unsupported argument {type(a).__name__} {a!r}")
    gv = bb.add_func(func, name_hint)
    call = call_tir(gv, tensors, _out_sinfo(out, "tensor_ir_op"),
                    rx.ShapeExpr(tir_vars) if tir_vars else None)
    return wrap_nested(call, name_hint)


def _current_builder(what: str) -> BlockBuilder:
    bb = BlockBuilder.current()
    if bb is None:
        raise RuntimeError(f"nn.{what} can only be applied while a module is being exported "
                           "(inside nn.Module.export_tvm)")
    return bb


def _shape_arg(shape):
    """A shape argument: ints and tir expressions (nn.Tensor shapes mix both)."""
    if isinstance(shape, int | PrimExpr):
        return [shape]
    return list(shape)


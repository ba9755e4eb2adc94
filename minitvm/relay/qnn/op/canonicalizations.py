"""Lookup-table lowering of quantized elementwise functions (TVM's
``relay.qnn.op.canonicalizations``): every bit pattern of the 8/16-bit input is dequantized,
passed through the float function and quantized once, at compile time; at run time the
input's bits index the table with ``gather``."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ...expr import Constant, const


def run_const_expr(expr) -> np.ndarray:
    """Evaluate a closed Relay expression to a numpy array."""
    from ....ir.module import IRModule
    from ...build_module import create_executor

    return create_executor("debug", mod=IRModule.from_expr(expr)).evaluate()().numpy()


def _scalar(e, what: str):
    if not isinstance(e, Constant) or e.data.numpy().size != 1:
        raise ValueError(f"a lookup table needs a constant scalar {what}, got {e!r}")
    return e.data.numpy().item()


def create_integer_lookup_table(floating_point_func: Callable[[np.ndarray], np.ndarray],
                                input_scale, input_zero_point, output_scale,
                                output_zero_point, in_axis: int = -1, out_axis: int = -1,
                                in_dtype: str = "uint8", out_dtype: str = "uint8") -> np.ndarray:
    """The table ``quantize(f(dequantize(b)))`` for every bit pattern ``b`` of ``in_dtype``,
    indexed by the pattern read as unsigned."""
    from .qnn import dequantize, quantize

    for dt in (in_dtype, out_dtype):
        if not np.issubdtype(np.dtype(dt), np.integer):
            raise ValueError(f"Only integer dtypes allowed got {in_dtype} and {out_dtype} for "
                             "in and out dtypes.")
    bits = np.iinfo(in_dtype).bits
    patterns = np.arange(0, 2 ** bits, dtype=f"uint{bits}").view(in_dtype)
    real = run_const_expr(dequantize(const(patterns, in_dtype), input_scale, input_zero_point,
                                     axis=in_axis))
    with np.errstate(all="ignore"):
        mapped = np.asarray(floating_point_func(real), "float32")
        # (nan/inf entries, e.g. sqrt of negative inputs, saturate like the float program)
        return run_const_expr(quantize(const(mapped, "float32"), output_scale,
                                       output_zero_point, out_axis, out_dtype))


def create_integer_lookup_op(input_arg, floating_point_func, in_scale, in_zero_point,
                             out_scale, out_zero_point, in_axis: int = -1, out_axis: int = -1,
                             in_dtype: str = "uint8", out_dtype: str = "uint8"):
    """``input_arg`` mapped through the lookup table of ``floating_point_func`` (constant
    scalar parameters)."""
    from ...op import tensor as _t
    from ...op import transform as _tr
    from ...op.transform_index import gather

    table = create_integer_lookup_table(
        floating_point_func, const(float(_scalar(in_scale, "input scale")), "float32"),
        const(int(_scalar(in_zero_point, "input zero point")), "int32"),
        const(float(_scalar(out_scale, "output scale")), "float32"),
        const(int(_scalar(out_zero_point, "output zero point")), "int32"),
        in_axis=in_axis, out_axis=out_axis, in_dtype=in_dtype, out_dtype=out_dtype)
    bits = np.iinfo(in_dtype).bits
    index = _t.reinterpret(_tr.reshape(input_arg, [-1]), f"uint{bits}")
    out = gather(const(table), -1, index)
    return _tr.reshape_like(out, input_arg)


__all__ = ["run_const_expr", "create_integer_lookup_table", "create_integer_lookup_op"]

"""The Arm CPU Legalize rule of ``nn.conv2d`` (TVM's ``topi.arm_cpu.conv2d_alter_op.
_conv2d_legalize``): an int8 convolution gets its input channels padded to the vector length
of the kernel TVM's strategy would pick and its output channels to a multiple of 8 (the extra
outputs sliced off), so the int8 intrinsics apply.

The rule decides the vector lengths; the dialect of the call builds the padded program (the
``conv2d_alter_int8_common`` hook, TVM's ``topi.generic.conv2d_alter_int8_common``), so this
library stays below the dialects."""

from __future__ import annotations

from ...ir.dialect import get_hook
from ..nn import conv2d_alter_layout, conv2d_legalize
from .arm_utils import (
    get_tiling_B_interleaved_t,
    is_aarch64_arm,
    is_arm_cpu_target,
    is_dotprod_available,
    is_mmla_available,
)

__all__ = ["is_int8_hw_support", "conv2d_int8_vector_lengths", "_conv2d_legalize",
           "_alter_conv2d_layout"]

# int8 lanes of the Arm kernels' inner products (input and output channel blocks)
_ARM_INT8_LANES = 8


def is_int8_hw_support(data_dtype: str, kernel_dtype: str) -> bool:
    """TVM v0.19's ``topi.arm_cpu.is_int8_hw_support``: both operands of the same 8-bit type
    (its target check is computed but not used)."""
    return data_dtype == kernel_dtype and "int8" in data_dtype


def _picks_native_nhwc_kernel(attrs, data_dtype: str) -> bool:
    """Whether TVM's arm_cpu strategy picks ``conv2d_NHWC_quantized_native`` (the dot-product
    kernel, which takes any number of input channels) for this conv."""
    return attrs["data_layout"] == "NHWC" and attrs["kernel_layout"] == "HWIO" and \
        data_dtype in ("int8", "uint8") and is_dotprod_available()


def conv2d_int8_vector_lengths(attrs, data_type, kernel_type) -> tuple[int, int] | None:
    """(input, output) channel vector lengths TVM's Arm rule pads an int8 conv2d to, or None
    when the rule leaves the op alone."""
    if not is_int8_hw_support(str(kernel_type.dtype), str(kernel_type.dtype)):
        return None
    in_len = _ARM_INT8_LANES
    if _picks_native_nhwc_kernel(attrs, str(data_type.dtype)):
        in_len = int(data_type.shape[3])
    return in_len, _ARM_INT8_LANES


def _conv2d_legalize(attrs, inputs, arg_types):
    """TVM's Arm ``conv2d_legalize`` (needs an Arm target in scope): the channel-padded int8
    convolution, None to keep the op."""
    data_type, kernel_type, out_type = arg_types[0], arg_types[1], arg_types[2]
    lengths = conv2d_int8_vector_lengths(attrs, data_type, kernel_type)
    if lengths is None:
        return None
    data, kernel = inputs
    return get_hook("conv2d_alter_int8_common", data)(
        data, data_type, kernel, kernel_type, out_type, attrs, str(kernel_type.dtype), *lengths)


@conv2d_legalize.register("arm_cpu")
def _conv2d_legalize_arm_key(attrs, inputs, arg_types):
    """Targets carrying the ``arm_cpu`` key."""
    return _conv2d_legalize(attrs, inputs, arg_types)


@conv2d_legalize.register("cpu")
def _conv2d_legalize_cpu(attrs, inputs, arg_types):
    """``topi.nn.conv2d_legalize`` under a CPU target: the Arm rule where the target is an Arm
    CPU (``-device=arm_cpu``); other CPUs keep the op (TVM's x86 int8 legalization is not done
    here)."""
    if not is_arm_cpu_target():
        return None
    return _conv2d_legalize(attrs, inputs, arg_types)



_INT8 = ("int8", "uint8")


def _alter_conv2d_layout(attrs, inputs, tinfos, out_type):
    """TVM's Arm ``conv2d_alter_layout`` for the int8 NHWC/HWIO templates its strategy picks
    without tuning records: on AArch64 the GEMM kernels (the weight pre-transformed into
    interleaved tiles: ``contrib_conv2d_gemm_weight_transform`` +
    ``contrib_conv2d_gemm_without_weight_transform``), elsewhere the spatial-pack kernel on
    int16 operands. None keeps the op (float NHWC, and the NCHW templates, whose blocking comes
    from tuning configurations)."""
    data_type, kernel_type = tinfos
    if attrs["data_layout"] != "NHWC" or attrs["kernel_layout"] != "HWIO" or \
            str(data_type.dtype) not in _INT8 or str(kernel_type.dtype) not in _INT8:
        return None
    make = get_hook("make_op_call", inputs[0])
    if not is_aarch64_arm():  # conv2d_nhwc_spatial_pack.arm_cpu
        if str(data_type.dtype) != str(kernel_type.dtype):
            return None
        data, kernel = (make("cast", [x], {"dtype": "int16"}) for x in inputs)
        return make("nn.conv2d", [data, kernel], dict(attrs))
    # the dot-product kernel reads A as it is; the others (i8mm, plain) interleave A
    interleave_a = is_mmla_available() or not is_dotprod_available()
    rows, cols = get_tiling_B_interleaved_t(interleave_a)
    weight = make("nn.contrib_conv2d_gemm_weight_transform", [inputs[1]],
                  {"tile_rows": rows, "tile_cols": cols})
    return make("nn.contrib_conv2d_gemm_without_weight_transform", [inputs[0], weight],
                dict(attrs))


@conv2d_alter_layout.register("arm_cpu")
def _conv2d_alter_layout_arm_key(attrs, inputs, tinfos, out_type):
    """Targets carrying the ``arm_cpu`` key."""
    return _alter_conv2d_layout(attrs, inputs, tinfos, out_type)

"""The x86 AlterOpLayout rule of ``nn.conv2d``: an NCHW / OIHW convolution becomes
``nn.contrib_conv2d_NCHWc`` (depthwise: ``nn.contrib_depthwise_conv2d_NCHWc``) on channel blocks
that fill the target's vector registers, as TVM's x86 conv2d templates pick them by default.

The rule decides the blocking; the dialect of the call builds the new call (the ``make_op_call``
hook of ``ir.dialect``), so this library stays below the dialects."""

from __future__ import annotations

from ...ir.dialect import get_hook
from ...target import Target
from ..nn import conv2d_alter_layout
from .utils import get_simd_32bit_lanes, is_x86_target, target_has_sse42

__all__ = ["conv2d_channel_blocks", "conv2d_int8_channel_blocks", "conv2d_nchwc_attrs",
           "conv2d_nchwc_int8_attrs", "_alter_conv2d_layout"]

# int8 elements one 32-bit lane of TVM's x86 int8 dot product (vpdpbusd, pmaddubsw) reduces
_INT8_ELEMS = 4


def _largest_divisor(n: int, limit: int) -> int:
    """The largest b in [1, limit] dividing n."""
    for b in range(min(limit, n), 0, -1):
        if n % b == 0:
            return b
    return 1


def conv2d_channel_blocks(in_channels: int, out_channels: int, lanes: int) -> tuple[int, int]:
    """(ic_bn, oc_bn) of TVM's fallback x86 conv2d configuration: the output block is the
    largest divisor of the output channels up to the SIMD width, the input block the largest
    divisor of the input channels up to the output block."""
    if in_channels < 1 or out_channels < 1 or lanes < 1:
        raise ValueError(f"conv2d_channel_blocks: channels and lanes must be positive, got "
                         f"{in_channels}, {out_channels}, {lanes}")
    oc_bn = _largest_divisor(out_channels, lanes)
    return _largest_divisor(in_channels, oc_bn), oc_bn


def conv2d_int8_channel_blocks(in_channels: int, out_channels: int,
                               lanes: int) -> tuple[int, int] | None:
    """(ic_bn, oc_bn) of TVM's fallback x86 int8 conv2d configuration: output blocks of one
    register of int32 lanes, input blocks the largest of oc_bn, oc_bn - 4, ... dividing the input
    channels. None where TVM's fallback asserts: output channels not a multiple of the lanes,
    or input channels not a multiple of 4 (Legalize pads them first in TVM's flow)."""
    if in_channels < 1 or out_channels < 1 or lanes < 1:
        raise ValueError(f"conv2d_int8_channel_blocks: channels and lanes must be positive, got "
                         f"{in_channels}, {out_channels}, {lanes}")
    if out_channels % lanes or in_channels % _INT8_ELEMS:
        return None
    oc_bn = max(lanes, _INT8_ELEMS)
    ic_bn = next(bn for bn in range(oc_bn, 0, -_INT8_ELEMS) if in_channels % bn == 0)
    return ic_bn, oc_bn


def _static(dims) -> tuple | None:
    out = []
    for d in dims:
        try:
            out.append(int(d))
        except TypeError:
            return None
    return tuple(out)


def _int_pair(value) -> tuple[int, int]:
    v = tuple(int(x) for x in value)
    return (v[0], v[0]) if len(v) == 1 else (v[0], v[1])


def conv2d_nchwc_attrs(attrs, data_type, kernel_type, lanes: int) -> tuple[str, dict] | None:
    """(op name, attrs) of the blocked convolution TVM's x86 rule turns this conv2d into, or
    None when the rule keeps the op (not NCHW/OIHW, grouped, dynamic channels, or a depthwise
    case x86 leaves to the generic kernel)."""
    if attrs["data_layout"] != "NCHW" or attrs["kernel_layout"] != "OIHW":
        return None
    dshape, kshape = _static(data_type.shape[1:2]), _static(kernel_type.shape)
    if dshape is None or kshape is None or len(data_type.shape) != 4 or len(kshape) != 4:
        return None
    in_channels, (out_channels, multiplier, _, _) = dshape[0], kshape
    groups = int(attrs["groups"])
    new = dict(attrs)
    new["channels"] = out_channels
    if groups == 1:
        ic_bn, oc_bn = conv2d_channel_blocks(in_channels, out_channels, lanes)
        new["data_layout"] = f"NCHW{ic_bn}c"
        new["kernel_layout"] = f"OIHW{ic_bn}i{oc_bn}o"
        new["out_layout"] = f"NCHW{oc_bn}c"
        return "nn.contrib_conv2d_NCHWc", new
    if groups == in_channels == out_channels and multiplier == 1 and \
            _int_pair(attrs["dilation"]) == (1, 1):
        ic_bn, oc_bn = conv2d_channel_blocks(in_channels, out_channels, lanes)
        new["data_layout"] = f"NCHW{ic_bn}c"
        new["kernel_layout"] = f"OIHW1i{oc_bn}o"
        new["out_layout"] = f"NCHW{oc_bn}c"
        return "nn.contrib_depthwise_conv2d_NCHWc", new
    return None


def conv2d_nchwc_int8_attrs(attrs, data_type, kernel_type, lanes: int) -> dict | None:
    """The attrs of the ``nn.contrib_conv2d_NCHWc`` TVM's x86 int8 template
    (``conv2d_NCHWc_int8.x86``) turns a uint8 x int8 NCHW conv2d into: data NCHW{ic}c, kernel
    OIHW{ic/4}i{oc}o4i (the input-channel block split again into the 4 bytes one int32 lane
    reduces), out NCHW{oc}c. None keeps the op (not NCHW/OIHW, grouped, dynamic channels, or
    channel counts the template cannot block)."""
    if attrs["data_layout"] != "NCHW" or attrs["kernel_layout"] != "OIHW" or \
            int(attrs["groups"]) != 1 or len(data_type.shape) != 4:
        return None
    dshape, kshape = _static(data_type.shape[1:2]), _static(kernel_type.shape)
    if dshape is None or kshape is None or len(kshape) != 4:
        return None
    blocks = conv2d_int8_channel_blocks(dshape[0], kshape[0], lanes)
    if blocks is None:
        return None
    ic_bn, oc_bn = blocks
    new = dict(attrs)
    new["channels"] = kshape[0]
    new["data_layout"] = f"NCHW{ic_bn}c"
    new["kernel_layout"] = f"OIHW{ic_bn // _INT8_ELEMS}i{oc_bn}o{_INT8_ELEMS}i"
    new["out_layout"] = f"NCHW{oc_bn}c"
    return new


def _int8_hw_support(data_dtype: str, kernel_dtype: str, mcpu: str) -> bool:
    """TVM's ``topi.x86.is_int8_hw_support``: uint8 data, int8 kernel, an SSE4.2 CPU or newer."""
    return data_dtype == "uint8" and kernel_dtype == "int8" and target_has_sse42(mcpu)


def _alter_conv2d_layout(attrs, inputs, tinfos, out_type):
    """TVM's ``topi.x86.conv2d_alter_op._alter_conv2d_layout`` (needs a target in scope): the
    blocked convolution for an NCHW conv2d, None to keep the op."""
    data_type, kernel_type = tinfos
    lanes = get_simd_32bit_lanes()
    if int(attrs["groups"]) == 1 and _int8_hw_support(
            str(data_type.dtype), str(kernel_type.dtype), Target.current().mcpu):
        # TVM's strategy picks the int8 template (conv2d_NCHWc_int8.x86) for this conv
        new_attrs = conv2d_nchwc_int8_attrs(attrs, data_type, kernel_type, lanes)
        if new_attrs is None:
            return None
        return get_hook("make_op_call", inputs[0])("nn.contrib_conv2d_NCHWc", list(inputs),
                                                   new_attrs)
    plan = conv2d_nchwc_attrs(attrs, data_type, kernel_type, lanes)
    if plan is None:
        return None
    op_name, new_attrs = plan
    return get_hook("make_op_call", inputs[0])(op_name, list(inputs), new_attrs)


@conv2d_alter_layout.register("cpu")
def _conv2d_alter_layout_cpu(attrs, inputs, tinfos, out_type):
    """``topi.nn.conv2d_alter_layout`` under a CPU target: the x86 rule where the target is
    x86, the Arm rule under ``-device=arm_cpu`` (TVM dispatches it on the ``arm_cpu`` key, which
    our targets do not add), other CPUs keep the op."""
    from ..arm_cpu import conv2d_alter_op as arm_rule
    from ..arm_cpu.arm_utils import is_arm_cpu_target

    if is_arm_cpu_target():
        return arm_rule._alter_conv2d_layout(attrs, inputs, tinfos, out_type)
    if not is_x86_target():
        return None
    return _alter_conv2d_layout(attrs, inputs, tinfos, out_type)

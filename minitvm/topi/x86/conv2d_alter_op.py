"""The x86 AlterOpLayout rule of ``nn.conv2d``: an NCHW / OIHW convolution becomes
``nn.contrib_conv2d_NCHWc`` (depthwise: ``nn.contrib_depthwise_conv2d_NCHWc``) on channel blocks
that fill the target's vector registers, as TVM's x86 conv2d templates pick them by default.

The rule decides the blocking; the dialect of the call builds the new call (the ``make_op_call``
hook of ``ir.dialect``), so this library stays below the dialects."""

from __future__ import annotations

from ...ir.dialect import get_hook
from ...target import Target
from ..nn import conv2d_alter_layout
from .utils import get_simd_32bit_lanes, is_x86_target, target_has_avx512, target_has_vnni

__all__ = ["conv2d_channel_blocks", "conv2d_nchwc_attrs", "_alter_conv2d_layout"]


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


def _int8_hw_support(data_dtype: str, kernel_dtype: str, mcpu: str) -> bool:
    return data_dtype == "uint8" and kernel_dtype == "int8" and (
        target_has_vnni(mcpu) or target_has_avx512(mcpu))


def _alter_conv2d_layout(attrs, inputs, tinfos, out_type):
    """TVM's ``topi.x86.conv2d_alter_op._alter_conv2d_layout`` (needs a target in scope): the
    blocked convolution for an NCHW conv2d, None to keep the op."""
    data_type, kernel_type = tinfos
    lanes = get_simd_32bit_lanes()
    if _int8_hw_support(str(data_type.dtype), str(kernel_type.dtype), Target.current().mcpu):
        return None  # TVM's int8 (VNNI / AVX-512) template re-blocks by 4-wide dot products
    plan = conv2d_nchwc_attrs(attrs, data_type, kernel_type, lanes)
    if plan is None:
        return None
    op_name, new_attrs = plan
    return get_hook("make_op_call", inputs[0])(op_name, list(inputs), new_attrs)


@conv2d_alter_layout.register("cpu")
def _conv2d_alter_layout_cpu(attrs, inputs, tinfos, out_type):
    """``topi.nn.conv2d_alter_layout`` under a CPU target: the x86 rule where the target is
    x86 (other CPUs, e.g. ``-device=arm_cpu``, keep the op: their rules are not implemented)."""
    if not is_x86_target():
        return None
    return _alter_conv2d_layout(attrs, inputs, tinfos, out_type)

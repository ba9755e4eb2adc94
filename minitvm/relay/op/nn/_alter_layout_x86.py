"""The x86 AlterOpLayout rules of ``nn.conv2d`` and ``nn.dense`` (TVM's ``alter_op_layout_conv2d``
/ ``alter_op_layout_dense`` dispatching to ``topi.x86``), the layout rules of ``nn.dense`` and
``nn.contrib_dense_pack``, and the ``make_op_call`` hook through which topi's rules build calls.

The rules act only while an LLVM target naming an x86 ``-mcpu`` is in scope
(``with tvm.target.Target("llvm -mcpu=skylake-avx512")``): a plain ``llvm`` target, or none,
keeps every op as it is, so the kernels of a default ``relay.build`` do not change (TVM re-blocks
under any CPU target; here the caller opts in by naming the CPU)."""

from __future__ import annotations

from ....ir.dialect import register_hook
from ....topi.x86 import conv2d_alter_op, dense_alter_op
from ....topi.x86.utils import is_x86_target
from ...expr import ExprWithOp
from ..layout import Layout
from ..op import register_alter_op_layout, register_infer_correct_layout
from ..tensor import cast
from ._contrib_more import contrib_dense_pack, contrib_depthwise_conv2d_nchwc
from ._winograd import (
    contrib_conv2d_gemm_weight_transform,
    contrib_conv2d_gemm_without_weight_transform,
)
from .nn import contrib_conv2d_nchwc, conv2d

_CONSTRUCTORS = {
    "nn.contrib_conv2d_NCHWc": contrib_conv2d_nchwc,
    "nn.contrib_depthwise_conv2d_NCHWc": contrib_depthwise_conv2d_nchwc,
    "nn.contrib_dense_pack": contrib_dense_pack,
    # the Arm int8 rules (topi.arm_cpu.conv2d_alter_op)
    "nn.contrib_conv2d_gemm_weight_transform": contrib_conv2d_gemm_weight_transform,
    "nn.contrib_conv2d_gemm_without_weight_transform":
        contrib_conv2d_gemm_without_weight_transform,
    "nn.conv2d": conv2d,
    "cast": cast,
}


def make_op_call(op_name: str, args: list, attrs: dict):
    """A Relay call of ``op_name`` on ``args`` with the attributes ``attrs`` (by keyword)."""
    ctor = _CONSTRUCTORS.get(op_name)
    if ctor is None:
        raise ValueError(f"make_op_call: no Relay constructor is known for {op_name!r}; known: "
                         f"{sorted(_CONSTRUCTORS)}")
    return ctor(*args, **attrs)


register_hook("make_op_call", ExprWithOp, make_op_call)


@register_alter_op_layout("nn.conv2d")
def alter_op_layout_conv2d(attrs, inputs, tinfos, out_type):
    """NCHW conv2d -> blocked NCHW{c}c convolution under an x86 target; otherwise None."""
    if not is_x86_target():
        return None
    return conv2d_alter_op._alter_conv2d_layout(attrs, inputs, tinfos, out_type)


@register_alter_op_layout("nn.dense")
def alter_op_layout_dense(attrs, inputs, tinfos, out_type):
    """dense -> contrib_dense_pack with an NC{n}n weight under an x86 target; otherwise None."""
    if not is_x86_target():
        return None
    return dense_alter_op._alter_dense_layout(attrs, inputs, tinfos, out_type)


def _two_dim(types) -> bool:
    return len(types) == 2 and all(len(getattr(t, "shape", ())) in (2, 3, 4) for t in types) and \
        len(types[0].shape) == 2


@register_infer_correct_layout("nn.dense")
def infer_correct_layout_dense(attrs, new_in, old_in, types):
    """A 2-D dense reads NC data and NC weights and writes NC, as TVM states it."""
    if not _two_dim(types) or len(types[1].shape) != 2:
        return [None] * len(old_in), [None], attrs
    return [Layout("NC"), Layout("NC")], [Layout("NC")], attrs


@register_infer_correct_layout("nn.contrib_dense_pack")
def infer_correct_layout_dense_pack(attrs, new_in, old_in, types):
    """NC data and weights in the op's ``weight_layout`` (NC{n}n, NC16n4c); NC output."""
    if not _two_dim(types):
        return [None] * len(old_in), [None], attrs
    return [Layout("NC"), Layout(attrs.weight_layout)], [Layout("NC")], attrs

"""The x86 AlterOpLayout rule of ``nn.dense``: the weight is packed into ``NC{n}n`` blocks of
output rows and the op becomes ``nn.contrib_dense_pack``, as TVM's default ``dense_pack.x86``
configuration packs it when no tuning record exists."""

from __future__ import annotations

from ...ir.dialect import get_hook
from ...target import Target
from ..nn import dense_alter_layout
from .utils import get_simd_32bit_lanes, is_x86_target, target_has_vnni, target_libs

__all__ = ["dense_pack_block", "_alter_dense_layout"]

# libraries whose dense kernels TVM prefers over its packed template on x86
_EXTERNAL_GEMM = ("cblas", "mkl", "dnnl")


def dense_pack_block(units, lanes: int) -> int:
    """The packed block of output rows: the largest divisor of ``units`` up to two vector
    registers of fp32 lanes (a symbolic ``units`` counts as 16, as TVM does)."""
    if lanes < 1:
        raise ValueError(f"dense_pack_block: lanes must be positive, got {lanes}")
    try:
        n = int(units)
    except TypeError:
        n = 16
    for b in range(min(2 * lanes, n), 0, -1):
        if n % b == 0:
            return b
    return 1


def _vnni_packable(data_type, weight_type) -> bool:
    """uint8 data times int8 weights with (16, 4)-divisible (N, K), under a VNNI CPU."""
    try:
        n, k = (int(d) for d in weight_type.shape)
    except TypeError:
        return False
    return str(data_type.dtype) == "uint8" and str(weight_type.dtype) == "int8" and \
        n % 16 == 0 and k % 4 == 0 and target_has_vnni(Target.current().mcpu)


def _alter_dense_layout(attrs, inputs, tinfos, out_type):
    """TVM's ``topi.x86.dense_alter_op._alter_dense_layout`` (needs a target in scope):
    ``nn.contrib_dense_pack`` with an ``NC{n}n`` weight for a 2-D dense, None to keep the op."""
    data_type, weight_type = tinfos
    if len(data_type.shape) != 2 or len(weight_type.shape) != 2:
        return None
    if any(lib in _EXTERNAL_GEMM for lib in target_libs()):
        return None
    if _vnni_packable(data_type, weight_type):  # TVM's VNNI kernel: 16 rows x 4 bytes blocks
        return get_hook("make_op_call", inputs[0])(
            "nn.contrib_dense_pack", list(inputs),
            {"weight_layout": "NC16n4c", "units": None, "out_dtype": str(out_type.dtype)})
    block = dense_pack_block(weight_type.shape[0], get_simd_32bit_lanes())
    return get_hook("make_op_call", inputs[0])(
        "nn.contrib_dense_pack", list(inputs),
        {"weight_layout": f"NC{block}n", "units": None, "out_dtype": str(out_type.dtype)})


@dense_alter_layout.register("cpu")
def _dense_alter_layout_cpu(attrs, inputs, tinfos, out_type):
    """``topi.nn.dense_alter_layout`` under a CPU target: the x86 rule where the target is x86."""
    if not is_x86_target():
        return None
    return _alter_dense_layout(attrs, inputs, tinfos, out_type)

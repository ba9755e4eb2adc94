"""``stop_fusion``: a fusion barrier (Relay's ``annotation.stop_fusion`` for Relax; minitvm's own,
TVM's Relax has no such op).

``y = R.stop_fusion(x)`` is ``x``, materialized: FuseOps sees an opaque binding, so ``x``'s
producers end their group at ``x`` and ``y``'s consumers start a new one; FuseOps then binds
``y`` to ``x`` itself (no copy). TVM's Relax marks a materialized value only by making it a
dataflow block output (FuseOps never fuses an external reference into its consumers), which
CanonicalizeBindings undoes for a value used only inside the block; an op keeps the intent in
the program through every pass. LegalizeOps leaves it alone (it must reach FuseOps);
RemoveStopFusion strips it where no FuseOps runs."""

from __future__ import annotations

from ...ir.op import Op, OpPattern
from ..expr import Call, Expr
from ..struct_info import StructInfo
from ._common import arg_sinfo, fail
from .base import register_op_rule

__all__ = ["stop_fusion"]


def _infer_stop_fusion(call: Call, ctx) -> StructInfo:
    if len(call.args) != 1:
        fail(call, f"expects one argument, got {len(call.args)}")
    return arg_sinfo(call, 0)


register_op_rule("relax.stop_fusion", _infer_stop_fusion, pattern=OpPattern.OPAQUE,
                 num_inputs=1, arguments=("data",),
                 description="The input, materialized: FuseOps never fuses across it.")


def stop_fusion(data: Expr) -> Call:
    """``data`` as a fusion barrier: what produces it and what consumes the result are never
    fused into one kernel (``data`` is computed into memory once)."""
    return Call(Op.get("relax.stop_fusion"), [data])

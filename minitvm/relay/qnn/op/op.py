"""Registration helpers of quantized ops (TVM's ``relay.qnn.op.op``)."""

from __future__ import annotations

from ....ir.op import register_op_attr


def register_qnn_legalize(op_name: str, legal_op=None, level: int = 10):
    """Register ``legal_op(attrs, inputs, types)`` as the QnnLegalize rule of ``op_name``."""
    return register_op_attr(op_name, "FTVMQnnLegalize", legal_op, level)


def register_qnn_canonicalize(op_name: str, legal_op=None, level: int = 10):
    """Register ``legal_op(attrs, inputs, types)`` as the QnnCanonicalize rule of ``op_name``."""
    return register_op_attr(op_name, "FTVMQnnCanonicalize", legal_op, level)


__all__ = ["register_qnn_legalize", "register_qnn_canonicalize"]

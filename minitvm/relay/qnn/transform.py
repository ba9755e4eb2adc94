"""tvm.relay.qnn.transform: the quantized-op passes under TVM's names."""

from __future__ import annotations


def Legalize():  # noqa: N802 - TVM's name
    """QnnLegalize: apply the ops' target-dependent ``FTVMQnnLegalize`` rules."""
    from ..transform.qnn_legalize import QnnLegalize

    return QnnLegalize()


def CanonicalizeOps():  # noqa: N802 - TVM's name
    """QnnCanonicalize: lower every qnn op to integer Relay (``FTVMQnnCanonicalize``)."""
    from ..transform.qnn_legalize import QnnCanonicalize

    return QnnCanonicalize()


__all__ = ["Legalize", "CanonicalizeOps"]

"""QnnLegalize and QnnCanonicalize: the two halves of relay.build's ``qnn.Legalize`` group.
They apply the ``FTVMQnnLegalize`` (target-dependent operand dtypes, in
``relay.qnn.op.legalizations``) / ``FTVMQnnCanonicalize`` (integer Relay) hooks of quantized ops;
on float models they change nothing."""

from __future__ import annotations

from ...transform.registry import register_pass
from ...transform.sequential import Sequential
from .function_pass import function_pass
from .legalize import legalize_transform


@register_pass("QnnLegalize")
def QnnLegalize():
    """Apply FTVMQnnLegalize hooks (function pass, opt_level 1, requires InferType)."""
    return function_pass(legalize_transform("FTVMQnnLegalize"), opt_level=1,
                         name="QnnLegalize", required=["InferType"], needs=["typed"])


@register_pass("QnnCanonicalize")
def QnnCanonicalize():
    """Apply FTVMQnnCanonicalize hooks (function pass, opt_level 1, requires InferType)."""
    return function_pass(legalize_transform("FTVMQnnCanonicalize"), opt_level=1,
                         name="QnnCanonicalize", required=["InferType"], needs=["typed"])


def QnnLegalizeGroup() -> Sequential:
    """The ``qnn.Legalize`` Sequential of relay.build (opt_level 0)."""
    return Sequential([QnnLegalize(), QnnCanonicalize()], opt_level=0, name="qnn.Legalize")

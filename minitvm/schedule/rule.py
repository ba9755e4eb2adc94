"""A schedule rule (``Rule``): which stages of an op tag it takes and the loops it writes; the
table of rules by tag is ``rule_registry.RULES``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Rule:
    """A schedule for stages of one op tag.

    kind: "gemm" (a GEMM anchor: fused epilogue applied in place on its output) or any other
    name. ``supported(t, options)`` says whether it takes stage ``t``; ``emit(ctx, t,
    out_buffer, bodies)`` writes the loops. The stage's operands (``attrs["operands"]``, else
    its input tensors) are materialized in buffers (``ctx.buf[id(tensor)]``) before it runs.
    symbolic: the rule is also asked about stages with symbolic extents (else they skip it).
    epilogue: the stage's only materialized reader, when it is an elementwise output, shares its
    buffer and is computed by ``emit`` too (``ctx.epilogues[id(t)]`` names it).
    materialize: an injective stage the rule takes is computed by it on its own, not inlined
    into its readers.
    """

    name: str
    kind: str
    supported: Callable
    emit: Callable
    symbolic: bool = False
    epilogue: bool = False
    materialize: bool = False

"""Tensor-expression definitions (``FTECompute``) of the Relay operators, one module per family.

Each compute is ``fcompute(attrs, inputs: list[te.Tensor], out_type) -> list[te.Tensor]`` and
is registered with ``relay.op.register_compute(op_name, fn)``. The back end lowers a fused
primitive function by calling these and scheduling the result (see relay/backend/schedules.py).
Ops without a compute run through their numpy reference in the graph executor.
"""

from . import _common, tensor, reduce, transform, nn  # noqa: F401

"""list_fake_quantized_op_freqs (TVM's ExtractFakeQuantizedOps): the ops inside fake-quantized
regions of ``main``, counted once per region that contains them."""

from __future__ import annotations

from collections import Counter

from ...ir.op import Op
from ..expr import Call, Function, Let, Var
from ..expr_functor import dataflow_children, post_order_visit, scope_children


def _region_ops(quantize, q_op, dq_op) -> set:
    """The calls (quantize/dequantize left out) reached from ``quantize``'s input, not looking
    behind dequantize calls."""
    found, seen, stack = set(), set(), [quantize.args[0]]
    while stack:
        e = stack.pop()
        if e in seen or isinstance(e, Op):
            continue
        seen.add(e)
        if isinstance(e, Call):
            if e.op == dq_op:
                continue
            if e.op == q_op:
                stack.append(e.args[0])
                continue
            found.add(e)
            stack.append(e.op)
            stack.extend(e.args)
        elif isinstance(e, Function | Let):
            stack.extend(c for c in scope_children(e) if not isinstance(c, Var))
        else:
            stack.extend(dataflow_children(e))
    return found


def list_fake_quantized_op_freqs(mod) -> dict[str, int]:
    """Op name -> how many calls of it lie in the fake-quantized regions of ``mod["main"]``."""
    q_op, dq_op = Op.get("qnn.quantize"), Op.get("qnn.dequantize")
    freqs: Counter = Counter()

    def visit(e):
        if isinstance(e, Call) and e.op == q_op:
            for call in _region_ops(e, q_op, dq_op):
                if isinstance(call.op, Op):
                    freqs[call.op.name] += 1

    post_order_visit(mod["main"], visit)
    return dict(freqs)


__all__ = ["list_fake_quantized_op_freqs"]

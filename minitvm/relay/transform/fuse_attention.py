"""FuseAttention: put each attention ``batch_matmul(softmax(f(batch_matmul(Q, K))), V)`` whose
score matrix is too large for the cache into one ``Primitive`` function, lowered to one kernel.

FuseOps would make three kernels of it (the first product with ``f``, the softmax, the second
product), and the ``rows x cols`` scores would go to memory and back between them. The fused
function keeps the same ops; the scheduler recognizes the chain and computes the scores block
by block of query rows in a cache-resident tile (``schedule.attention``). ``f`` is a chain of
elementwise ``multiply``/``divide``/``add``/``subtract`` with operands that do not change the
scores' shape (a scale, an added mask); the softmax is over the last axis; every intermediate
has no other use. Smaller attentions (``schedule.attention.worth_fusing``) are left to FuseOps.
"""

from __future__ import annotations

from ...ir.op import Op
from ...ir.type import TensorType
from ...schedule.attention import worth_fusing
from ...transform.stats import record_stat
from ..analysis.op_names import calls_any
from ..expr import Call, Constant, Function, Var
from ..expr_functor import ExprMutator
from ._pass_helpers import dataflow_use_counts, register
from .function_pass import function_pass

__all__ = ["FuseAttention", "fuse_attention"]

_ELEMWISE = ("multiply", "divide", "add", "subtract")


def _static_shape(e) -> list[int] | None:
    t = getattr(e, "_checked_type", None)
    if not isinstance(t, TensorType) or t.dtype != "float32":
        return None
    try:
        return [int(d) for d in t.shape]
    except (TypeError, ValueError):  # a symbolic extent
        return None


def _is_call(e, name: str) -> bool:
    return isinstance(e, Call) and isinstance(e.op, Op) and e.op.name == name


def _product(e):
    """A float32 3-d ``batch_matmul`` without ``transpose_a``, else None."""
    if not _is_call(e, "nn.batch_matmul") or e.attrs.transpose_a:
        return None
    shape = _static_shape(e)
    if shape is None or len(shape) != 3 or any(_static_shape(a) is None for a in e.args):
        return None
    return e


def match_attention(call, counts: dict[int, int]):
    """``(scores product, [elementwise calls, outer first], softmax)`` when ``call`` is an
    attention FuseAttention fuses (any size), else None."""
    out = _product(call)
    if out is None or not _is_call(call.args[0], "nn.softmax"):
        return None
    soft = call.args[0]
    shape = _static_shape(soft)
    if shape is None or soft.attrs.axis not in (-1, len(shape) - 1):
        return None
    chain, e = [], soft.args[0]
    inner = [soft]
    while not _is_call(e, "nn.batch_matmul"):
        if not isinstance(e, Call) or not isinstance(e.op, Op) or e.op.name not in _ELEMWISE or \
                _static_shape(e) != shape:
            return None
        a, b = e.args
        # the chain continues in the operand with the scores' shape that is a call
        on_a = isinstance(a, Call) and _static_shape(a) == shape
        on_b = isinstance(b, Call) and _static_shape(b) == shape and e.op.name in (
            "multiply", "add")
        if on_a == on_b:  # (neither, or both: not an elementwise step on the scores)
            return None
        chain.append(e)
        inner.append(e)
        e = a if on_a else b
    score = _product(e)
    if score is None or _static_shape(score) != shape:
        return None
    inner.append(score)
    if any(counts.get(id(x), 0) != 1 for x in inner):
        return None
    return score, chain, soft


class _FuseAttention(ExprMutator):
    def __init__(self, counts: dict[int, int]):
        super().__init__()
        self.counts = counts
        self.count = 0

    def visit_call(self, call):
        found = match_attention(call, self.counts)
        if found is None:
            return super().visit_call(call)
        score, chain, soft = found
        _, rows, cols = _static_shape(score)
        if not worth_fusing(rows, cols):
            return super().visit_call(call)
        args, params = [], []

        def param(e):
            if isinstance(e, Constant):
                return e
            v = Var(f"p{len(params)}", e.checked_type)
            params.append(v)
            args.append(self.visit(e))
            return v

        q, k = (param(a) for a in score.args)
        x = Call(score.op, [q, k], score.attrs, None, score.span)
        for step in reversed(chain):
            a, b = step.args
            on_a = isinstance(a, Call) and _static_shape(a) == _static_shape(step)
            other = param(b if on_a else a)
            x = Call(step.op, [x, other] if on_a else [other, x], step.attrs, None, step.span)
        x = Call(soft.op, [x], soft.attrs, None, soft.span)
        v = param(call.args[1])
        x = Call(call.op, [x, v], call.attrs, None, call.span)
        fn = Function(params, x, call.checked_type).with_attr("Primitive", 1)
        self.count += 1
        return Call(fn, args, None, None, call.span)


def fuse_attention(func):
    """FuseAttention on one function: its large attentions as calls of Primitive functions."""
    m = _FuseAttention(dataflow_use_counts(func.body))
    out = m.visit(func)
    return out, m.count


@register("FuseAttention")
def FuseAttention():  # noqa: N802 - the pass factory's name, as TVM names passes
    """Function pass (opt 3): each large attention chain into one Primitive function."""

    def transform(func, mod, ctx):
        if func.attrs is not None and (func.attrs.get("Primitive", 0) or
                                       func.attrs.get("Compiler")):
            return func
        if not (calls_any(func, ("nn.softmax",)) and calls_any(func, ("nn.batch_matmul",))):
            record_stat("attentions fused", 0)
            return func  # (no softmax or no batch_matmul: no attention)
        out, count = fuse_attention(func)
        record_stat("attentions fused", count)
        return out

    return function_pass(transform, opt_level=3, name="FuseAttention", required=["InferType"],
                         needs=["typed"])

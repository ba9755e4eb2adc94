"""CanonicalizeCast: give each elementwise/broadcast consumer of an up-cast its own copy.

An up-cast (``cast`` to a wider dtype) shared by several elemwise/broadcast calls is duplicated
so that fusion puts one cast in each consumer's group and the groups exchange the narrow tensor.
The first consumer keeps the original cast. Needs types (run InferType first).
"""

from __future__ import annotations

import re

from ...ir.op import Op, OpPattern
from ...transform.stats import record_stat
from ..analysis.op_names import calls_any
from ..expr import Call
from ..expr_functor import ExprMutator
from ._pass_helpers import register
from .function_pass import function_pass

__all__ = ["CanonicalizeCast", "canonicalize_cast", "dtype_bits"]


def dtype_bits(dtype: str) -> int:
    """Bit width of a dtype string (``bool`` is 1)."""
    if dtype == "bool":
        return 1
    m = re.search(r"(\d+)$", dtype)
    if m is None:
        raise ValueError(f"cannot tell the bit width of dtype {dtype!r}")
    return int(m.group(1))


class _CastCanonicalizer(ExprMutator):
    def __init__(self):
        super().__init__()
        self.cast = Op.get("cast")
        self.uses: dict = {}
        self.count = 0

    def _is_upcast(self, e) -> bool:
        if not (isinstance(e, Call) and e.op is self.cast):
            return False
        t = e.args[0]._checked_type
        if t is None:
            raise ValueError("CanonicalizeCast needs the types of cast arguments; "
                             "run relay.transform.InferType() first")
        return dtype_bits(t.dtype) < dtype_bits(e.attrs.dtype)

    def visit_call(self, call):
        op = call.op
        pattern = op.get_attr("TOpPattern") if isinstance(op, Op) else None
        if pattern is None or pattern > OpPattern.BROADCAST:
            return super().visit_call(call)
        args = []
        for a in call.args:
            new = self.visit(a)
            if self._is_upcast(a):
                n = self.uses[a] = self.uses.get(a, 0) + 1
                if n > 1:
                    new = Call(new.op, new.args, new.attrs, new.type_args)
                    self.count += 1
            args.append(new)
        return call.with_fields(args=args)


def canonicalize_cast(expr):
    """CanonicalizeCast on one (type-checked) expression or function."""
    return _CastCanonicalizer().visit(expr)


@register("CanonicalizeCast")
def CanonicalizeCast():  # noqa: N802 - TVM's name
    """Function pass (opt 3, requires InferType): duplicate shared up-casts per consumer."""

    def transform(func, mod, ctx):
        if not calls_any(func, ("cast",)):  # (no cast to duplicate: the same function)
            record_stat("duplicated casts", 0)
            return func
        m = _CastCanonicalizer()
        out = m.visit(func)
        record_stat("duplicated casts", m.count)
        return out

    return function_pass(transform, opt_level=3, name="CanonicalizeCast",
                         required=["InferType"], needs=["typed"])

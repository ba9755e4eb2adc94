"""The import-time value of a Relax value the torch importer built from constants alone: a
QAT model's scale or zero point computed from a buffer (``w.abs().amax(1) / 127``), a fused
conv-bn's scaled weight (``w * (gamma / sqrt(var + eps))``), a ``fake_quant_enabled`` flag --
what FoldConstant would fold after import, evaluated now so that a converter may read it
(``aten_fake_quant_conv``'s integer convs need their scales as numbers). Each operator runs its
numpy reference (``relax.transform.fold_constant.run_reference``), as FoldConstant does."""

from __future__ import annotations

import numpy as np

from ....ir.op import Op
from ....ir.prim_expr import FloatImm, IntImm
from ...expr import Call, Constant, Expr, PrimValue, ShapeExpr, Var
from ...transform.fold_constant import run_reference

__all__ = ["known_value"]

_UNKNOWN = object()


def _leaf(e):
    """The value of a leaf (a constant, a static shape, a number), ``_UNKNOWN`` for a leaf
    without one, None for a variable or a call."""
    if isinstance(e, Constant):
        return e.data.numpy()
    if isinstance(e, ShapeExpr):
        dims = e.values
        return np.array([int(d.value) for d in dims], "int64") \
            if all(isinstance(d, IntImm) for d in dims) else _UNKNOWN
    if isinstance(e, PrimValue):
        v = e.value
        return np.asarray(v.value) if isinstance(v, IntImm | FloatImm) else _UNKNOWN
    if isinstance(e, Var | Call):
        return None
    return _UNKNOWN


def known_value(ctx, v, limit: int = 256) -> np.ndarray | None:
    """``v``'s value (numpy) when it is a Python number, a constant, or a value ``ctx.bb``
    bound to operator calls over such values that all have numpy references and static
    struct info; else None. Walks the bindings with an explicit stack, giving up (None) past
    ``limit`` calls: what it folds is a scale's or a weight's few operators."""
    if v is None:
        return None
    if not isinstance(v, Expr):
        return np.asarray(v)
    memo: dict = {}
    stack, calls = [v], 0
    while stack:
        e = stack[-1]
        if id(e) in memo:
            stack.pop()
            continue
        leaf = _leaf(e)
        call = e if isinstance(e, Call) else ctx.bb.lookup_binding(e) if leaf is None else None
        if leaf is _UNKNOWN or leaf is None and (not isinstance(call, Call) or
                                                 not isinstance(call.op, Op)):
            return None  # (every value on the stack is one v needs)
        if leaf is not None:
            memo[id(e)] = leaf
            stack.pop()
            continue
        pending = [a for a in call.args if id(a) not in memo]
        if pending:
            calls += 1
            if calls > limit:
                return None
            stack.extend(pending)
            continue
        value = run_reference(call, [memo[id(a)] for a in call.args],
                              getattr(e, "struct_info", None))
        if value is None:
            return None
        memo[id(e)] = value
        stack.pop()
    return memo[id(v)]

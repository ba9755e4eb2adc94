"""torch's two- and three-operand math functions that neither dialect has as one operator:
``torch.lerp``, ``torch.hypot`` and (for Relax, which has no ``atan2``) ``torch.atan2``, built
for the importers of both dialects from the operators they share.

``ops`` is the dialect's operator namespace (``relay.op`` or ``relax.op``); ``scalar(v)`` makes
a constant of the operands' float dtype; ``emit`` binds a value used more than once (Relax's
``ctx.emit``; the identity for Relay).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

__all__ = ["atan2", "hypot", "lerp"]


def lerp(ops: Any, start, end, weight, scalar: Callable, emit: Callable = lambda e: e):
    """``start + weight * (end - start)`` the way torch evaluates it: for ``|weight| >= 0.5``
    from the other end, ``end - (end - start) * (1 - weight)``, so that ``weight == 1`` gives
    ``end`` exactly. ``weight``: a Python number (the branch chosen here) or a tensor."""
    diff = emit(ops.subtract(end, start))
    if isinstance(weight, int | float):
        if abs(weight) < 0.5:
            return ops.add(start, ops.multiply(scalar(weight), diff))
        return ops.subtract(end, ops.multiply(diff, scalar(1.0 - weight)))
    weight = emit(weight)
    near = ops.add(start, ops.multiply(weight, diff))
    far = ops.subtract(end, ops.multiply(diff, ops.subtract(scalar(1.0), weight)))
    return ops.where(ops.less(ops.abs(weight), scalar(0.5)), near, far)


def hypot(ops: Any, a, b, emit: Callable = lambda e: e):
    """``sqrt(a * a + b * b)``: equal to torch's ``hypot`` to rounding while the squares stay
    finite (``|a|, |b|`` below about 1.8e19 in float32)."""
    a, b = emit(a), emit(b)
    return ops.sqrt(ops.add(ops.multiply(a, a), ops.multiply(b, b)))


def copysign(ops: Any, a, b, scalar: Callable, emit: Callable = lambda e: e):
    """``|a|`` with the sign of ``b``; a -0.0 in ``b`` counts as negative (``1 / b`` is
    -inf), as torch's ``copysign`` reads the sign bit."""
    a, b = emit(a), emit(b)
    zero = scalar(0.0)
    negative = ops.logical_or(ops.less(b, zero),
                              ops.logical_and(ops.equal(b, zero),
                                              ops.less(ops.divide(scalar(1.0), b), zero)))
    magnitude = emit(ops.abs(a))
    return ops.where(emit(negative), ops.negative(magnitude), magnitude)


def atan2(ops: Any, y, x, scalar: Callable, emit: Callable = lambda e: e):
    """The angle of ``(x, y)`` in ``[-pi, pi]``: the dialect's ``atan2`` where it has one, else
    ``atan(y / x)`` moved by ``pi`` into the left half-plane (``+pi`` for ``y >= 0``) and
    ``+-pi / 2`` (0 at the origin) on the ``y`` axis."""
    if hasattr(ops, "atan2"):
        return ops.atan2(y, x)
    y, x = emit(y), emit(x)
    zero = scalar(0.0)
    base = emit(ops.atan(ops.divide(y, x)))
    turn = ops.where(ops.greater_equal(y, zero), scalar(math.pi), scalar(-math.pi))
    axis = ops.where(ops.greater(y, zero), scalar(math.pi / 2),
                     ops.where(ops.less(y, zero), scalar(-math.pi / 2), zero))
    return ops.where(ops.greater(x, zero), base,
                     ops.where(ops.less(x, zero), ops.add(base, turn), axis))

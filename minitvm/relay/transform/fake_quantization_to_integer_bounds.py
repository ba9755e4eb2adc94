"""The range of an integer expression that FakeQuantizationToInteger built, for the rules that
must prove an int32 accumulation exact (a dense head reading a QAT global pool's int32 sums).

``int_range`` follows the one-input chain below an expression -- layout ops that only move or
select values, ``cast`` of integers (exact where the range fits the target dtype), ``sum`` (the range times
the number of elements reduced), ``add`` / ``subtract`` of a scalar integer constant, ``clip``
-- down to a leaf, whose range is its dtype's, and maps the leaf's range back up. The walk is a
loop capped at ``MAX_DEPTH`` calls (past it, the expression's dtype's range: no recursion;
only the leaf is typed, and a ``sum``'s input for its shape)."""

from __future__ import annotations

import numpy as np

from ..expr import Call, Constant

__all__ = ["int_range", "MAX_DEPTH"]

#: calls followed below an expression before its dtype's range is taken
MAX_DEPTH = 64

# ops whose values are some of their first input's
_MOVES = frozenset({"reshape", "squeeze", "expand_dims", "transpose", "strided_slice",
                    "nn.batch_flatten", "nn.max_pool2d", "max", "min", "broadcast_to",
                    "nn.depth_to_space", "copy"})


def _dtype_range(dtype: str) -> tuple[int, int] | None:
    if not dtype.startswith(("int", "uint")):
        return None
    info = np.iinfo(dtype)
    return int(info.min), int(info.max)


def _type_of(e):
    t = e._checked_type
    if t is None:
        from .infer_type import InferTypeLocal

        t = InferTypeLocal(e)
    return t


def _scalar(e) -> int | None:
    """An integer scalar constant's value, else None."""
    if isinstance(e, Constant) and e.data.numpy().size == 1 and \
            str(e.data.dtype).startswith(("int", "uint")):
        return int(e.data.numpy().reshape(()))
    return None


def _reduced_count(call) -> int:
    """How many elements each output of a ``sum`` adds (a static shape)."""
    shape = [int(getattr(d, "value", d)) for d in _type_of(call.args[0]).shape]
    a = call.attrs
    axes = range(len(shape)) if a.axis is None else [int(v) % len(shape) for v in a.axis]
    if bool(a.exclude):
        axes = [i for i in range(len(shape)) if i not in set(axes)]
    return int(np.prod([shape[i] for i in axes], dtype=np.int64))


def int_range(expr, dtype: str | None = None) -> tuple[int, int] | None:
    """``(lowest, highest)`` values the integer ``expr`` (of ``dtype``, when the caller knows
    it) can take -- a sound bound --, or None for a non-integer expression."""
    steps: list = []  # (kind, value) mapping the range below up through each call, outer first
    e = expr
    for _ in range(MAX_DEPTH):
        if not isinstance(e, Call) or not hasattr(e.op, "name"):
            break
        name, below = e.op.name, e.args[0]
        if name in _MOVES:
            pass
        elif name == "sum":
            steps.append(("scale", _reduced_count(e)))
        elif name in ("add", "subtract") and _scalar(e.args[1]) is not None:
            c = _scalar(e.args[1])
            steps.append(("shift", c if name == "add" else -c))
        elif name == "add" and _scalar(e.args[0]) is not None:
            steps.append(("shift", _scalar(e.args[0])))
            below = e.args[1]
        elif name == "clip":
            steps.append(("clip", (int(np.ceil(e.attrs.a_min)), int(np.floor(e.attrs.a_max)))))
        elif name == "cast":
            steps.append(("cast", str(e.attrs.dtype)))
        else:
            break  # (a leaf: its dtype's range)
        e = below
    else:  # (the cap: the range of the expression's own dtype)
        e, steps = expr, []
    leaf = dtype if e is expr and dtype is not None else str(_type_of(e).dtype)
    found = _dtype_range(leaf)
    while found is None and steps:  # (floats below: the lowest cast's dtype is the leaf)
        kind, v = steps.pop()
        found = _dtype_range(v) if kind == "cast" else None
    if found is None:
        return None
    (lo, hi), bounds = found, found
    for kind, v in reversed(steps):
        if kind == "scale":
            lo, hi = lo * v, hi * v
        elif kind == "shift":
            lo, hi = lo + v, hi + v
        elif kind == "clip":
            lo, hi = max(lo, v[0]), min(hi, v[1])
        else:
            bounds = _dtype_range(v)
            if bounds is None:
                return None
        if lo < bounds[0] or hi > bounds[1]:  # (past its dtype a value wraps: its whole range)
            lo, hi = bounds
    return lo, hi

"""Reshapes whose target holds several run-time sizes (an ONNX model with batch and sequence
both dynamic), written so the Relay type keeps every size it can.

A Relay reshape infers at most one size (-1) and copies the others (0) only from the same
position of its input. ``reshape_to`` takes a target of ints and ``DynamicDim``s and picks, in
order: copies plus one inferred size; a reshape that collapses the run of unknown sizes into one
followed by ``reshape_like`` against the tensor those sizes belong to (``(batch*seq, hidden) ->
(batch, seq, hidden)``); and, failing both, ``dyn.reshape`` by a shape computed at run time
(its type then knows no sizes).
"""

from __future__ import annotations

import numpy as np

from ... import expr as _expr
from ... import op as _op
from ..common import ImportError_
from .dynamic_dim import DynamicDim, one_inferred

__all__ = ["copy_codes", "merge_leading", "reshape_to", "run_time_shape"]


def merge_leading(x, n: int):
    """``x`` with its first ``n`` axes merged into one (TVM's -3 code: each merge keeps the other
    axes' sizes, dynamic or not, in the type)."""
    for _ in range(n - 1):
        x = _op.reshape(x, [-3, -2])
    return x


def run_time_shape(target):
    """An int64 tensor of ``target``'s sizes, the dynamic ones read with ``shape_of`` where they
    live; a clear error for a size with no tensor to read it from."""
    parts = []
    for i, d in enumerate(target):
        if not isinstance(d, DynamicDim):
            parts.append(_expr.const(np.array([int(d)], "int64"), "int64"))
        elif d.tensor is None:
            raise ImportError_(f"a reshape to {tuple(target)}: the size at axis {i} is computed "
                               "at run time and is not the size of a tensor axis")
        else:
            parts.append(_op.strided_slice(_op.shape_of(d.tensor, "int64"), [d.axis],
                                           [d.axis + 1]))
    return parts[0] if len(parts) == 1 else _op.concatenate(parts, axis=0)


def copy_codes(in_shape, target) -> list:
    """``target`` with each dynamic size that ``in_shape`` has at the same position as 0."""
    return [0 if isinstance(d, DynamicDim) and i < len(in_shape) and in_shape[i] == d else d
            for i, d in enumerate(target)]


def _like_run(shape_of, target, unknown: list[int]):
    """(tensor, first axis) whose axes hold ``target[p:q]`` exactly, p..q spanning ``unknown``,
    with only static sizes after q; else None."""
    p, q = unknown[0], unknown[-1] + 1
    src = target[p]
    if src.tensor is None or any(isinstance(d, DynamicDim) for d in target[q:]):
        return None
    dims = shape_of(src.tensor)
    a0 = src.axis
    if a0 + (q - p) > len(dims):
        return None
    for j in range(p, q):
        t, s = target[j], dims[a0 + j - p]
        if isinstance(t, DynamicDim) != isinstance(s, DynamicDim) or t != s:
            return None
    return src.tensor, a0


def reshape_exact(x, dims):
    """``x`` reshaped to ``dims`` (ints and at most one ``DynamicDim``, inferred as -1): a 0
    there is a zero-sized dimension, never reshape's "copy the input's" code."""
    new = one_inferred(dims)
    return _op.reshape(x, new, allowzero=0 in new)


def reshape_to(shape_of, x, in_shape, target, fallback=None):
    """Reshape ``x`` (of ``in_shape``) to ``target`` (ints and ``DynamicDim``s).

    ``shape_of`` is ``Context.shape``; ``fallback`` a run-time shape tensor to use when the
    type cannot keep the sizes (by default one built by ``run_time_shape``)."""
    if not any(isinstance(d, DynamicDim) for d in (*in_shape, *target)):
        return reshape_exact(x, target)
    own = [0 if isinstance(d, DynamicDim) and d.tensor is x and d.axis == i else d
           for i, d in enumerate(target)]  # (x's own sizes in place: copied)
    single = one_inferred(own)
    if single is not None and -1 in single:  # one other run-time size: inferred (-1)
        return _op.reshape(x, single)
    codes = copy_codes(in_shape, target)
    unknown = [i for i, c in enumerate(codes) if isinstance(c, DynamicDim)]
    if len(unknown) <= 1:
        copied = {i for i, c in enumerate(codes) if isinstance(c, int) and c == 0 and
                  isinstance(target[i], DynamicDim)}
        lost = [i for i, d in enumerate(in_shape) if isinstance(d, DynamicDim) and i not in copied]
        if lost and not unknown:
            raise ImportError_(f"a reshape of {tuple(in_shape)} to {tuple(target)}: the dynamic "
                               f"axes {lost} of the input are neither copied nor inferred")
        return _op.reshape(x, [-1 if i in unknown else int(c) for i, c in enumerate(codes)])
    run = _like_run(shape_of, target, unknown)
    if run is not None:
        tensor, a0 = run
        p, q = unknown[0], unknown[-1] + 1
        mid = [int(c) for c in codes[:p]] + [-1] + [int(c) for c in codes[q:]]
        if len(mid) != len(in_shape) or any(
                i != p and c != 0 and (isinstance(in_shape[i], DynamicDim) or c != in_shape[i])
                for i, c in enumerate(mid)):  # (else x has that shape already)
            x = _op.reshape(x, mid)
        return _op.reshape_like(x, tensor, lhs_begin=p, lhs_end=p + 1, rhs_begin=a0,
                                rhs_end=a0 + q - p)
    return _op.reshape(x, run_time_shape(target) if fallback is None else fallback)

"""Shape arithmetic of a dynamic-batch ONNX graph, evaluated at import.

A model exported from PyTorch computes its reshape targets from ``Shape`` (``x.reshape(B, N,
-1)``: Shape -> Gather -> Unsqueeze -> Concat). With a dynamic batch, ``Shape`` is ``shape_of`` at
run time, so those chains are not constants. ``evaluate`` walks such a chain (a few small
integer ops, never into the tensor ``shape_of`` reads) and gives each element as an int, or a
``SizeOf`` for a run-time size: the importer folds chains whose elements are all ints to
constants, and Reshape / Expand turn a ``SizeOf`` into -1, a copied axis or a broadcast.
"""

from __future__ import annotations

import numpy as np

from ....ir.prim_expr import Any
from ....ir.type import TensorType
from ...expr import Call, Constant, Tuple
from ..common import infer_type

__all__ = ["SHAPE_OPS", "SizeOf", "evaluate"]

MAX_NODES = 64  # a shape chain is a handful of ops; anything larger is not one


class SizeOf:
    """A size known only at run time: axis ``axis`` of ``tensor`` (both None when it is
    computed from one, e.g. the batch times the heads). Sizes are never negative.

    ``factors``, where known, is ``(sizes, k)``: the size is the product of ``sizes`` (the
    ``relay.Any()`` objects of the tensors' types it was read from) times the static ``k``
    (``batch * 2``: ``((batch,), 2)``), so a reshape to it can still infer its other sizes
    statically (``ops_tensor._static_inferred``); None for other arithmetic."""

    __slots__ = ("tensor", "axis", "factors")

    def __init__(self, tensor=None, axis: int | None = None, factors: tuple | None = None):
        self.tensor, self.axis, self.factors = tensor, axis, factors


def _factors(v) -> tuple | None:
    """(sizes, k) of an element: an int is ``((), v)``; a ``SizeOf`` its ``factors``."""
    if isinstance(v, SizeOf):
        return v.factors
    return (), int(v)


def _product(x, y) -> SizeOf:
    """The ``SizeOf`` of ``x * y`` (one of them a ``SizeOf``), its factors kept when both
    operands' are known and the static factor is positive."""
    fx, fy = _factors(x), _factors(y)
    if fx is None or fy is None or fx[1] * fy[1] <= 0:
        return SizeOf()
    return SizeOf(factors=(fx[0] + fy[0], fx[1] * fy[1]))


_BINARY = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply,
           "floor_divide": np.floor_divide, "divide": lambda x, y: int(x / y), "floor_mod": np.mod,
           "equal": np.equal, "maximum": np.maximum, "minimum": np.minimum}


_REDUCE = {"prod": "multiply", "sum": "add"}  # (ReduceProd of a shape: the element count)

SHAPE_OPS = _KNOWN = {"shape_of", "where", "cast", "reshape", "expand_dims", "squeeze",
                      "concatenate", "take", "strided_slice", *_BINARY, *_REDUCE}


def _known(e) -> bool:
    if isinstance(e, Constant | Tuple):
        return True
    return isinstance(e, Call) and getattr(e.op, "name", None) in _KNOWN


def _children(e):
    if isinstance(e, Tuple):
        return list(e.fields)
    if isinstance(e, Call) and e.op.name != "shape_of":
        return list(e.args)
    return []


def _binary(name, a, b):
    def one(x, y):
        if isinstance(x, SizeOf) or isinstance(y, SizeOf):
            if name == "equal":  # a size never equals a negative number (Expand's -1 test)
                other = y if isinstance(x, SizeOf) else x
                if not isinstance(other, SizeOf) and other < 0:
                    return False
            return _product(x, y) if name == "multiply" else SizeOf()
        return _BINARY[name](x, y)
    a, b = np.broadcast_arrays(a, b)
    out = np.empty(a.shape, dtype=object)
    for i in np.ndindex(a.shape):
        out[i] = one(a[i], b[i])
    return out


def _reduce(name, v, attrs):
    """``prod`` / ``sum`` of a 1-D chain over its one axis (``numel = ReduceProd(Shape(x))``),
    kept as an array of shape () or (1,); None for other axes."""
    axis = attrs.axis
    axes = [] if axis is None else [int(a) for a in axis]
    if v.ndim != 1 or attrs.exclude or any(a not in (0, -1) for a in axes):
        return None
    acc = 1 if name == "prod" else 0
    for x in v:
        acc = _binary(_REDUCE[name], np.array(acc, dtype=object), np.array(x, dtype=object))[()]
    out = np.empty((1,) if attrs.keepdims else (), dtype=object)
    out[...] = acc
    return out


def _where(c, a, b):
    c, a, b = np.broadcast_arrays(c, a, b)
    out = np.empty(c.shape, dtype=object)
    for i in np.ndindex(c.shape):
        out[i] = SizeOf() if isinstance(c[i], SizeOf) else (a[i] if c[i] else b[i])
    return out


def _one(e, vals: dict):
    """The value of node ``e`` (an object array) from its children's, or None."""
    if isinstance(e, Constant):
        v = e.data.numpy()
        return v.astype(object) if v.dtype.kind in "iub" and v.size <= 64 else None
    if isinstance(e, Tuple):
        return [vals[id(f)] for f in e.fields]
    if not isinstance(e, Call) or not hasattr(e.op, "name"):
        return None
    name, a = e.op.name, e.attrs
    args = [vals.get(id(x)) for x in e.args] if name != "shape_of" else []
    if any(v is None for v in args):
        return None
    if name == "shape_of":
        st = infer_type(e.args[0])
        if not isinstance(st, TensorType):
            return None
        return np.array([SizeOf(e.args[0], i, ((d,), 1)) if isinstance(d, Any) else int(d)
                         for i, d in enumerate(st.shape)] or [], dtype=object)
    if name in _BINARY:
        return _binary(name, args[0], args[1])
    if name == "where":
        return _where(*args)
    if name in _REDUCE:
        return _reduce(name, args[0], a)
    if name == "cast":
        return args[0]
    if name in ("reshape", "expand_dims", "squeeze"):
        t = infer_type(e)
        return args[0].reshape(t.concrete_shape) if isinstance(t, TensorType) and \
            t.is_static() else None
    if name == "concatenate":
        return np.concatenate([np.atleast_1d(v) for v in args[0]], axis=int(a.axis))
    if name == "take":
        idx = args[1]
        if any(isinstance(i, SizeOf) for i in np.ravel(idx)):
            return None
        picked = np.take(args[0], idx.astype(np.int64),
                         axis=0 if a.axis is None else int(a.axis), mode="clip")
        if isinstance(picked, np.ndarray):
            return picked
        out = np.empty((), dtype=object)  # (one element, kept an array)
        out[()] = picked
        return out
    if name == "strided_slice" and args[0].ndim == 1:
        begin, end = int(a.begin[0]), int(a.end[0])
        step = int(a.strides[0]) if a.strides else 1
        return args[0][slice(begin, end, step)]
    return None


def evaluate(expr) -> np.ndarray | None:
    """The elements of the small integer tensor ``expr`` (ints and ``SizeOf``), or None when
    it is not shape arithmetic this knows."""
    order, stack, seen = [], [(expr, False)], set()
    while stack:
        e, done = stack.pop()
        if done:
            order.append(e)
            continue
        if id(e) in seen:
            continue
        if not _known(e):  # (a tensor op, a variable: not shape arithmetic; stop at once)
            return None
        seen.add(id(e))
        if len(seen) > MAX_NODES:
            return None
        stack.append((e, True))
        stack.extend((c, False) for c in _children(e))
    vals: dict = {}
    for e in order:
        v = _one(e, vals)
        if v is None:
            return None
        vals[id(e)] = v
    out = vals.get(id(expr))
    return out if isinstance(out, np.ndarray) else None

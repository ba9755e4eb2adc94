"""Runtime values of the Relay executors: tuples (ADT), constructor values, references, closures.

Inside the interpreter tensors are numpy arrays and tuples are Python tuples; ``to_python_value``
turns a result into what TVM users see (``tvm.nd.NDArray``, an indexable ``ADT`` for tuples,
``ConstructorValue`` / ``RefValue`` / closures). Conversions use explicit stacks, so a
100,000-long ADT list converts without deep Python recursion.
"""

from __future__ import annotations

import numpy as np

from ...runtime.container import ADT
from ...runtime.ndarray import NDArray

__all__ = ["ADT", "ConstructorValue", "RefValue", "Closure", "to_python_value", "to_internal"]


class ConstructorValue:
    """A value built by an ADT constructor: ``.tag``, ``.fields`` and the ``.constructor``."""

    __slots__ = ("tag", "fields", "constructor")

    def __init__(self, tag: int, fields, constructor=None):
        self.tag = tag
        self.fields = list(fields)
        self.constructor = constructor

    def __repr__(self):
        name = self.constructor.name_hint if self.constructor is not None else f"tag{self.tag}"
        return f"ConstructorValue({name}, {len(self.fields)} fields)"


class RefValue:
    """A mutable reference cell (``ref(v)``)."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __repr__(self):
        return f"RefValue({self.value!r})"


class Closure:
    """A function value: the Relay Function and the values of its free variables."""

    __slots__ = ("func", "env")

    def __init__(self, func, env: dict):
        self.func = func
        self.env = env

    def __repr__(self):
        names = ", ".join(p.name_hint for p in self.func.params)
        return f"Closure(fn ({names}))"


def _convert(value, leaf, make_tuple):
    """Rebuild a value bottom-up, applying ``leaf`` to tensors and ``make_tuple`` to tuples.

    Works on an explicit stack; a sub-value shared several times is converted once.
    """
    if not isinstance(value, tuple | list | ADT | ConstructorValue | RefValue):
        return leaf(value)
    seen: dict = {}
    out_root: list = []
    stack = [(value, out_root, None)]
    while stack:
        v, sink, parts = stack.pop()
        if parts is not None:  # all fields of v are converted: build it
            if isinstance(v, ConstructorValue):
                new = ConstructorValue(v.tag, parts, v.constructor)
            elif isinstance(v, RefValue):
                new = RefValue(parts[0])
            else:
                new = make_tuple(parts)
            seen[id(v)] = new
            sink.append(new)
            continue
        if id(v) in seen:
            sink.append(seen[id(v)])
            continue
        if isinstance(v, ConstructorValue):
            fields = v.fields
        elif isinstance(v, RefValue):
            fields = [v.value]
        elif isinstance(v, tuple | list | ADT):
            fields = list(v)
        else:
            sink.append(leaf(v))
            continue
        parts = []
        stack.append((v, sink, parts))
        for f in reversed(fields):
            stack.append((f, parts, None))
    return out_root[0]


def _to_ndarray(v):
    if isinstance(v, np.ndarray):
        return NDArray(v)
    if isinstance(v, np.generic):
        return NDArray(np.asarray(v))
    return v


def _to_numpy(v):
    if isinstance(v, NDArray):
        return v.numpy()
    if isinstance(v, np.generic):
        return np.asarray(v)
    return v


def to_python_value(value):
    """Tensors become ``tvm.nd.NDArray``; tuples become ``ADT``s; other values are kept."""
    return _convert(value, _to_ndarray, lambda parts: ADT(0, parts))


def to_internal(value):
    """Inverse of ``to_python_value``: NDArrays become numpy arrays, tuples Python tuples."""
    return _convert(value, _to_numpy, tuple)

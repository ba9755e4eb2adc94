"""``relay.build_module.bind_params_by_name``: replace named parameters by constants."""

from __future__ import annotations

import numpy as np

from ...ir.type import TensorType
from ...runtime.ndarray import NDArray
from ..expr import Constant, Function, bind

__all__ = ["bind_params_by_name"]


def bind_params_by_name(func: Function, params: dict) -> Function:
    """Bind ``params`` (name -> array) to ``func``'s parameters of those names.

    Bound parameters are removed from the signature; names that match no parameter are ignored.
    Beyond TVM, a value whose shape contradicts the parameter's annotation is an error; a shape
    that differs only by unit dimensions (TVM's GCN tutorial binds a ``(n,)`` bias to a
    ``(n, 1)`` parameter) binds as TVM does, with the value's own shape. A dtype that differs
    binds as in TVM (its pattern-language docs bind float64 ones to a float32 weight): the
    value keeps its dtype and type inference reports the clash where an operator meets it.
    """
    if not isinstance(func, Function):
        raise TypeError(f"bind_params_by_name expects a relay.Function, got {type(func).__name__}")
    by_name: dict = {}
    repeated: set = set()
    for p in func.params:
        if p.name_hint in by_name:
            repeated.add(p.name_hint)
        else:
            by_name[p.name_hint] = p
    binds = {}
    for name, value in params.items():
        var = by_name.get(name)
        if var is None:
            continue
        if name in repeated:
            raise ValueError(f"Multiple args in the function have name {name}")
        arr = value.numpy() if isinstance(value, NDArray) else np.asarray(value)
        t = var.type_annotation
        if isinstance(t, TensorType):
            shape = tuple(t.shape)
            static = all(isinstance(d, int) for d in shape)
            if static and _squeezed(shape) != _squeezed(arr.shape):
                raise ValueError(f"parameter {name!r} is annotated {t.dtype}{list(shape)} but the "
                                 f"bound value is {arr.dtype}{list(arr.shape)}")
        binds[var] = Constant(value if isinstance(value, NDArray) else arr)
    return bind(func, binds) if binds else func


def _squeezed(shape) -> tuple:
    return tuple(d for d in shape if d != 1)

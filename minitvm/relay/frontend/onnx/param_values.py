"""Initializers kept as parameters (``from_onnx(..., freeze_params=False)``) read as constants
where a converter needs a constant.

An ONNX model may hold a Reshape's shape, a Slice's starts or a Resize's scales as
initializers. Kept as parameters they are Relay variables, and a converter that needs the value
at import (a static shape) could not read it. As TVM's importer reads such a shape from its
``params`` (Reshape's shape tensor), ``with_param_values`` substitutes the initializers' values
into a small expression built from them alone (a parameter, or a few ops over parameters), so
that it folds to a constant; a parameter only read this way drops out of the function.
"""

from __future__ import annotations

import numpy as np

from ...expr import Call, Constant, Tuple, TupleGetItem, Var, bind
from .shape_values import SHAPE_OPS

__all__ = ["with_param_values"]

MAX_NODES = 64  # an argument computed from initializers alone is a handful of ops
MAX_SHAPE_ELEMENTS = 64  # an integer initializer read as a shape (or axes, pads, ...)


def _params_of(e, consts: dict, shape_arithmetic: bool) -> list | None:
    """The parameters ``e`` is computed from, when it reads no other variable (with
    ``shape_arithmetic``: none but through ``shape_of``, and only shape-arithmetic ops) and is
    small; else None."""
    found, stack, seen = [], [e], set()
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        if len(seen) > MAX_NODES:
            return None
        if isinstance(n, Var):
            if n not in consts:
                return None
            found.append(n)
        elif isinstance(n, Call):
            name = getattr(n.op, "name", None)
            if shape_arithmetic and name not in SHAPE_OPS:
                return None
            if name != "shape_of" or not shape_arithmetic:
                stack.extend(n.args)
        elif isinstance(n, Tuple):
            stack.extend(n.fields)
        elif isinstance(n, TupleGetItem) and not shape_arithmetic:
            stack.append(n.tuple_value)
        elif not isinstance(n, Constant):
            return None
    return found


def with_param_values(e, consts: dict, integer_only: bool = False,
                      shape_arithmetic: bool = False):
    """``e`` with the parameters it is computed from replaced by their constants (``consts``:
    parameter variable -> Constant), when it reads nothing else; else ``e`` unchanged.
    ``integer_only``: only when every such parameter is a small integer tensor (a shape);
    ``shape_arithmetic``: ``e`` may also read tensors' shapes (``shape_of``), through the
    small integer ops of shape arithmetic only (``shape_values``)."""
    if not consts or isinstance(e, Constant):
        return e
    used = _params_of(e, consts, shape_arithmetic)
    if not used:
        return e
    if integer_only and any(consts[v].data.numpy().dtype.kind not in "iu" or
                            consts[v].data.numpy().size > MAX_SHAPE_ELEMENTS for v in used):
        return e
    if isinstance(e, Var):
        return consts[e]
    return bind(e, {v: consts[v] for v in used})


def param_constants(params: dict, variables: dict) -> dict:
    """Parameter variable -> its value as a Constant, for each initializer kept a parameter
    (``params``: name -> NDArray, ``variables``: name -> its Var)."""
    from ...expr import const

    out = {}
    for name, arr in params.items():
        v = np.asarray(arr.numpy())
        out[variables[name]] = const(v, str(v.dtype))
    return out

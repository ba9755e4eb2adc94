"""Near ties in the keys of a program's selections: where an order is not the program's to fix.

``argsort``, ``sort`` and ``topk`` of a *computed* float key order elements whose values the
compiled code and the interpreter may round one ulp apart (our ``tanh`` is monotone where
numpy's returns one value for neighbouring inputs): two keys that are equal within the compare
tolerance may come out in either order, and the indices (and whatever is gathered by them)
differ with both sides right. ``near_tie`` finds such keys, so a difference they explain is
reported as "boundary-dependent" instead of a mismatch. Keys that are parameters or constants are
exact on both sides, so ties there still have to follow the op's tie rule.
"""

from __future__ import annotations

import numpy as np

from ...ir.type import TensorType

__all__ = ["near_tie", "relax_near_boundary", "selection_keys"]

SELECTION_OPS = frozenset({"argsort", "sort", "topk"})


def selection_keys(func) -> list:
    """``(key, axis)`` of every selection in ``func`` whose key is a computed float value that
    depends only on ``func``'s parameters (a key inside a loop body reads the loop's variables
    and cannot be evaluated on its own)."""
    from ...relay import expr as rx
    from ...relay.analysis import free_vars
    from ...relay.expr_functor import post_order_visit

    params = set(func.params)
    found: list = []

    def visit(node) -> None:
        if not (isinstance(node, rx.Call) and getattr(node.op, "name", None) in SELECTION_OPS):
            return
        key = node.args[0]
        if isinstance(key, (rx.Var, rx.Constant)):
            return
        ty = getattr(key, "_checked_type", None)
        if not isinstance(ty, TensorType) or not str(ty.dtype).startswith("float"):
            return
        if set(free_vars(key)) <= params:
            found.append((key, int(node.attrs.axis) % max(len(ty.shape), 1)))

    post_order_visit(func.body, visit)
    return found


def near_tie(mod, inputs: list, rtol: float) -> str | None:
    """Where a selection key of ``mod["main"]`` has two elements along its axis within ``rtol``
    (relative to the key's scale) of each other at ``inputs``: a description; else None."""
    from ...relay import expr as rx
    from ...relay.build_module import create_executor
    from ...relay.transform import InferType
    from .differential import flatten

    func = mod["main"]
    keys = selection_keys(func)
    if not keys:
        return None
    probe = mod.shallow_copy()
    probe["main"] = rx.Function(list(func.params), rx.Tuple([k for k, _ in keys]))
    probe = InferType()(probe)
    with np.errstate(all="ignore"):
        values = flatten(create_executor("debug", mod=probe).evaluate()(*inputs))
    for (_, axis), value in zip(keys, values, strict=True):
        v = np.sort(value.astype("float64"), axis=axis)
        if v.shape[axis] < 2:
            continue
        gaps = np.abs(np.diff(v, axis=axis))
        fin = np.isfinite(v)
        scale = max(1.0, float(np.abs(v[fin]).max())) if fin.any() else 1.0
        close = gaps <= rtol * scale
        if close.any():
            return (f"a {value.dtype} selection key of shape {value.shape} has "
                    f"{int(close.sum())} neighbouring pair(s) within {rtol:g} of each other along axis "
                    f"{axis}")
    return None


# ------------------------------------------------------------------ Relax
#: Relax ops whose result jumps where an operand crosses a point: the points, as a function of
#: the operand values (an array of distances to the nearest point, same shape).
_INTEGER_POINTS = frozenset({"relax.floor", "relax.ceil", "relax.trunc"})
_COMPARISONS = frozenset({"relax.greater", "relax.less", "relax.equal", "relax.not_equal",
                          "relax.greater_equal", "relax.less_equal"})
_RELAX_SELECTIONS = frozenset({"relax.argmax", "relax.argmin", "relax.sort", "relax.argsort",
                               "relax.topk"})


def _scaled(dist: np.ndarray, x: np.ndarray, rtol: float) -> bool:
    """Whether some distance is within ``rtol`` of the operand's scale."""
    fin = np.isfinite(x)
    if not fin.any():
        return False
    scale = max(1.0, float(np.abs(x[fin]).max()))
    return bool((np.abs(dist[np.isfinite(dist)]) <= rtol * scale).any())


def _gaps(x: np.ndarray, axis) -> np.ndarray:
    """Differences of neighbours after sorting along ``axis`` (all elements when None)."""
    v = np.sort(x.reshape(-1) if axis is None else x, axis=0 if axis is None else axis)
    ax = 0 if axis is None else axis
    return np.diff(v, axis=ax) if v.shape[ax] > 1 else np.zeros(0)


def _relax_boundary(call, values: list, rtol: float) -> str | None:
    name = getattr(call.op, "name", "")
    x = values[0]
    if not isinstance(x, np.ndarray) or x.dtype.kind != "f" or x.size == 0:
        return None
    x = x.astype("float64")
    if name == "relax.astype" and np.dtype(str(call.attrs.dtype)).kind in "iub" \
            or name in _INTEGER_POINTS:
        near = _scaled(x - np.round(x), x, rtol)
    elif name == "relax.round":
        near = _scaled(np.abs(x - np.floor(x)) - 0.5, x, rtol)
    elif name in ("relax.floor_divide", "relax.floor_mod"):
        with np.errstate(all="ignore"):
            q = x / values[1].astype("float64")
        near = _scaled(q - np.round(q), q, rtol)
    elif name in _COMPARISONS:
        y = np.broadcast_to(values[1].astype("float64"), np.broadcast_shapes(
            x.shape, values[1].shape))
        near = _scaled(np.broadcast_to(x, y.shape) - y, np.concatenate(
            [x.reshape(-1), y.reshape(-1)]), rtol)
    elif name in _RELAX_SELECTIONS:
        axis = getattr(call.attrs, "axis", None)
        axis = None if axis is None else int(axis) % max(x.ndim, 1)
        near = _scaled(_gaps(x, axis), x, rtol)
    else:
        return None
    return f"{name[len('relax.'):]} of a computed value near its boundary" if near else None


def relax_near_boundary(mod, inputs: list, rtol: float, outputs=None) -> str | None:
    """Where an op feeding ``outputs`` (indices into main's result tuple; None: all) jumps --
    a float -> int cast, floor / ceil / trunc / round, floor_divide / floor_mod, a comparison,
    a sort or arg-max -- and takes a computed float operand within ``rtol`` of its jump at
    ``inputs``: a description; else None. Operands that are parameters or constants are exact
    on both sides and not counted."""
    from ...relax.analysis import free_vars
    from ...relax.expr import Call, Constant, SeqExpr, Tuple
    from .relax_reference import binding_uses, evaluate, feeding

    func = mod["main"]
    env: dict = {}
    with np.errstate(all="ignore"):
        evaluate(mod, inputs, env=env)
    uses, order = binding_uses(func)
    result = func.body.body if isinstance(func.body, SeqExpr) else func.body
    if outputs is not None and isinstance(result, Tuple):
        roots = [v for k in outputs if k < len(result.fields)
                 for v in free_vars(result.fields[k])]
    else:
        roots = free_vars(result)
    live = feeding(roots, uses)
    params = set(func.params)
    for b in order:
        var, v = b.var, b.value
        if var not in live or not isinstance(v, Call) or var not in env or not v.args:
            continue
        first = v.args[0]
        if first in params or isinstance(first, Constant):
            continue
        values = [a.data.numpy() if isinstance(a, Constant) else env.get(a) for a in v.args]
        if any(val is None for val in values[:2]):
            continue
        found = _relax_boundary(v, [np.asarray(val) for val in values], rtol)
        if found:
            return f"{var.name_hint} = {found}"
    return None

"""Near ties in the keys of a program's selections: where an order is not the program's to fix.

``argsort``, ``sort`` and ``topk`` of a *computed* float key order elements whose values the
compiled code and the interpreter may round one ulp apart (our ``tanh`` is monotone where
numpy's returns one value for neighbouring inputs): two keys that are equal within the compare
tolerance may come out in either order, and the indices (and whatever is gathered by them)
differ with both sides right. ``near_tie`` finds such keys, so a difference they explain is
reported as "tie-dependent" instead of a mismatch. Keys that are parameters or constants are
exact on both sides, so ties there still have to follow the op's tie rule.
"""

from __future__ import annotations

import numpy as np

from ...ir.type import TensorType

__all__ = ["near_tie", "selection_keys"]

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

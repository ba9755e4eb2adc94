"""Operands near a jump (a sort key's near tie, a cast near an integer): where a result is not
the program's to fix.

``argsort``, ``sort`` and ``topk`` of a *computed* float key order elements whose values the
compiled code and the interpreter may round one ulp apart (our ``tanh`` is monotone where
numpy's returns one value for neighbouring inputs): two keys that are equal within the compare
tolerance may come out in either order, and the indices (and whatever is gathered by them)
differ with both sides right. The same holds for every op that jumps: a float -> int cast, a
floor / round of a value within rounding of an integer (a running sum of a softmax ending at
0.99999994 or 1.0), a comparison of near-equal values. ``near_tie`` (Relay) and
``relax_near_boundary`` find such operands, so a difference they explain is reported as
"boundary-dependent" instead of a mismatch. Operands that are parameters or constants are exact
on both sides, so ties there still have to follow the op's tie rule.
"""

from __future__ import annotations

import numpy as np

from ...ir.type import TensorType

__all__ = ["jump_calls", "near_tie", "relax_near_boundary", "selection_keys"]

SELECTION_OPS = frozenset({"argsort", "sort", "topk"})


def _computed_float_calls(func, ops, operands: int) -> list:
    """Calls of ``func`` to an op of ``ops`` whose first operand is a computed float value (no
    parameter or constant: those are exact on both sides) and whose first ``operands``
    operands depend only on ``func``'s parameters (one inside a loop body reads the loop's
    variables and cannot be evaluated on its own)."""
    from ...relay import expr as rx
    from ...relay.analysis import free_vars
    from ...relay.expr_functor import post_order_visit

    params = set(func.params)
    found: list = []

    def visit(node) -> None:
        if not (isinstance(node, rx.Call) and getattr(node.op, "name", None) in ops):
            return
        first = node.args[0]
        if isinstance(first, (rx.Var, rx.Constant)):
            return
        ty = getattr(first, "_checked_type", None)
        if not isinstance(ty, TensorType) or not str(ty.dtype).startswith("float"):
            return
        if all(set(free_vars(a)) <= params for a in node.args[:operands]):
            found.append(node)

    post_order_visit(func.body, visit)
    return found


def selection_keys(func) -> list:
    """``(key, axis)`` of every selection in ``func`` whose key is a computed float value that
    depends only on ``func``'s parameters."""
    return [(c.args[0], int(c.attrs.axis) % max(len(c.args[0]._checked_type.shape), 1))
            for c in _computed_float_calls(func, SELECTION_OPS, 1)]


def jump_calls(func) -> list:
    """Calls of ``func`` to an op that jumps (``JUMP_OPS``) whose first operand is a computed
    float value and whose first two operands depend only on ``func``'s parameters."""
    return _computed_float_calls(func, JUMP_OPS, 2)


def near_tie(mod, inputs: list, rtol: float) -> str | None:
    """Where an op of ``mod["main"]`` that jumps (a sort key's near tie, a cast / floor / round
    near an integer, a comparison of near-equal values...) takes a computed float operand within
    ``rtol`` (relative to its scale) of the jump at ``inputs``: a description; else None."""
    from ...relay import expr as rx
    from ...relay.build_module import create_executor
    from ...relay.transform import InferType
    from .differential import flatten

    func = mod["main"]
    calls = jump_calls(func)
    if not calls:
        return None
    operands = [a for c in calls for a in c.args[:2]]
    probe = mod.shallow_copy()
    probe["main"] = rx.Function(list(func.params), rx.Tuple(operands))
    probe = InferType()(probe)
    with np.errstate(all="ignore"):
        values = flatten(create_executor("debug", mod=probe).evaluate()(*inputs))
    k = 0
    for c in calls:
        m = len(c.args[:2])
        found = _boundary(c.op.name, c.attrs, values[k:k + m], rtol)
        k += m
        if found:
            return found
    return None


# ------------------------------------------------------------------ Relax
#: Relax ops whose result jumps where an operand crosses a point: the points, as a function of
#: the operand values (an array of distances to the nearest point, same shape).
_INTEGER_POINTS = frozenset({"floor", "ceil", "trunc"})
_COMPARISONS = frozenset({"greater", "less", "equal", "not_equal", "greater_equal",
                          "less_equal"})
_SELECTIONS = frozenset({"argmax", "argmin", "sort", "argsort", "topk"})
#: every op ``_boundary`` knows a jump of
JUMP_OPS = _INTEGER_POINTS | _COMPARISONS | _SELECTIONS | {
    "round", "floor_divide", "floor_mod", "mod", "astype", "cast", "sign"}


def _scaled(dist: np.ndarray, x: np.ndarray, rtol: float) -> bool:
    """Whether some distance is within ``rtol`` of the operand's scale."""
    fin = np.isfinite(x)
    if not fin.any():
        return False
    scale = max(1.0, float(np.abs(x[fin]).max()))
    return bool((np.abs(dist[np.isfinite(dist)]) <= rtol * scale).any())


def _gaps(x: np.ndarray, axis) -> np.ndarray:
    """Differences of neighbours after sorting along ``axis`` (all elements when None); an
    exact tie of integer values (a cast of a bool or int, a floor) is no rounding's doing and
    counts as far (inf): the op's tie rule decides it on both sides."""
    v = np.sort(x.reshape(-1) if axis is None else x, axis=0 if axis is None else axis)
    ax = 0 if axis is None else axis
    if v.shape[ax] < 2:
        return np.zeros(0)
    gaps = np.diff(v, axis=ax)
    lower = np.take(v, np.arange(v.shape[ax] - 1), axis=ax)
    with np.errstate(invalid="ignore"):
        exact = (gaps == 0) & (lower == np.round(lower))
    return np.where(exact, np.inf, gaps)


def _boundary(name: str, attrs, values: list, rtol: float) -> str | None:
    """Whether bare op ``name`` (Relax's without ``relax.``, or Relay's) at operand ``values``
    is within ``rtol`` of a jump: a description; else None."""
    x = values[0]
    if not isinstance(x, np.ndarray) or x.dtype.kind != "f" or x.size == 0:
        return None
    x = x.astype("float64")
    to = getattr(attrs, "dtype", None) if name in ("astype", "cast") else None
    if to is not None and np.dtype(str(to)).kind in "iub" or name in _INTEGER_POINTS:
        near = _scaled(x - np.round(x), x, rtol)
    elif name == "sign":  # jumps at 0 (a variance of equal values: 0 or one rounding off)
        near = _scaled(x, x, rtol)
    elif name == "round":
        near = _scaled(np.abs(x - np.floor(x)) - 0.5, x, rtol)
    elif name in ("floor_divide", "floor_mod", "mod") and len(values) > 1:
        # (mod: Relay's truncating remainder, which jumps where the quotient crosses an
        # integer as floor_mod does: seed 1000224, exp(log(|x| + 1)) mod (|x| + 1))
        with np.errstate(all="ignore"):
            q = x / np.asarray(values[1]).astype("float64")
        near = _scaled(q - np.round(q), q, rtol)
    elif name in _COMPARISONS and len(values) > 1:
        b = np.asarray(values[1]).astype("float64")
        y = np.broadcast_to(b, np.broadcast_shapes(x.shape, b.shape))
        near = _scaled(np.broadcast_to(x, y.shape) - y, np.concatenate(
            [x.reshape(-1), y.reshape(-1)]), rtol)
    elif name in _SELECTIONS:
        axis = getattr(attrs, "axis", None)
        if isinstance(axis, list | tuple):
            axis = axis[0] if len(axis) == 1 else None
        axis = None if axis is None else int(axis) % max(x.ndim, 1)
        near = _scaled(_gaps(x, axis), x, rtol)
    else:
        return None
    return f"{name} of a computed value near its boundary" if near else None


def _relax_boundary(call, values: list, rtol: float) -> str | None:
    name = getattr(call.op, "name", "")
    return _boundary(name[len("relax."):], call.attrs, values, rtol) \
        if name.startswith("relax.") else None


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

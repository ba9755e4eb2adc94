"""relay.transform.recast: hard-cast chosen operators to another dtype (TVM v0.19's helper).

Every call of one of ``ops`` (``nn.conv2d`` by default) gets each argument wrapped in
``cast(arg, dtype)``, its ``out_dtype`` attribute (where the op has one) set to ``out_dtype``,
and its result cast back to the dtype it had (the old ``out_dtype`` when set, else its inferred
type), so the rest of the graph is unchanged. Layers are numbered from the input side as TVM
numbers them: ``count_layers - (matching calls above it on the first path that reaches it) - 1``,
and ``skip_layers`` (negative counts from the last layer) leaves those layers alone. It is meant
for timing operators at another dtype: the casts lose precision by design.
"""

from __future__ import annotations

from ...ir.module import IRModule
from ...ir.op import Op
from ..adt import Match
from ..analysis.model_stats import count_layers
from ..expr import Call, Function, Let
from ..expr_functor import ExprMutator, dataflow_children, scope_children
from ..op.tensor import cast
from .infer_type import InferTypeLocal

__all__ = ["recast"]

_SCOPES = (Function, Let, Match)


def _children(e) -> tuple:
    """The sub-expressions TVM's recursive mutator visits, in its order (ops left out)."""
    if isinstance(e, _SCOPES):
        return scope_children(e)
    return dataflow_children(e)  # () for leaves


def _layer_numbers(expr, valid_ops: frozenset, layer_count: int) -> dict:
    """id(call) -> layer number of every matching call, replaying TVM's depth counter."""
    layers: dict = {}
    seen: set = set()
    depth = 0
    stack: list = [(expr, None)]
    while stack:
        e, reset = stack.pop()
        if e is None:  # an argument is done: the counter goes back to the call's own depth
            depth = reset
            continue
        if id(e) in seen or isinstance(e, Op):
            continue
        seen.add(id(e))
        if type(e) is Call:
            own = depth
            if isinstance(e.op, Op) and e.op in valid_ops:
                layers[id(e)] = layer_count - own - 1
                depth += 1
            todo = [(e.op, None)]
            for a in e.args:
                todo.append((a, None))
                todo.append((None, own))
            stack.extend(reversed(todo))
        else:
            stack.extend((c, None) for c in reversed(_children(e)))
    return layers


class _Recast(ExprMutator):
    """Casts the operands and results of the matching calls not skipped."""

    def __init__(self, dtype: str, out_dtype: str, layers: dict, skip: frozenset):
        super().__init__()
        self.dtype = dtype
        self.out_dtype = out_dtype
        self.layers = layers
        self.skip = skip

    def visit_call(self, call):
        new = super().visit_call(call)
        layer = self.layers.get(id(call))
        if layer is None or layer in self.skip:
            return new
        args = [cast(a, self.dtype) for a in new.args]
        attrs = call.attrs
        orig_dtype = None
        if attrs is not None and "out_dtype" in attrs.keys():
            old = attrs["out_dtype"]
            if old not in ("", None):
                orig_dtype = str(old)
            attrs = attrs.with_fields(out_dtype=self.out_dtype)
        if orig_dtype is None:
            if call._checked_type is None:
                raise ValueError(f"recast: the type of a {call.op.name} call is unknown; the "
                                 "expression does not type-check")
            orig_dtype = call.checked_type.dtype
        return cast(Call(new.op, args, attrs), orig_dtype)


def recast(expr, dtype: str, out_dtype: str, ops=None, skip_layers=None):
    """Cast the inputs of ``ops`` calls to ``dtype`` and their outputs to ``out_dtype``.

    Parameters
    ----------
    expr : relay.Expr, relay.Function or IRModule
        The program; for a module, its ``main`` (a new module holding only ``main`` comes back).
    dtype : str
        The dtype the operands are cast to.
    out_dtype : str
        The ``out_dtype`` given to the recast calls.
    ops : list of str
        The operators to recast; ``["nn.conv2d"]`` when None.
    skip_layers : list of int
        Layer numbers (from the input side; negative from the output side) left unchanged.
    """
    for name, value in (("dtype", dtype), ("out_dtype", out_dtype)):
        if not isinstance(value, str):
            raise TypeError(f"recast: {name} must be a dtype string, got {value!r}")
    ops = ["nn.conv2d"] if ops is None else list(ops)
    valid = []
    for name in ops:
        try:
            valid.append(name if isinstance(name, Op) else Op.get(name))
        except (KeyError, ValueError) as err:
            raise ValueError(f"recast: {name!r} in ops is not a registered operator") from err
    return_mod = isinstance(expr, IRModule)
    if return_mod:
        expr = expr["main"]
    InferTypeLocal(expr)  # the result dtypes of the calls without an out_dtype
    count = count_layers(expr, ops)
    skip = frozenset(s + count if s < 0 else s for s in (skip_layers or ()))
    layers = _layer_numbers(expr, frozenset(valid), count)
    out = _Recast(dtype, out_dtype, layers, skip).visit(expr)
    return IRModule.from_expr(out) if return_mod else out

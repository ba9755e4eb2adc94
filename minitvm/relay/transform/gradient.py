"""gradient: reverse-mode automatic differentiation of a Relay function.

``gradient(f)`` returns ``fn(params) -> (f(params), (d out / d p for each p))``: the gradient of
the sum of the output's elements (a ones seed), TVM's contract; for a tuple result the
first-order mode seeds every field, the higher-order mode only the first (TVM's ``init_grad``). ``mode="first_order"`` works on
first-order dataflow programs (ops, tuples, lets) and produces a plain let chain: the forward
values, then one accumulated gradient per value in reverse order. ``mode="higher_order"`` (the
default) works on every program -- closures, If, recursion through global functions, ADTs and
references -- by pairing each tensor with a reference to its gradient and recording backward
closures (see ``_higher_order_ad``).
"""

from __future__ import annotations

import warnings

from ...ir.expr import GlobalVar
from ...ir.module import IRModule
from ...ir.op import Op
from ...ir.type import TensorType, TupleType
from ..expr import Call, Constant, Function, Tuple, TupleGetItem, Var
from ..expr_functor import ExprMutator, dataflow_post_order
from ..op import tensor as _t
from ._ad_common import bind_rule, grad_rule, lets
from .infer_type import InferTypeLocal

__all__ = ["gradient", "first_order_gradient"]


def _typed_function(expr, mod):
    """The function to differentiate, type checked (a Function or a GlobalVar of ``mod``)."""
    if isinstance(expr, GlobalVar):
        if mod is None or expr not in mod:
            raise ValueError(f"gradient: @{expr.name_hint} is not a function of the given module")
        expr = mod[expr]
    if not isinstance(expr, Function):
        raise TypeError(f"gradient expects a relay.Function (or a GlobalVar), got "
                        f"{type(expr).__name__}")
    InferTypeLocal(expr, mod)
    for p in expr.params:
        if not isinstance(p.checked_type, TensorType | TupleType):
            raise TypeError(f"gradient: parameter %{p.name_hint} has type {p.checked_type}; "
                            "only tensor (or tuple of tensor) parameters can be differentiated")
    return expr


def gradient(expr, mod: IRModule | None = None, mode: str = "higher_order"):
    """Transform the input function, returning a function that calculates the original result
    paired with the gradient of the input.

    Parameters
    ----------
    expr : tvm.relay.Expr
        The input expression, which is a Function or a GlobalVar.
    mod : Optional[tvm.IRModule]
        The module holding the global functions ``expr`` calls. In higher-order mode, their
        differentiated versions (``@name_grad``) are added to it, as TVM does.
    mode : Optional[str]
        'first_order' only works on first order code, but will not produce reference nor
        closure; as in TVM v0.19 it is deprecated (a DeprecationWarning), runs the
        FirstOrderGradient module pass on ``expr`` alone and refuses a ``mod``.
        'higher_order' works on all code using reference and closure.

    Returns
    -------
    expr : tvm.relay.Expr
        The transformed expression.
    """
    if mode == "first_order":
        # TVM v0.19: deprecated in favour of the FirstOrderGradient module pass, which it runs
        warnings.warn("using transform.gradient for first-order AD is deprecated, please use "
                      "the FirstOrderGradient module pass", DeprecationWarning, stacklevel=2)
        if mod is not None:
            raise RuntimeError("to run first-order AD on a module, please use the "
                               "FirstOrderGradient module pass.")
        if not isinstance(expr, Function):
            raise TypeError(f"gradient(mode='first_order') expects a relay.Function, got "
                            f"{type(expr).__name__}")
        from .first_order_gradient import FirstOrderGradient

        return FirstOrderGradient()(IRModule.from_expr(expr))["main"]
    if mode == "higher_order":
        from ._higher_order_ad import higher_order_gradient

        return higher_order_gradient(_typed_function(expr, mod), mod)
    raise ValueError(f"gradient: unknown mode {mode!r}; use 'first_order' or 'higher_order'")


class _InlineLets(ExprMutator):
    """Substitute let-bound values for their variables (first-order programs are pure)."""

    def __init__(self):
        super().__init__()
        self.sub: dict = {}

    def visit_var(self, v):
        return self.sub.get(v, v)

    def visit_let(self, let):
        chain = self._let_chain(let)
        for node in chain:
            self.sub[node.var] = self.visit(node.value)
        return self.visit(chain[-1].body)

    def visit_function(self, fn):
        raise TypeError("gradient(mode='first_order') does not support closures (a nested "
                        "function); use mode='higher_order'")


_FIRST_ORDER_NODES = (Var, Constant, Call, Tuple, TupleGetItem)


def _ones_like(e, t):
    if isinstance(t, TupleType):
        return [_ones_like(TupleGetItem(e, i), f) for i, f in enumerate(t.fields)]
    return _t.ones_like(e)


class _Backward:
    """Gradients accumulated per forward node; tuple-valued nodes keep one slot per field."""

    def __init__(self, bindings: list):
        self.bindings = bindings
        self.grads: dict = {}
        self.count = 0

    def bind(self, value, t):
        if isinstance(value, Var | Constant):
            return value
        self.count += 1
        v = Var(f"g{self.count}", t)
        self.bindings.append((v, value))
        return v

    def add(self, node, g):
        t = node.checked_type
        if isinstance(t, TupleType):
            if not isinstance(g, list):
                g = [g.fields[i] if isinstance(g, Tuple) else TupleGetItem(g, i)
                     for i in range(len(t.fields))]
            old = self.grads.get(node) or [None] * len(t.fields)
            self.grads[node] = [self._sum(o, n, ft) for o, n, ft in zip(old, g, t.fields)]
        else:
            self.grads[node] = self._sum(self.grads.get(node), g, t)

    def _sum(self, old, new, t):
        if new is None:
            return old
        if isinstance(t, TupleType):
            if not isinstance(new, list):
                new = [TupleGetItem(new, i) for i in range(len(t.fields))]
            old = old or [None] * len(t.fields)
            return [self._sum(o, n, ft) for o, n, ft in zip(old, new, t.fields)]
        new = self.bind(new, t)
        return new if old is None else self.bind(_t.add(old, new), t)

    def materialize(self, g, like, t):
        """A full gradient expression: zeros where nothing flowed."""
        if isinstance(t, TupleType):
            g = g or [None] * len(t.fields)
            return Tuple([self.materialize(gi, TupleGetItem(like, i), ft)
                          for i, (gi, ft) in enumerate(zip(g, t.fields))])
        return _t.zeros_like(like) if g is None else g


def first_order_gradient(expr, mod: IRModule | None = None) -> Function:
    """``gradient(expr, mod, mode="first_order")``: forward lets, then reverse accumulation."""
    func = _typed_function(expr, mod)
    body = _InlineLets().visit(func.body)
    flat = Function(func.params, body)
    InferTypeLocal(flat, mod)
    order = dataflow_post_order(flat.body)
    bindings: list = []
    fwd: dict = {}
    for node in order:
        if not isinstance(node, _FIRST_ORDER_NODES) or (
                isinstance(node, Call) and not isinstance(node.op, Op)):
            what = type(node.op).__name__ if isinstance(node, Call) else type(node).__name__
            raise TypeError(f"gradient(mode='first_order') supports ops, tuples and lets only, "
                            f"found {what}; use mode='higher_order'")
        if isinstance(node, Var | Constant):
            fwd[node] = node
            continue
        if isinstance(node, Call):
            value = Call(node.op, [fwd[a] for a in node.args], node.attrs, node.type_args)
        elif isinstance(node, Tuple):
            value = Tuple([fwd[f] for f in node.fields])
        else:
            value = TupleGetItem(fwd[node.tuple_value], node.index)
        v = Var(f"v{len(bindings)}", node.checked_type)
        bindings.append((v, value))
        fwd[node] = v
    root = flat.body
    out_t = root.checked_type
    back = _Backward(bindings)
    back.add(root, _ones_like(fwd[root], out_t))
    for node in reversed(order):
        g = back.grads.get(node)
        if g is None or isinstance(node, Var | Constant):
            continue
        if isinstance(node, Tuple):
            for f, gi in zip(node.fields, g):
                if gi is not None:
                    back.add(f, gi)
        elif isinstance(node, TupleGetItem):
            slots = [None] * len(node.tuple_value.checked_type.fields)
            slots[node.index] = g
            back.add(node.tuple_value, slots)
        else:
            og = back.materialize(g, fwd[node], node.checked_type)
            og = back.bind(og, node.checked_type)
            orig = Call(node.op, [fwd[a] for a in node.args], node.attrs, node.type_args)
            orig._checked_type = node.checked_type
            arg_grads = bind_rule(grad_rule(node.op), orig, fwd[node], og)
            if len(arg_grads) != len(node.args):
                raise ValueError(f"gradient of {node.op.name} returned {len(arg_grads)} "
                                 f"gradients for {len(node.args)} arguments")
            for a, ga in zip(node.args, arg_grads):
                if not isinstance(a, Constant):
                    back.add(a, ga)
    grads = [back.materialize(back.grads.get(p), p, p.checked_type) for p in flat.params]
    result = Tuple([fwd[root], Tuple(grads)])
    return Function(list(func.params), lets(bindings, result))

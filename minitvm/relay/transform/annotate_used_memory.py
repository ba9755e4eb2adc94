"""AnnotateUsedMemory(): record the bytes live at each call of a primitive function.

For ``main`` in A-normal form (TVM v0.19's AOT helper; run ToANormalForm and InferType first),
each let-bound primitive function gets ``used_memory``: one ``uint64`` per call site, in program
order, the total size of the tensors live at that call (the variables live into or out of the
binding, less the called function). ``main`` gets ``io_used_memory``: the size of its parameters
plus its result. Liveness is TVM's: a control-flow graph of main's let bindings (an ``if`` or
``match`` value opens one block per arm), each binding using the variables its value names
directly (see ``_liveness``). Dynamic shapes are an error (as TVM); a function value that is
live counts 0 bytes (TVM aborts on it); a primitive function never called is an error naming it
(TVM aborts on a missing entry). Call sites inside branches are listed in program order.
"""

from __future__ import annotations

import numpy as np

from ...ir.prim_expr import Any, IntImm
from ...ir.type import FuncType, TensorType, TupleType
from ...transform.stats import record_stat
from ..expr import Call, Function, Let, Var
from ..expr_functor import ExprMutator
from ._liveness import ControlFlowGraph, liveness, strip_on_device
from ._pass_helpers import has_nonzero_attr, make_module_pass, register
from .infer_type import InferTypeLocal

__all__ = ["AnnotateUsedMemory", "annotate_used_memory"]


def _size_bytes(ty, what) -> int:
    """Bytes a value of type ``ty`` occupies (tuples summed; functions take none)."""
    stack, total = [ty], 0
    while stack:
        t = stack.pop()
        if isinstance(t, TupleType):
            stack.extend(t.fields)
        elif isinstance(t, FuncType):
            continue
        elif isinstance(t, TensorType):
            if any(isinstance(d, Any) or not _static(d) for d in t.shape):
                raise ValueError(f"AnnotateUsedMemory does not support dynamic shapes "
                                 f"({what} has type {t})")
            count = 1
            for d in t.shape:
                count *= int(d)
            total += count * np.dtype(_np_dtype(t.dtype)).itemsize
        else:
            raise TypeError(f"AnnotateUsedMemory: {what} has type {t}, not a tensor or tuple")
    return total


def _static(d) -> bool:
    try:
        int(d)
    except (TypeError, ValueError):
        return False
    return True


def _np_dtype(dtype: str) -> str:
    return "uint8" if dtype == "bool" else dtype


def _live_bytes(live: set) -> int:
    total = 0
    for v in live:
        if v._checked_type is None:
            raise ValueError(f"AnnotateUsedMemory: %{v.name_hint} has no type; run InferType "
                             "first")
        total += _size_bytes(v.checked_type, f"%{v.name_hint}")
    return total


class _Annotator(ExprMutator):
    """Adds ``used_memory`` to the primitive functions bound by lets (at any branch depth)."""

    def __init__(self, usage: dict):
        super().__init__()
        self.usage = usage

    def visit_let(self, let):
        chain = self._let_chain(let)
        parts = [(self.visit(n.var), self.visit(n.value)) for n in chain]
        body = self.visit(chain[-1].body)
        for node, (var, value) in zip(reversed(chain), reversed(parts), strict=True):
            sites = self.usage.get(node.var)
            if sites is not None:
                func = strip_on_device(node.value)
                value = func.with_attr("used_memory", [IntImm("uint64", n) for n in sites])
                value._checked_type = func._checked_type
            if var is node.var and value is node.value and body is node.body:
                body = node
            else:
                body = Let(var, value, body, node.span)
                body._checked_type = node._checked_type
            self.memo_map[node] = body
        return body


def annotate_used_memory(mod):
    """A copy of ``mod`` with ``used_memory`` on main's let-bound primitive functions and
    ``io_used_memory`` on ``main``."""
    if "main" not in mod:
        raise ValueError("AnnotateUsedMemory: the module has no 'main' function")
    main = mod["main"]
    if not isinstance(main, Function):
        raise TypeError("AnnotateUsedMemory: 'main' is not a Relay function")
    if main.body._checked_type is None:
        InferTypeLocal(main, mod)
    io = sum(_size_bytes(p.checked_type, f"parameter %{p.name_hint}") for p in main.params)
    io += _size_bytes(main.body.checked_type, "the result of main")

    cfg = ControlFlowGraph(main, "AnnotateUsedMemory")
    _, live_in, live_out = liveness(cfg)
    lets = [n for n in cfg.nodes if type(n.expr) is Let]
    prim_vars: set = set()
    for n in lets:
        value = strip_on_device(n.expr.value)
        if type(value) is Function:
            if not has_nonzero_attr(value, "Primitive"):
                raise ValueError(f"AnnotateUsedMemory: %{n.expr.var.name_hint} binds a function "
                                 "that is not primitive; expected top-level functions to be "
                                 "primitive (run FuseOps first)")
            prim_vars.add(n.expr.var)
    usage: dict = {}
    for n in lets:  # call sites in program order
        value = strip_on_device(n.expr.value)
        if type(value) is Call and type(value.op) is Var and value.op in prim_vars:
            at_call = (live_in[n] | live_out[n]) - {value.op}
            usage.setdefault(value.op, []).append(_live_bytes(at_call))
    for v in prim_vars:
        if v not in usage:
            raise ValueError(f"AnnotateUsedMemory: the primitive function bound to "
                             f"%{v.name_hint} is never called in main")
    body = _Annotator(usage).visit(main.body)
    new_main = Function(main.params, body, main.ret_type, main.type_params, main.attrs,
                        main.span).with_attr("io_used_memory", IntImm("uint64", io))
    out = mod.shallow_copy()
    out.update_func(mod.get_global_var("main"), new_main)
    record_stat("annotated functions", len(prim_vars))
    return out


@register("AnnotateUsedMemory")
def AnnotateUsedMemory():  # noqa: N802 - TVM's name
    """Module pass (opt 0, requires ToANormalForm and InferType): annotate used memory."""
    return make_module_pass(lambda mod, ctx: annotate_used_memory(mod), opt_level=0,
                            name="AnnotateUsedMemory", required=["ToANormalForm", "InferType"],
                            needs=["typed"])

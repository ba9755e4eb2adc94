"""Bindings and calls of Relax programs, as TVM's ``relax.analysis`` exposes them:
``post_order_visit``, ``get_var2val``, ``name_to_binding``, ``udchain``,
``computable_at_compile_time``, ``detect_recursion``, ``contains_impure_call``,
``remove_all_unused``. Every traversal uses an explicit stack."""

from __future__ import annotations

from collections.abc import Callable

from ...ir.expr import GlobalVar
from ...ir.node import node_operands
from ..expr import (
    Binding,
    BindingBlock,
    Call,
    DataflowBlock,
    Expr,
    Function,
    If,
    MatchCast,
    SeqExpr,
    Tuple,
    TupleGetItem,
    Var,
    VarBinding,
)
from .struct_info_analysis import tir_vars_in_struct_info
from .var_analysis import free_vars

__all__ = ["post_order_visit", "get_var2val", "name_to_binding", "udchain",
           "computable_at_compile_time", "detect_recursion", "contains_impure_call",
           "remove_all_unused"]


def _children(e) -> list:
    """The sub-expressions TVM's Relax ExprVisitor visits under ``e``, in order."""
    if isinstance(e, Call):
        return [e.op, *e.args]
    if isinstance(e, Tuple):
        return list(e.fields)
    if isinstance(e, TupleGetItem):
        return [e.tuple_value]
    if isinstance(e, If):
        return [e.cond, e.true_branch, e.false_branch]
    if isinstance(e, SeqExpr):
        return [b.value for blk in e.blocks for b in blk.bindings] + [e.body]
    if isinstance(e, Function):
        return [e.body]
    return []


def post_order_visit(expr: Expr, fvisit: Callable) -> None:
    """Call ``fvisit`` on every expression under ``expr`` (``expr`` included), operands before
    the expression that uses them; an expression used twice is visited twice, as in TVM."""
    stack = [(expr, False)]
    while stack:
        e, done = stack.pop()
        if done:
            fvisit(e)
            continue
        stack.append((e, True))
        stack.extend((c, False) for c in reversed(_children(e)))


def _bindings(expr):
    """Every binding under ``expr`` (nested scopes and functions too), in program order."""
    stack = [expr]
    while stack:
        e = stack.pop()
        if isinstance(e, Binding):
            yield e
        if isinstance(e, Var):
            continue  # a variable's struct info holds no bindings
        stack.extend(reversed(node_operands(e)))


def get_var2val(func: Function) -> dict:
    """Each variable bound by a ``VarBinding`` in ``func`` -> the value bound to it."""
    return {b.var: b.value for b in _bindings(func) if isinstance(b, VarBinding)}


def name_to_binding(func: Function) -> dict:
    """Each bound variable name in ``func`` -> the bindings of variables of that name."""
    out: dict = {}
    for b in _bindings(func):
        out.setdefault(b.var.name_hint, []).append(b)
    return out


def udchain(dfb: DataflowBlock) -> dict:
    """The use-def chains of a (dataflow) block: every variable defined or used in it ->
    the variables whose bound values use it (once per use)."""
    if not isinstance(dfb, BindingBlock):
        raise TypeError(f"udchain expects a DataflowBlock, got {type(dfb).__name__}")
    users: dict = {}
    for b in dfb.bindings:
        users.setdefault(b.var, [])
        stack = [b.value]
        while stack:
            e = stack.pop()
            if isinstance(e, Var):
                users.setdefault(e, []).append(b.var)
            elif not isinstance(e, Function):
                stack.extend(reversed(_children(e)))
            else:
                for v in free_vars(e):
                    users.setdefault(v, []).append(b.var)
    return users


def computable_at_compile_time(func: Function) -> list[Var]:
    """The variables of ``func`` whose values depend only on the parameters after its
    ``num_input`` attribute (known at compile time, e.g. weights), in order of occurrence:
    those parameters, then the bindings computed from them alone (impure calls excluded)."""
    from ..transform.utils import is_impure_call

    num_input = (func.attrs or {}).get("num_input") if func.attrs is not None else None
    if num_input is None:
        return []
    num_input = int(getattr(num_input, "value", num_input))
    known = list(func.params[num_input:])
    known_ids = {id(v) for v in known}
    known_tir: set = set()
    for p in known:
        known_tir.update(tir_vars_in_struct_info(p.struct_info))
    out = list(known)
    for b in _bindings(func.body):
        value = b.value
        if isinstance(value, Function) or (isinstance(value, Call) and is_impure_call(value)):
            continue
        used = [v for v in free_vars(value)]
        if not all(id(v) in known_ids for v in used):
            continue
        if isinstance(b, MatchCast) or not set(
                tir_vars_in_struct_info(b.var.struct_info)) <= known_tir:
            continue
        known_ids.add(id(b.var))
        out.append(b.var)
    return out


def detect_recursion(mod) -> list[list[GlobalVar]]:
    """The groups of (mutually) recursive Relax functions of ``mod``: the strongly connected
    components of the call graph that contain a cycle, functions in module order."""
    funcs = {gv: f for gv, f in mod.functions.items() if isinstance(f, Function)}
    by_name = {gv.name_hint: gv for gv in funcs}
    order = {gv: k for k, gv in enumerate(funcs)}
    edges: dict = {}
    for gv, f in funcs.items():
        callees = []
        stack = [f.body]
        while stack:
            e = stack.pop()
            if isinstance(e, GlobalVar):
                target = by_name.get(e.name_hint)
                if target is not None and target not in callees:
                    callees.append(target)
                continue
            if isinstance(e, Var):
                continue
            stack.extend(node_operands(e))
        edges[gv] = sorted(callees, key=order.__getitem__)
    # Tarjan's algorithm, iteratively
    index: dict = {}
    low: dict = {}
    on_stack: set = set()
    comp_stack: list = []
    groups: list = []
    counter = 0
    for root in funcs:
        if root in index:
            continue
        work = [(root, 0)]
        index[root] = low[root] = counter
        counter += 1
        comp_stack.append(root)
        on_stack.add(root)
        while work:
            v, i = work[-1]
            succ = edges[v]
            if i < len(succ):
                work[-1] = (v, i + 1)
                w = succ[i]
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    comp_stack.append(w)
                    on_stack.add(w)
                    work.append((w, 0))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                u = work[-1][0]
                low[u] = min(low[u], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = comp_stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w is v:
                        break
                if len(comp) > 1 or v in edges[v]:
                    groups.append(sorted(comp, key=order.__getitem__))
    return sorted(groups, key=lambda g: order[g[0]])


def contains_impure_call(expr: Expr, own_name=None) -> bool:
    """Whether ``expr`` calls something impure (a recursive call of ``own_name``, the
    function's own name, is not counted)."""
    from ..transform.utils import contains_impure_call as impl

    return impl(expr, own_name)


def remove_all_unused(func: Function, mod=None) -> Function:
    """``func`` without the bindings whose values are unused and pure (TVM's
    ``relax.analysis.remove_all_unused``)."""
    from ..transform.dead_code_elimination import remove_all_unused as impl

    return impl(func, mod)[0]

"""RemoveUnusedOutputs (TVM's ``relax.transform.RemoveUnusedOutputs``): a private function
(no ``global_symbol``) returning a tuple of which some fields no caller ever reads (callers
only index the result, ``r[i]``) returns only the fields that are read; every call site
becomes a tuple of the new call's fields (unread fields a placeholder ``R.prim_value(nan)``),
then CanonicalizeBindings and DeadCodeElimination clean up. A caller that uses a result
whole (passes it on, returns it) keeps every field.

The pass is ``Sequential(RemoveUnusedOutputsInner, CanonicalizeBindings,
DeadCodeElimination)``, named ``RemoveUnusedOutputs``, as TVM builds it.
"""

from __future__ import annotations

import math

from ...ir.expr import GlobalVar
from ...transform.decorators import module_pass
from ...transform.sequential import Sequential
from ...transform.stats import record_stat
from ..expr import (
    BindingBlock,
    Call,
    Function,
    If,
    PrimValue,
    SeqExpr,
    Tuple,
    TupleGetItem,
    Var,
    VarBinding,
)
from ..struct_info import TupleStructInfo
from .canonicalize_bindings import CanonicalizeBindings
from .dead_code_elimination import DeadCodeElimination
from .normalize import NormalizingMutator, normalize_function
from .utils import register

__all__ = ["RemoveUnusedOutputs"]


def _is_exposed(func) -> bool:
    attrs = getattr(func, "attrs", None)
    return bool(attrs) and attrs.get("global_symbol") is not None


class _UsageCollector:
    """Which output fields of each candidate callee are read (TVM's
    PartialTupleUsageCollector)."""

    def __init__(self, masks: dict):
        self.masks = masks
        self.known: dict = {}

    def _callee_mask(self, e):
        if not isinstance(e._checked_type, TupleStructInfo):
            return None
        while isinstance(e, Var) and e in self.known:
            e = self.known[e]
        if isinstance(e, Call) and isinstance(e.op, GlobalVar):
            return self.masks.get(e.op)
        return None

    def visit(self, func: Function) -> None:
        stack = [func.body]
        while stack:
            e = stack.pop()
            if isinstance(e, tuple):  # ("bound", binding): record after visiting its value
                b = e[1]
                self.known[b.var] = b.value
                continue
            if isinstance(e, TupleGetItem):
                mask = self._callee_mask(e.tuple_value)
                if mask is not None:
                    if not 0 <= e.index < len(mask):
                        raise IndexError(
                            f"Indices for TupleGetItem must be less than the size of the "
                            f"tuple, but an access uses index {e.index} for a tuple of size "
                            f"{len(mask)}")
                    mask[e.index] = True
                    continue  # the tuple itself is not otherwise used here
                stack.append(e.tuple_value)
            elif isinstance(e, Var):
                mask = self._callee_mask(e)
                if mask is not None:
                    for i in range(len(mask)):
                        mask[i] = True
            elif isinstance(e, Call):
                stack.append(e.op)
                stack.extend(e.args)
            elif isinstance(e, Tuple):
                stack.extend(e.fields)
            elif isinstance(e, If):
                stack.extend((e.cond, e.true_branch, e.false_branch))
            elif isinstance(e, SeqExpr):
                stack.append(e.body)
                for block in reversed(e.blocks):
                    for b in reversed(block.bindings):
                        stack.append(("bound", b))
                        stack.append(b.value)
            elif isinstance(e, Function):
                stack.append(e.body)


def _collect(mod) -> dict:
    masks = {}
    for gv, func in mod.functions.items():
        if isinstance(func, Function) and not _is_exposed(func) and \
                isinstance(func.ret_struct_info, TupleStructInfo):
            masks[gv] = [False] * len(func.ret_struct_info.fields)
    if not masks:
        return {}
    collector = _UsageCollector(masks)
    for func in mod.functions.values():
        if isinstance(func, Function):
            collector.visit(func)
    return {gv: m for gv, m in masks.items() if not all(m)}


def _update_callee(func: Function, mask: list, mod) -> Function:
    prev = Var("previous_outputs", func.ret_struct_info)
    outputs = [TupleGetItem(prev, i) for i, used in enumerate(mask) if used]
    new_output = outputs[0] if len(outputs) == 1 else Tuple(outputs)
    new_ret = (func.ret_struct_info.fields[mask.index(True)] if len(outputs) == 1 else
               TupleStructInfo([f for f, used in zip(func.ret_struct_info.fields, mask)
                                if used]))
    body = SeqExpr([BindingBlock([VarBinding(prev, func.body)])], new_output)
    new = Function(func.params, body, new_ret, func.is_pure, func.attrs, func.span)
    return normalize_function(new, mod)


class _CallSiteMutator(NormalizingMutator):
    def __init__(self, updaters: dict, mod=None):
        super().__init__(mod)
        self.updaters = updaters
        self.rewritten = 0

    def visit_call_(self, op: Call):
        node = super().visit_call_(op)
        if isinstance(node.op, GlobalVar):
            upd = self.updaters.get(node.op)
            if upd is not None:
                self.rewritten += 1
                return upd(node, op._checked_type)
        return node


def _make_updater(old_gv, new_gv, mask):
    used = sum(mask)

    def update(call: Call, old_sinfo):
        if not isinstance(old_sinfo, TupleStructInfo) or len(old_sinfo.fields) != len(mask):
            raise ValueError(f"Function {old_gv.name_hint} produces {len(mask)} outputs, but a "
                             "call of it was used in a context expecting a different number")
        new_call = Call(new_gv, list(call.args), call.attrs, call.sinfo_args, call.span)
        results = []
        k = 0
        for m in mask:
            if m:
                results.append(new_call if used == 1 else TupleGetItem(new_call, k))
                k += 1
            else:
                results.append(PrimValue(math.nan))
        return Tuple(results)

    return update


def _inner(mod, ctx):
    usage = _collect(mod)
    if not usage:
        return mod
    updaters = {}
    for gv, func in list(mod.functions.items()):
        mask = usage.get(gv)
        if mask is None:
            continue
        new_func = _update_callee(func, mask, mod)
        new_gv = GlobalVar(gv.name_hint)
        new_gv._checked_type = new_func._struct_info
        updaters[gv] = _make_updater(gv, new_gv, mask)
        mod.remove(gv)
        mod.update_func(new_gv, new_func)
    mutator = _CallSiteMutator(updaters, mod)
    for gv, func in list(mod.functions.items()):
        if isinstance(func, Function):
            new = mutator.visit_expr(func)
            if new is not func:
                mod.update_func(gv, normalize_function(new, mod))
    record_stat("outputs removed", sum(m.count(False) for m in usage.values()))
    return mod


@register("RemoveUnusedOutputs")
def RemoveUnusedOutputs():  # noqa: N802 - TVM's name
    """Sequential(module pass RemoveUnusedOutputsInner (opt 0), CanonicalizeBindings,
    DeadCodeElimination)."""
    inner = module_pass(_inner, opt_level=0, name="RemoveUnusedOutputsInner",
                        needs=["relax_normalized"], keeps=["relax_normalized"])
    return Sequential([inner, CanonicalizeBindings(), DeadCodeElimination([])],
                      name="RemoveUnusedOutputs")


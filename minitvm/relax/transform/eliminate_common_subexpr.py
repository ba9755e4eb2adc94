"""EliminateCommonSubexpr (TVM's ``relax.transform.EliminateCommonSubexpr(call_only=False)``).

A binding whose value (and, for a ``match_cast``, whose target struct info) is structurally
equal to an earlier binding's in scope becomes a trivial binding of the earlier variable, and
later uses refer to the earlier variable (CanonicalizeBindings / DeadCodeElimination remove the
trivial binding). Values containing impure calls are never merged; with ``call_only`` only call
values are. A DataflowVar stops being a replacement when its block ends; branches of an ``If``
see the enclosing bindings but do not leak theirs; a nested function is processed on its own.
"""

from __future__ import annotations

from ...ir.expr import GlobalVar
from ...ir.op import Op
from ...ir.structural import structural_equal, structural_hash
from ...transform.stats import record_stat
from ..expr import (
    Call,
    Constant,
    DataflowBlock,
    DataflowVar,
    Function,
    If,
    MatchCast,
    Tuple,
    TupleGetItem,
    Var,
    VarBinding,
)
from .function_pass import function_pass
from .normalize import NormalizingMutator
from .utils import contains_impure_call, register

__all__ = ["EliminateCommonSubexpr", "eliminate_common_subexpr"]


def _key(e):
    """A hashable key: equal for structurally equal values that use the same variables."""
    if isinstance(e, Var):
        return ("v", id(e))
    if isinstance(e, Op):
        return ("op", e.name)
    if isinstance(e, GlobalVar):
        return ("gv", e.name_hint)
    if isinstance(e, Call):
        attrs = structural_hash(e.attrs) if e.attrs is not None else None
        return ("c", _key(e.op), tuple(_key(a) for a in e.args), attrs,
                tuple(structural_hash(s) for s in e.sinfo_args))
    if isinstance(e, Tuple):
        return ("t", tuple(_key(f) for f in e.fields))
    if isinstance(e, TupleGetItem):
        return ("g", _key(e.tuple_value), e.index)
    if isinstance(e, Constant):
        return ("k", structural_hash(e))
    return ("h", structural_hash(e))


def _same_flat_call(a, b) -> bool:
    """Whether ``a`` and ``b`` are calls of one callee on the very same variables with equal
    attributes and no struct-info arguments: equal without a structural comparison (most
    merged bindings; the table key already matched)."""
    if not (isinstance(a, Call) and isinstance(b, Call)) or a.sinfo_args or b.sinfo_args:
        return False
    if a.op is not b.op or len(a.args) != len(b.args):
        return False
    if not all(x is y and isinstance(x, Var) for x, y in zip(a.args, b.args)):
        return False
    return a.attrs is b.attrs or structural_equal(a.attrs, b.attrs)


class _Entry:
    __slots__ = ("value", "cast", "vars")

    def __init__(self, value, cast, var):
        self.value = value
        self.cast = cast
        self.vars = [var]


class _CSE(NormalizingMutator):
    def __init__(self, call_only: bool, mod=None):
        super().__init__(mod)
        self.call_only = call_only
        self.mod = mod
        self.table: dict = {}  # key -> [_Entry]
        self.merged = 0

    def _lookup(self, key, value, cast):
        for entry in self.table.get(key, ()):
            if (entry.cast is None) != (cast is None):
                continue
            if (_same_flat_call(entry.value, value) or structural_equal(entry.value, value)) \
                    and (cast is None or structural_equal(entry.cast, cast)):
                return entry
        return None

    def visit_binding(self, binding) -> None:
        value = self.visit_expr(binding.value)
        cast = binding.struct_info if isinstance(binding, MatchCast) else None
        if value is binding.value:
            out = binding
        elif cast is not None:
            out = MatchCast(binding.var, value, cast, binding.span)
        else:
            out = VarBinding(binding.var, value, binding.span)
        if (self.call_only and not isinstance(value, Call)) or contains_impure_call(value):
            pass
        else:
            key = (_key(value), None if cast is None else structural_hash(cast))
            entry = self._lookup(key, value, cast)
            if entry is not None and entry.vars:
                first = entry.vars[0]
                out = VarBinding(binding.var, first, binding.span)
                self.set_var_remap(binding.var, first)
                entry.vars.append(binding.var)
                self.merged += 1
            else:
                self.table.setdefault(key, []).append(_Entry(value, cast, binding.var))
        self.builder_.emit_normalized(out)

    def visit_dataflow_block_(self, block: DataflowBlock):
        cached = dict(self.var_remap_)
        out = super().visit_dataflow_block_(block)
        for entries in self.table.values():
            for entry in entries:
                if any(isinstance(v, DataflowVar) for v in entry.vars):
                    entry.vars = [v for v in entry.vars if not isinstance(v, DataflowVar)]
        self.var_remap_ = cached
        return out

    def visit_function_(self, op: Function):
        if self.table or self.var_remap_:
            inner = _CSE(self.call_only, self.mod)
            out = inner.visit_expr(op)
            self.merged += inner.merged
            return out
        return super().visit_function_(op)

    def _inner_scope(self, expr):
        cached_vars = dict(self.var_remap_)
        cached_table = {k: [_copy(e) for e in v] for k, v in self.table.items()}
        out = self.visit_with_new_scope(expr)
        self.var_remap_ = cached_vars
        self.table = cached_table
        return out

    def visit_if_(self, op: If):
        cond = self.visit_expr(op.cond)
        t = self._inner_scope(op.true_branch)
        f = self._inner_scope(op.false_branch)
        if cond is op.cond and t is op.true_branch and f is op.false_branch:
            return op
        from .normalize import if_struct_info

        new = If(cond, t, f, op.span)
        new._checked_type = if_struct_info(t.struct_info, f.struct_info)
        return new


def _copy(entry: _Entry) -> _Entry:
    new = _Entry(entry.value, entry.cast, None)
    new.vars = list(entry.vars)
    return new


def eliminate_common_subexpr(func, call_only: bool = False, mod=None):
    """``func`` with repeated values bound once (and how many bindings were merged)."""
    m = _CSE(call_only, mod)
    return m.visit_expr(func), m.merged


@register("EliminateCommonSubexpr")
def EliminateCommonSubexpr(call_only: bool = False):  # noqa: N802 - TVM's name
    """Function pass (opt 1): bind structurally equal pure values once."""

    def transform(func, mod, ctx):
        out, n = eliminate_common_subexpr(func, call_only, mod)
        if n:
            record_stat("common subexpressions eliminated", n)
        return out

    return function_pass(transform, opt_level=1, name="EliminateCommonSubexpr",
                         needs=["relax_normalized"], keeps=["relax_normalized"])

"""ToNonDataflow: turn every dataflow block into a plain binding block and every DataflowVar
into a Var (TVM's ``relax.transform.ToNonDataflow``)."""

from __future__ import annotations

from ...transform.stats import record_stat
from ..expr import (
    BindingBlock,
    Call,
    DataflowBlock,
    DataflowVar,
    MatchCast,
    Tuple,
    TupleGetItem,
    Var,
    VarBinding,
)
from .function_pass import function_pass
from .normalize import NormalizingMutator
from .utils import register

__all__ = ["ToNonDataflow", "to_non_dataflow"]

_TREE = (Call, Tuple, TupleGetItem)


def rename_vars(value, remap: dict):
    """``value`` (an operand tree) with variables replaced by same-struct-info variables from
    ``remap``; rebuilt nodes keep their struct info (nothing is re-inferred). None when the
    value holds something other than an operand tree."""
    done: dict = {}
    stack = [(value, False)]
    while stack:
        e, ready = stack.pop()
        if id(e) in done:
            continue
        if isinstance(e, Var):
            done[id(e)] = remap.get(e, e)
            continue
        if not isinstance(e, _TREE):
            if hasattr(e, "blocks") or hasattr(e, "params") or hasattr(e, "true_branch"):
                return None
            done[id(e)] = e
            continue
        kids = (e.op, *e.args) if isinstance(e, Call) else \
            e.fields if isinstance(e, Tuple) else (e.tuple_value,)
        if not ready:
            stack.append((e, True))
            stack.extend((k, False) for k in kids if id(k) not in done)
            continue
        new = [done[id(k)] for k in kids]
        if all(a is b for a, b in zip(new, kids)):
            done[id(e)] = e
            continue
        if isinstance(e, Call):
            r = Call(new[0], new[1:], e.attrs, e.sinfo_args, e.span)
        elif isinstance(e, Tuple):
            r = Tuple(new, e.span)
        else:
            r = TupleGetItem(new[0], e.index, e.span)
        r._checked_type = e._checked_type
        done[id(e)] = r
    return done[id(value)]


class _ToNonDataflow(NormalizingMutator):
    def __init__(self, mod=None):
        super().__init__(mod)
        self.blocks = 0

    def visit_dataflow_var_def_(self, var: DataflowVar) -> Var:
        new = Var(var.name_hint, var._struct_info, var.span)
        self.set_var_remap(var, new)
        return new

    def visit_dataflow_block_(self, block: DataflowBlock) -> BindingBlock:
        self.blocks += 1
        self.builder_._begin_block(False)
        emit = self.builder_.emit_normalized
        for b in block.bindings:
            value = rename_vars(b.value, self.var_remap_)
            if value is None:  # a local function: the general path
                self.visit_binding(b)
                continue
            var = self.visit_var_def(b.var)
            if isinstance(b, MatchCast):
                emit(MatchCast(var, value, b.struct_info, b.span))
            else:
                emit(VarBinding(var, value, b.span))
        return BindingBlock(self.builder_._end_block(), block.span)


def to_non_dataflow(func, mod=None):
    """``func`` without dataflow blocks or DataflowVars, and how many blocks were converted."""
    m = _ToNonDataflow(mod)
    return m.visit_expr(func), m.blocks


@register("ToNonDataflow")
def ToNonDataflow():  # noqa: N802 - TVM's name
    """Function pass (opt 0): all dataflow blocks become binding blocks, DataflowVars Vars."""

    def transform(func, mod, ctx):
        out, n = to_non_dataflow(func, mod)
        if n:
            record_stat("dataflow blocks converted", n)
        return out

    return function_pass(transform, opt_level=0, name="ToNonDataflow",
                         needs=["relax_normalized"], keeps=["relax_normalized"])

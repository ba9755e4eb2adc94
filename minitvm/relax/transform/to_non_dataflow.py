"""ToNonDataflow: turn every dataflow block into a plain binding block and every DataflowVar
into a Var (TVM's ``relax.transform.ToNonDataflow``)."""

from __future__ import annotations

from ...ir.expr import GlobalVar
from ...ir.op import Op
from ...transform.stats import record_stat
from ..expr import (
    BindingBlock,
    Call,
    Constant,
    DataflowBlock,
    DataflowVar,
    DataTypeImm,
    ExternFunc,
    MatchCast,
    PrimValue,
    ShapeExpr,
    StringImm,
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
# operands that are neither variables nor trees, and hold no blocks or functions
_LEAVES = frozenset({Constant, ShapeExpr, PrimValue, StringImm, DataTypeImm, GlobalVar,
                     ExternFunc, Op})


def rename_vars(value, remap: dict):
    """``value`` (an operand tree) with variables replaced by same-struct-info variables from
    ``remap``; rebuilt nodes keep their struct info (nothing is re-inferred). None when the
    value holds something other than an operand tree."""
    if type(value) is Call:  # the common case, a call of leaves: one loop, no worklist
        flat = _rename_flat_call(value, remap)
        if flat is not None:
            return flat
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


def _rename_flat(e, remap: dict):
    """``e`` renamed when it is a leaf (a variable or one of ``_LEAVES``), else None."""
    t = type(e)
    if t is Var or t is DataflowVar:
        return remap.get(e, e)
    return e if t in _LEAVES else None


def _rename_flat_tuple(t: Tuple, remap: dict):
    """``rename_vars`` of a tuple of leaves (a ``call_tir``'s operands); None for another."""
    fields = []
    for f in t.fields:
        n = _rename_flat(f, remap)
        if n is None:
            return None
        fields.append(n)
    return t.with_fields(tuple(fields))


def _rename_flat_call(call: Call, remap: dict):
    """``rename_vars`` of a call whose callee and arguments are leaves or tuples of leaves
    (what the general walk gives it: the same nodes, or rebuilt calls and tuples keeping
    their struct info, one per tuple object); None for any other call."""
    op = _rename_flat(call.op, remap)
    if op is None:
        return None
    args = []
    tuples: dict = {}  # id(tuple) -> its renamed tuple (a tuple passed twice: rebuilt once)
    for a in call.args:
        if type(a) is Tuple:
            n = tuples.get(id(a))
            if n is None:
                n = tuples[id(a)] = _rename_flat_tuple(a, remap)
        else:
            n = _rename_flat(a, remap)
        if n is None:
            return None
        args.append(n)
    return call.with_operands(op, tuple(args))


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
        remap = self.var_remap_
        for b in block.bindings:
            value = rename_vars(b.value, remap)
            if value is None:  # a local function: the general path
                self.visit_binding(b)
                continue
            var = b.var
            if type(var) is DataflowVar:  # (``visit_dataflow_var_def_`` in one step)
                new = Var(var.name_hint, var._checked_type, var.span)
                remap[var] = new
                var = new
            else:
                var = self.visit_var_def(var)
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

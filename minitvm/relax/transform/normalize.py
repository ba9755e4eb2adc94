"""Normalize: bring Relax IR to normal form (TVM's ``relax.transform.Normalize``).

Normal form, as TVM's BlockBuilder normalizer defines it:

- every expression has its struct info;
- operands of calls, tuple accesses and ``If`` conditions are leaves (variables, constants,
  shapes, prim values, globals, ops...) or tuples of such; any other operand is bound to a fresh
  variable in the current block, right before the binding that uses it (a DataflowVar inside a
  dataflow block), each distinct operand once per block;
- function bodies and ``If`` branches are ``SeqExpr``s;
- a binding whose value is a ``SeqExpr`` is flattened into the enclosing sequence; empty
  blocks are dropped and adjacent blocks of the same kind merged;
- a ``match_cast`` value is a leaf (bound first otherwise).

The ``Normalizer`` here is what the other Relax passes use to re-normalize what they rebuild.
Operand trees are walked with an explicit stack, so a deeply nested expression and a
100,000-binding block are fine at the default recursion limit; only scopes (functions, branches)
nest on the Python stack.
"""

from __future__ import annotations

from ...ir.expr import GlobalVar
from ...ir.op import Op
from ...ir.structural import structural_equal
from ..block_builder import BlockBuilder
from ..expr import (
    BindingBlock,
    Call,
    DataflowBlock,
    Function,
    If,
    MatchCast,
    SeqExpr,
    Tuple,
    TupleGetItem,
    Var,
    VarBinding,
)
from ..expr_functor import ExprMutator
from ..struct_info import ObjectStructInfo
from . import properties as _properties  # noqa: F401  (registers relax_normalized)
from .function_pass import function_pass
from .utils import LEAF_TYPES as _LEAF_TYPES
from .utils import is_leaf, register

__all__ = ["Normalize", "Normalizer", "NormalizingMutator", "normalize_function",
           "normalize_expr", "is_normalized", "normalize_blocks"]

_DATAFLOW = (Call, Tuple, TupleGetItem)


def _operands(e) -> tuple:
    if isinstance(e, Call):
        return (e.op, *e.args)
    if isinstance(e, Tuple):
        return e.fields
    return (e.tuple_value,)


def _rebuild(e, kids):
    """``e`` with new operands (``e`` itself when they are the same objects)."""
    old = _operands(e)
    if all(a is b for a, b in zip(old, kids)):
        return e
    if isinstance(e, Call):
        return Call(kids[0], kids[1:], e.attrs, e.sinfo_args, e.span)
    if isinstance(e, Tuple):
        return Tuple(kids, e.span)
    return TupleGetItem(kids[0], e.index, e.span)


def if_struct_info(t, f):
    """The struct info of an ``If`` whose branches have ``t`` and ``f`` (their LCA)."""
    try:
        from ..analysis import struct_info_lca
    except ImportError:
        struct_info_lca = None
    if struct_info_lca is not None:
        return struct_info_lca(t, f)
    if structural_equal(t, f, map_free_vars=True):
        return t
    return ObjectStructInfo()


class Normalizer:
    """TVM's BlockBuilder normalization over a ``BlockBuilder`` (the module ``mod`` resolves
    the struct info of called globals). Bindings created for nested operands are emitted into
    the builder's current block."""

    def __init__(self, mod=None, builder: BlockBuilder | None = None):
        self.bb = builder if builder is not None else BlockBuilder(mod)
        self.mod = mod
        self._memo: list[dict] = [{}]  # per open block: operand -> the variable bound to it
        self.created = 0  # bindings created for nested operands

    # ----------------------------------------------------------------------------- blocks
    def _begin(self, dataflow: bool) -> None:
        self.bb._begin_block(dataflow)
        self._memo.append({})

    def _end(self) -> list:
        self._memo.pop()
        return self.bb._end_block()

    def _current_is_dataflow(self) -> bool:
        return self.bb.current_block_is_dataflow()

    def _emit(self, value) -> Var:
        self.created += 1
        return self.bb.emit(value)

    # ----------------------------------------------------------------------------- leaves
    def _leaf(self, e):
        if isinstance(e, GlobalVar) and e._checked_type is None and self.mod is not None:
            f = self.mod.functions.get(e) if e in self.mod.functions else None
            if f is not None and f._checked_type is not None:
                e._checked_type = f._checked_type
        elif isinstance(e, Var) and e._checked_type is None:
            raise ValueError(f"variable {e.name_hint!r} has no struct info")
        return e

    # ----------------------------------------------------------------------------- operands
    def normalize_argument(self, e):
        """``e`` as an operand: a leaf or a tuple of operands; anything else is normalized and
        bound to a new variable in the current block."""
        memo = self._memo[-1]
        hit = memo.get(e)
        if hit is not None:
            return hit
        if is_leaf(e) or isinstance(e, Op):
            return self._leaf(e)
        if isinstance(e, _DATAFLOW):
            return self._dataflow(e, as_operand=True)
        new = self.normalize(e)
        var = self._emit(new)
        memo[e] = var
        return var

    def _dataflow(self, root, as_operand: bool):
        """Normalize a tree of calls / tuples / tuple accesses, operands first (explicit
        stack). Nested calls and accesses are bound as soon as they are built, so the emitted
        order is TVM's (an operand's own operands, then the operand, left to right)."""
        memo = self._memo[-1]
        done: dict = {}  # id(original) -> its operand form (a var, a leaf or a tuple)
        stack = [(root, False)]
        while stack:
            e, ready = stack.pop()
            if not ready:
                if id(e) in done:
                    continue
                stack.append((e, True))
                for c in reversed(_operands(e)):
                    if isinstance(c, _DATAFLOW) and id(c) not in done and c not in memo:
                        stack.append((c, False))
                continue
            if id(e) in done:
                continue
            kids = []
            for c in _operands(e):
                if id(c) in done:
                    kids.append(done[id(c)])
                else:
                    kids.append(self.normalize_argument(c))
            new = _rebuild(e, kids)
            if new._checked_type is None:
                self.bb.normalize(new)
            if e is root and not as_operand:
                return new
            if isinstance(new, Tuple):
                done[id(e)] = new
            else:
                hit = memo.get(e)
                if hit is None:
                    hit = self._emit(new)
                    memo[e] = hit
                done[id(e)] = hit
        return done[id(root)]

    # ----------------------------------------------------------------------------- values
    def normalize(self, e):
        """Normalize ``e`` as a binding value (its nested operands are bound first)."""
        hit = self._memo[-1].get(e) if self._memo else None
        if hit is not None:
            return hit
        if isinstance(e, _DATAFLOW):
            return self._dataflow(e, as_operand=False)
        if isinstance(e, SeqExpr):
            return self._seq(e)
        if isinstance(e, If):
            return self._if(e)
        if isinstance(e, Function):
            return self._function(e)
        return self._leaf(e)

    def _if(self, e: If):
        cond = self.normalize_argument(e.cond)
        t = self.visit_with_new_scope(e.true_branch)
        f = self.visit_with_new_scope(e.false_branch)
        if cond is e.cond and t is e.true_branch and f is e.false_branch \
                and e._checked_type is not None:
            return e
        new = e if (cond is e.cond and t is e.true_branch and f is e.false_branch) else \
            If(cond, t, f, e.span)
        if new._checked_type is None:
            new._checked_type = if_struct_info(t.struct_info, f.struct_info)
        return new

    def _function(self, fn: Function):
        for p in fn.params:
            if p._checked_type is None:
                raise ValueError(f"parameter {p.name_hint!r} has no struct info")
        body = self.visit_with_new_scope(fn.body)
        if body is fn.body and fn._checked_type is not None:
            return fn
        return Function(fn.params, body, fn.ret_struct_info or body.struct_info, fn.is_pure,
                        fn.attrs, fn.span)

    def visit_with_new_scope(self, e):
        """A function body or a branch: always a SeqExpr afterwards."""
        if isinstance(e, SeqExpr):
            return self._seq(e)
        self._begin(False)
        try:
            post = self.normalize_argument(e)
        finally:
            bindings = self._end()
        blocks = [BindingBlock(bindings)] if bindings else []
        seq = SeqExpr(blocks, post)
        if seq._checked_type is None:
            seq._checked_type = post.struct_info
        return seq

    def _seq(self, e: SeqExpr):
        changed = False
        blocks = []
        for block in e.blocks:
            new = self.normalize_block(block)
            changed |= new is not block
            blocks.append(new)
        dataflow = bool(self.bb._frames) and self._current_is_dataflow()
        self._begin(dataflow)
        try:
            body = self.normalize_argument(e.body)
        finally:
            prologue = self._end()
        changed |= body is not e.body
        if prologue:
            blocks.append(DataflowBlock(prologue) if dataflow else BindingBlock(prologue))
            changed = True
        merged = normalize_blocks(blocks)
        changed |= merged is not blocks
        if not changed and e._checked_type is not None:
            return e
        seq = SeqExpr(merged, body, e.span)
        if seq._checked_type is None:
            seq._checked_type = body.struct_info
        return seq

    def normalize_block(self, block: BindingBlock) -> BindingBlock:
        dataflow = isinstance(block, DataflowBlock)
        self._begin(dataflow)
        try:
            changed = False
            emit = self.bb.emit_normalized
            for b in block.bindings:
                if isinstance(b, MatchCast):
                    value = self.normalize_argument(self.normalize(b.value))
                    if value is not b.value:
                        changed = True
                        b = MatchCast(b.var, value, b.struct_info, b.span)
                    if b.var._checked_type is None:
                        b.var._checked_type = b.struct_info
                else:
                    value = self.normalize(b.value)
                    if value is not b.value:
                        changed = True
                        b = VarBinding(b.var, value, b.span)
                    if b.var._checked_type is None:
                        b.var._checked_type = value.struct_info
                emit(b)
        finally:
            bindings = self._end()
        if not changed and len(bindings) == len(block.bindings):
            return block
        return DataflowBlock(bindings, block.span) if dataflow else \
            BindingBlock(bindings, block.span)


def _flatten(blocks: list) -> list:
    """TVM's FlattenBlocks: a binding bound to a SeqExpr splits its block around the
    SeqExpr's blocks and binds the SeqExpr's body."""
    if not any(isinstance(b.value, SeqExpr) for block in blocks for b in block.bindings):
        return blocks
    out = []
    for block in blocks:
        dataflow = isinstance(block, DataflowBlock)
        cls = DataflowBlock if dataflow else BindingBlock
        current = []
        for b in block.bindings:
            value = b.value
            if isinstance(value, SeqExpr):
                out.append(cls(current))
                current = []
                out.extend(value.blocks)
                if isinstance(b, MatchCast):
                    current.append(MatchCast(b.var, value.body, b.struct_info, b.span))
                else:
                    current.append(VarBinding(b.var, value.body, b.span))
            else:
                current.append(b)
        out.append(cls(current, block.span))
    return out


def normalize_blocks(blocks: list) -> list:
    """Flatten nested sequences, drop empty blocks and merge adjacent blocks of one kind
    (``blocks`` itself when nothing changes)."""
    flat = _flatten(blocks)
    changed = flat is not blocks
    out: list = []
    for block in flat:
        if not block.bindings:
            changed = True
        elif out and type(out[-1]) is type(block):
            prev = out.pop()
            out.append(type(prev)(prev.bindings + block.bindings, prev.span))
            changed = True
        else:
            out.append(block)
    return out if changed else blocks


class NormalizingMutator(ExprMutator):
    """The ExprMutator the Relax passes derive from: like TVM's, a rebuilt ``SeqExpr`` has its
    empty blocks dropped, adjacent blocks of one kind merged and nested sequences flattened."""

    def visit_if_(self, op: If):
        cond = self.visit_expr(op.cond)
        t = self.visit_with_new_scope(op.true_branch)
        f = self.visit_with_new_scope(op.false_branch)
        if cond is op.cond and t is op.true_branch and f is op.false_branch:
            return op
        new = If(cond, t, f, op.span)
        new._checked_type = if_struct_info(t.struct_info, f.struct_info)
        return new

    def visit_seq_expr_(self, op: SeqExpr):
        out = super().visit_seq_expr_(op)
        if not isinstance(out, SeqExpr):
            return out
        blocks = list(out.blocks)
        merged = normalize_blocks(blocks)
        if merged is blocks:
            return out
        new = SeqExpr(merged, out.body, out.span)
        new._checked_type = out._checked_type
        return new


class DataflowTrackingMutator(NormalizingMutator):
    """A NormalizingMutator that knows whether it is inside a dataflow block
    (``self.in_dataflow``): passes that rewrite only pure dataflow bindings check it."""

    in_dataflow = False

    def visit_dataflow_block_(self, block):
        self.in_dataflow = True
        try:
            return super().visit_dataflow_block_(block)
        finally:
            self.in_dataflow = False


def normalize_expr(expr, mod=None):
    """The normal form of a function or expression (module ``mod`` types called globals)."""
    n = Normalizer(mod)
    if isinstance(expr, Function):
        return n.normalize(expr)
    return n.visit_with_new_scope(expr)


def normalize_function(func: Function, mod=None) -> Function:
    """``func`` in normal form (``func`` itself when it already is)."""
    return Normalizer(mod).normalize(func)


# ----------------------------------------------------------------------------------- property
def is_normalized(func: Function) -> str | None:
    """None when ``func`` is in normal form, else where it is not (an iterative check)."""
    stack = [func]
    while stack:
        e = stack.pop()
        if isinstance(e, Function):
            if not isinstance(e.body, SeqExpr):
                return "a function body is not a SeqExpr"
            if e._checked_type is None:
                return "a function has no struct info"
            stack.append(e.body)
        elif isinstance(e, SeqExpr):
            prev = None
            for block in e.blocks:
                if not block.bindings:
                    return "an empty binding block"
                if prev is not None and type(prev) is type(block):
                    return "two adjacent blocks of the same kind"
                prev = block
                for b in block.bindings:
                    if b.var._checked_type is None:
                        return f"variable {b.var.name_hint!r} has no struct info"
                    v = b.value
                    if isinstance(v, SeqExpr):
                        return f"{b.var.name_hint!r} is bound to a nested SeqExpr"
                    if isinstance(b, MatchCast) and not is_leaf(v):
                        return f"the match_cast value of {b.var.name_hint!r} is not a leaf"
                    if type(v) is not Call or not _leaf_call(v):
                        why = _value_normal(v)
                        if why:
                            return f"{why} (in the binding of {b.var.name_hint!r})"
                    if isinstance(v, If | Function):
                        stack.append(v)
            why = _operand_normal(e.body)
            if why:
                return f"{why} (in a SeqExpr body)"
            if e._checked_type is None:
                return "a SeqExpr has no struct info"
        elif isinstance(e, If):
            for br in (e.true_branch, e.false_branch):
                if not isinstance(br, SeqExpr):
                    return "an If branch is not a SeqExpr"
                stack.append(br)
    return None


def _leaf_call(v: Call) -> bool:
    """Whether call ``v`` is plainly normal, told by its nodes' exact types: it has struct info,
    its callee and operands are leaves or tuples (with struct info) of leaves. Most bindings
    are (a call_tir of a global and a tuple of variables); ``_value_normal`` checks the rest
    (False here says nothing)."""
    if v._checked_type is None or type(v.op) not in _LEAF_TYPES:
        return False
    for a in v.args:
        t = type(a)
        if t in _LEAF_TYPES:
            continue
        if t is not Tuple or a._checked_type is None:
            return False
        for f in a.fields:
            if type(f) not in _LEAF_TYPES:
                return False
    return True


def _operand_normal(e) -> str | None:
    stack = [e]
    while stack:
        x = stack.pop()
        if is_leaf(x):
            continue
        if isinstance(x, Tuple):
            if x._checked_type is None:
                return "a tuple has no struct info"
            stack.extend(x.fields)
            continue
        return f"a nested {type(x).__name__} operand"
    return None


_UNTYPED_LEAF = (GlobalVar, Op)  # (made once: a union per check cost a microsecond)


def _value_normal(v) -> str | None:
    if v._checked_type is None and not isinstance(v, _UNTYPED_LEAF):
        return f"a {type(v).__name__} without struct info"
    if isinstance(v, Call):
        if not is_leaf(v.op):
            return "a call whose callee is not a leaf"
        for a in v.args:
            why = _operand_normal(a)
            if why:
                return why
        return None
    if isinstance(v, Tuple):
        return _operand_normal(v)
    if isinstance(v, TupleGetItem):
        return _operand_normal(v.tuple_value)
    if isinstance(v, If):
        return _operand_normal(v.cond)
    return None


@register("Normalize")
def Normalize():  # noqa: N802 - TVM's name
    """Function pass (opt 1): Relax IR to normal form — struct info everywhere, operands
    bound to variables (ANF), SeqExpr bodies and branches, nested sequences flattened, empty
    blocks dropped and adjacent blocks merged."""

    def transform(func, mod, ctx):
        n = Normalizer(mod)
        out = n.normalize(func)
        if n.created:
            from ...transform.stats import record_stat

            record_stat("bindings created", n.created)
        return out

    return function_pass(transform, opt_level=1, name="Normalize",
                         establishes=["relax_normalized"])

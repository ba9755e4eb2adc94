"""Relax visitors and mutators (TVM's ``relax.expr_functor``): ``PyExprVisitor``,
``PyExprMutator`` with the ``visitor``/``mutator`` decorators.

Override ``visit_call_``, ``visit_var_binding_``, ... and call ``super()`` for the default.
Nested dataflow expressions are visited operands-first from an explicit worklist before the
hook runs (the hook's own ``visit_expr`` calls then hit the memo), so no Python recursion grows
with the program; blocks are loops over their bindings. The mutator rebuilds through its
``builder_`` (a BlockBuilder), reusing a binding's variable when its struct info is unchanged.
"""

from __future__ import annotations

from operator import is_

from ..ir.expr import GlobalVar
from ..ir.module import IRModule
from ..ir.node import node_operands
from ..ir.op import Op
from ..ir.structural import structural_equal
from .block_builder import BlockBuilder
from .expr import (
    BindingBlock,
    Call,
    Constant,
    DataflowBlock,
    DataflowVar,
    DataTypeImm,
    Expr,
    ExternFunc,
    Function,
    If,
    MatchCast,
    PrimValue,
    SeqExpr,
    ShapeExpr,
    StringImm,
    Tuple,
    TupleGetItem,
    Var,
    VarBinding,
)

__all__ = ["ExprVisitor", "ExprMutator", "PyExprVisitor", "PyExprMutator", "visitor", "mutator"]

_HOOK = {
    Constant: "visit_constant_", Tuple: "visit_tuple_", Var: "visit_var_",
    DataflowVar: "visit_dataflow_var_", ShapeExpr: "visit_shape_expr_",
    ExternFunc: "visit_extern_func_", GlobalVar: "visit_global_var_",
    Function: "visit_function_", Call: "visit_call_", SeqExpr: "visit_seq_expr_", If: "visit_if_",
    Op: "visit_op_", TupleGetItem: "visit_tuple_getitem_", PrimValue: "visit_prim_value_",
    StringImm: "visit_string_imm_", DataTypeImm: "visit_data_type_imm_",
}
_DATAFLOW = (Call, Tuple, TupleGetItem)
_MISSING = object()


_HOOK_OF: dict = dict(_HOOK)  # class -> its hook's name, subclasses added on first use


def _hook_name(cls) -> str:
    name = _HOOK_OF.get(cls)
    if name is not None:
        return name
    for c in cls.__mro__:
        name = _HOOK.get(c)
        if name is not None:
            _HOOK_OF[cls] = name
            return name
    raise TypeError(f"{cls.__name__} is not a Relax expression")


class _Functor:
    """Dispatch with memoization; dataflow operands are visited first from a worklist."""

    def __init__(self):
        self.memo_map: dict = {}

    def __getattr__(self, name):
        # a subclass whose __init__ does not call super().__init__() (TVM's decorated
        # visitors need not): the state is made on first use
        if name == "memo_map":
            self.memo_map = {}
            return self.memo_map
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def visit_expr(self, expr):
        if not isinstance(expr, _DATAFLOW):  # leaves and scopes: visited at every use
            return getattr(self, _HOOK_OF.get(type(expr)) or _hook_name(type(expr)))(expr)
        memo = self.memo_map
        hit = memo.get(expr, _MISSING)
        if hit is not _MISSING:
            return hit
        self._pre_visit(expr)
        res = getattr(self, _HOOK_OF.get(type(expr)) or _hook_name(type(expr)))(expr)
        memo[expr] = res
        return res

    def _pre_visit(self, root) -> None:
        """Visit the nested dataflow operands of ``root`` bottom-up (not ``root`` itself), so
        the hooks' own ``visit_expr`` calls on them hit the memo."""
        memo = self.memo_map
        operands = node_operands(root)
        for c in operands:
            if isinstance(c, _DATAFLOW) and c not in memo:
                break
        else:  # (a call of variables, the usual binding value: nothing to visit first)
            return
        stack = [(c, False) for c in reversed(operands) if isinstance(c, _DATAFLOW)]
        while stack:
            e, ready = stack.pop()
            if e in memo:
                continue
            if not ready:
                stack.append((e, True))
                stack.extend((c, False) for c in reversed(node_operands(e))
                             if isinstance(c, _DATAFLOW) and c not in memo)
                continue
            memo[e] = getattr(self, _HOOK_OF.get(type(e)) or _hook_name(type(e)))(e)


class ExprVisitor(_Functor):
    """Visit every expression and binding of a Relax program."""

    def visit_binding_block(self, block: BindingBlock) -> None:
        if isinstance(block, DataflowBlock):
            self.visit_dataflow_block_(block)
        else:
            self.visit_binding_block_(block)

    def visit_binding_block_(self, block: BindingBlock) -> None:
        for b in block.bindings:
            self.visit_binding(b)

    def visit_dataflow_block_(self, block: DataflowBlock) -> None:
        for b in block.bindings:
            self.visit_binding(b)

    def visit_binding(self, binding) -> None:
        if isinstance(binding, MatchCast):
            self.visit_match_cast_(binding)
        else:
            self.visit_var_binding_(binding)

    def visit_var_binding_(self, binding: VarBinding) -> None:
        self.visit_expr(binding.value)
        self.visit_var_def(binding.var)

    def visit_match_cast_(self, binding: MatchCast) -> None:
        self.visit_expr(binding.value)
        self.visit_var_def(binding.var)

    def visit_var_def(self, var: Var) -> None:
        if isinstance(var, DataflowVar):
            self.visit_dataflow_var_def_(var)
        else:
            self.visit_var_def_(var)

    def visit_var_def_(self, var: Var) -> None:
        pass

    def visit_dataflow_var_def_(self, var: DataflowVar) -> None:
        pass

    # leaves
    def visit_constant_(self, op):
        pass

    def visit_var_(self, op):
        pass

    def visit_dataflow_var_(self, op):
        pass

    def visit_shape_expr_(self, op):
        pass

    def visit_extern_func_(self, op):
        pass

    def visit_global_var_(self, op):
        pass

    def visit_op_(self, op):
        pass

    def visit_prim_value_(self, op):
        pass

    def visit_string_imm_(self, op):
        pass

    def visit_data_type_imm_(self, op):
        pass

    # composites
    def visit_tuple_(self, op: Tuple):
        for f in op.fields:
            self.visit_expr(f)

    def visit_tuple_getitem_(self, op: TupleGetItem):
        self.visit_expr(op.tuple_value)

    def visit_call_(self, op: Call):
        self.visit_expr(op.op)
        for a in op.args:
            self.visit_expr(a)

    def visit_if_(self, op: If):
        self.visit_expr(op.cond)
        self.visit_expr(op.true_branch)
        self.visit_expr(op.false_branch)

    def visit_seq_expr_(self, op: SeqExpr):
        for block in op.blocks:
            self.visit_binding_block(block)
        self.visit_expr(op.body)

    def visit_function_(self, op: Function):
        for p in op.params:
            self.visit_var_def(p)
        self.visit_expr(op.body)


class ExprMutator(_Functor):
    """Rebuild a Relax program; hooks return the new expression (the old one when unchanged).

    ``builder_`` (a BlockBuilder over ``mod``) normalizes what the hooks build and collects
    the module (``builder_.update_func``, ``builder_.get()``).
    """

    def __init__(self, mod: IRModule | None = None):
        super().__init__()
        self.builder_ = BlockBuilder(mod)
        self.var_remap_: dict = {}

    def __getattr__(self, name):
        if name == "builder_":  # __init__ did not call super().__init__(mod)
            self.builder_ = BlockBuilder()
            return self.builder_
        if name == "var_remap_":
            self.var_remap_ = {}
            return self.var_remap_
        return super().__getattr__(name)

    # ------------------------------------------------------------------ helpers
    def set_var_remap(self, vid, var: Var) -> None:
        """Uses of ``vid`` (a Var) become ``var``."""
        self.var_remap_[vid] = var

    def get_var_remap(self, vid):
        return self.var_remap_.get(vid)

    def lookup_binding(self, var: Var):
        """The value bound to ``var`` in the block being rebuilt or the program, or None."""
        return self.builder_.lookup_binding(var)

    def visit_expr(self, expr):
        # (the functor's dispatch, inlined: a pass calls this for every operand of every
        # binding, and the extra frame was a tenth of a 100,000-binding rewrite)
        if isinstance(expr, _DATAFLOW):
            memo = self.memo_map
            res = memo.get(expr, _MISSING)
            if res is _MISSING:
                self._pre_visit(expr)
                res = getattr(self, _HOOK_OF.get(type(expr)) or _hook_name(type(expr)))(expr)
                memo[expr] = res
        else:  # leaves and scopes: visited at every use
            res = getattr(self, _HOOK_OF.get(type(expr)) or _hook_name(type(expr)))(expr)
        if isinstance(res, Var) and res._checked_type is not None:
            return res  # (a variable: nothing to normalize)
        return self.builder_.normalize(res) if isinstance(res, Expr) else res

    def visit_expr_post_order(self, expr):
        return self.visit_expr(expr)

    def with_struct_info(self, var: Var, sinfo) -> Var:
        """``var`` itself when its struct info is ``sinfo``, else a new variable of that."""
        if var._struct_info is sinfo or var._struct_info is not None and structural_equal(
                var._struct_info, sinfo, map_free_vars=True):
            return var
        cls = DataflowVar if isinstance(var, DataflowVar) else Var
        return cls(var.name_hint, sinfo)

    # ------------------------------------------------------------------ leaves
    def visit_var_(self, op: Var):
        return self.var_remap_.get(op, op)

    def visit_dataflow_var_(self, op: DataflowVar):
        return self.var_remap_.get(op, op)

    def visit_constant_(self, op):
        return op

    def visit_shape_expr_(self, op):
        return op

    def visit_extern_func_(self, op):
        return op

    def visit_global_var_(self, op):
        return op

    def visit_op_(self, op):
        return op

    def visit_prim_value_(self, op):
        return op

    def visit_string_imm_(self, op):
        return op

    def visit_data_type_imm_(self, op):
        return op

    # ------------------------------------------------------------------ composites
    def visit_tuple_(self, op: Tuple):
        fields = [self.visit_expr(f) for f in op.fields]
        if all(map(is_, fields, op.fields)):
            return op
        return Tuple(fields, op.span)

    def visit_tuple_getitem_(self, op: TupleGetItem):
        t = self.visit_expr(op.tuple_value)
        return op if t is op.tuple_value else TupleGetItem(t, op.index, op.span)

    def visit_call_(self, op: Call):
        new_op = self.visit_expr(op.op)
        visit = self.visit_expr
        args = [visit(a) for a in op.args]
        if new_op is op.op and all(map(is_, args, op.args)):
            return op
        return Call(new_op, args, op.attrs, op.sinfo_args, op.span)

    def visit_if_(self, op: If):
        cond = self.visit_expr(op.cond)
        t = self.visit_with_new_scope(op.true_branch)
        f = self.visit_with_new_scope(op.false_branch)
        if cond is op.cond and t is op.true_branch and f is op.false_branch:
            return op
        return If(cond, t, f, op.span)

    def visit_with_new_scope(self, expr):
        """Visit a nested scope (a branch, a function body) with its own blocks."""
        return self.visit_expr(expr)

    def visit_function_(self, op: Function):
        params = [self.visit_var_def(p) for p in op.params]
        for old_p, new_p in zip(op.params, params):
            if new_p is not old_p:
                self.set_var_remap(old_p, new_p)
        body = self.visit_with_new_scope(op.body)
        if all(a is b for a, b in zip(params, op.params)) and body is op.body:
            return op
        ret = body._struct_info if body._struct_info is not None else op.ret_struct_info
        if op.ret_struct_info is not None and body is not op.body:
            ret = op.ret_struct_info if _base_of(op.ret_struct_info, body._struct_info) else ret
        return Function(params, body, ret, op.is_pure, op.attrs, op.span)

    def visit_seq_expr_(self, op: SeqExpr):
        blocks = []
        changed = False
        for block in op.blocks:
            new = self.visit_binding_block(block)
            changed |= new is not block
            if new.bindings:
                blocks.append(new)
            else:
                changed = True
        body = self.visit_expr(op.body)
        if not changed and body is op.body:
            return op
        return SeqExpr(blocks, body, op.span)

    # ------------------------------------------------------------------ bindings
    def visit_binding_block(self, block: BindingBlock) -> BindingBlock:
        if isinstance(block, DataflowBlock):
            return self.visit_dataflow_block_(block)
        return self.visit_binding_block_(block)

    def _rebuild_block(self, block: BindingBlock, cls) -> BindingBlock:
        self.builder_._begin_block(cls is DataflowBlock)
        for b in block.bindings:
            self.visit_binding(b)
        bindings = self.builder_._end_block()
        if len(bindings) == len(block.bindings) and all(map(is_, bindings, block.bindings)):
            return block
        return cls(bindings, block.span)

    def visit_binding_block_(self, block: BindingBlock) -> BindingBlock:
        return self._rebuild_block(block, BindingBlock)

    def visit_dataflow_block_(self, block: DataflowBlock) -> DataflowBlock:
        return self._rebuild_block(block, DataflowBlock)

    def visit_binding(self, binding) -> None:
        if isinstance(binding, MatchCast):
            self.visit_match_cast_(binding)
        else:
            self.visit_var_binding_(binding)

    def visit_var_binding_(self, binding: VarBinding) -> None:
        value = self.visit_expr(binding.value)
        if value is binding.value:
            var = self.visit_var_def(binding.var)
            if var is binding.var:
                self.builder_.emit_normalized(binding)
                return
        else:
            var = self.with_struct_info(self.visit_var_def(binding.var), value._struct_info)
        if var is not binding.var:
            self.set_var_remap(binding.var, var)
        self.builder_.emit_normalized(VarBinding(var, value, binding.span))

    def visit_match_cast_(self, binding: MatchCast) -> None:
        value = self.visit_expr(binding.value)
        var = self.visit_var_def(binding.var)
        if value is binding.value and var is binding.var:
            self.builder_.emit_normalized(binding)
            return
        if var is not binding.var:
            self.set_var_remap(binding.var, var)
        self.builder_.emit_normalized(MatchCast(var, value, binding.struct_info, binding.span))

    def visit_var_def(self, var: Var) -> Var:
        if isinstance(var, DataflowVar):
            return self.visit_dataflow_var_def_(var)
        return self.visit_var_def_(var)

    def visit_var_def_(self, var: Var) -> Var:
        return var

    def visit_dataflow_var_def_(self, var: DataflowVar) -> DataflowVar:
        return var


def _base_of(base, derived) -> bool:
    try:
        from .analysis import struct_info_base_check

        return struct_info_base_check(base, derived)
    except ImportError:  # pragma: no cover - analysis not built
        return structural_equal(base, derived, map_free_vars=True)


PyExprVisitor = ExprVisitor
PyExprMutator = ExprMutator


def visitor(cls):
    """Decorate a ``PyExprVisitor`` subclass (TVM registers it with C++; here a marker)."""
    if not issubclass(cls, ExprVisitor):
        raise TypeError(f"@visitor expects a PyExprVisitor subclass, got {cls.__name__}")
    return cls


def mutator(cls):
    """Decorate a ``PyExprMutator`` subclass (TVM registers it with C++; here a marker)."""
    if not issubclass(cls, ExprMutator):
        raise TypeError(f"@mutator expects a PyExprMutator subclass, got {cls.__name__}")
    return cls

"""``rewrite_call`` (TVM's ``relax.dpl.rewrite_call``): replace every binding value that matches
a pattern with what a rewriter returns, looking through the function's bindings; and
``rewrite_bindings``: replace several bindings of a dataflow block at once where a
``PatternContext`` matches (:mod:`.context`)."""

from __future__ import annotations

from collections.abc import Callable

from ..block_builder import _DATAFLOW, _needs_binding, _with_operands
from ..block_builder import _operands as _kids
from ..expr import DataflowBlock, Function, VarBinding
from ..expr_functor import ExprMutator
from .context import PatternContext, match_dfb
from .matcher import match_expr
from .pattern import DFPattern

__all__ = ["rewrite_call", "rewrite_bindings"]

MAX_ROUNDS = 100


class _CallRewriter(ExprMutator):
    def __init__(self, pattern: DFPattern, rewriter: Callable):
        super().__init__()
        self.pattern = pattern
        self.rewriter = rewriter
        self.var2val: dict = {}
        self.changed = 0

    def visit_var_binding_(self, binding: VarBinding) -> None:
        value = self.visit_expr(binding.value)
        matches = match_expr(self.pattern, value, self.var2val)
        if matches is not None:
            new = self.rewriter(value, matches)
            if new is not None and new is not value:
                # nested calls of the replacement bound first, as TVM's normalizer does
                value = self.builder_.normalize(_bind_nested(new, self.builder_, {}, []))
                self.changed += 1
        var = binding.var
        if value is not binding.value:
            var = self.with_struct_info(var, value.struct_info)
            if var is not binding.var:
                self.set_var_remap(binding.var, var)
            self.builder_.emit_normalized(VarBinding(var, value, binding.span))
        else:
            self.builder_.emit_normalized(binding)
        self.var2val[var] = value


def rewrite_call(pattern: DFPattern, rewriter: Callable, func: Function) -> Function:
    """``func`` with each matching binding value ``e`` replaced by ``rewriter(e, matches)``
    (``matches``: pattern -> matched expression), repeated until nothing changes."""
    for _ in range(MAX_ROUNDS):
        m = _CallRewriter(pattern, rewriter)
        new = m.visit_expr(func)
        if not m.changed:
            return new
        func = new
    raise RuntimeError(f"rewrite_call: no fixed point after {MAX_ROUNDS} rounds; the "
                       "rewriter keeps producing matches")


class _BindingsRewriter(ExprMutator):
    """Rewrites each dataflow block while ``ctx`` matches in it (one match per round)."""

    def __init__(self, ctx: PatternContext, rewriter: Callable):
        super().__init__()
        self.ctx, self.rewriter = ctx, rewriter

    def visit_dataflow_block_(self, block: DataflowBlock) -> DataflowBlock:
        if self.var_remap_ or any(isinstance(b.value, Function) for b in block.bindings):
            block = super().visit_dataflow_block_(block)  # (renamed uses, inner functions)
        for _ in range(MAX_ROUNDS):
            matches = match_dfb(self.ctx, block)
            if matches is None:
                return block
            replace = self.rewriter(matches, {b.var: b.value for b in block.bindings})
            if not replace:
                return block
            block = self._replace(block, dict(replace))
        raise RuntimeError(f"rewrite_bindings: no fixed point after {MAX_ROUNDS} rounds; the "
                           "rewriter keeps producing matches")

    def _replace(self, block: DataflowBlock, replace: dict) -> DataflowBlock:
        bb = self.builder_
        bb._begin_block(True)
        bound: dict[int, object] = {}  # a sub-expression shared by replacements: bound once
        keep = []
        renamed = False  # (until a replacement changes a variable's struct info, the other
        for b in block.bindings:  # bindings stay as they are)
            if b.var not in replace:
                if renamed:
                    self.visit_binding(b)
                else:
                    bb.emit_normalized(b)
                continue
            value = bb.normalize(_bind_nested(replace.pop(b.var), bb, bound, keep))
            var = self.with_struct_info(b.var, value.struct_info)
            if var is not b.var:
                if not renamed:
                    self.memo_map = {}
                renamed = True
                self.set_var_remap(b.var, var)
            bb.emit_normalized(VarBinding(var, value, b.span))
        if replace:
            names = ", ".join(v.name_hint for v in replace)
            raise ValueError(f"rewrite_bindings: the rewriter replaced {names}, not bound in "
                             "the matched block")
        return DataflowBlock(bb._end_block(), block.span)


def _bind_nested(expr, bb, bound: dict, keep: list):
    """``expr`` with its nested calls (tuple items, ...) bound to variables first, innermost
    first, each distinct sub-expression object once (iterative)."""
    if not isinstance(expr, _DATAFLOW):
        return expr
    done: dict[int, object] = {}
    stack = [(expr, False)]
    while stack:
        e, ready = stack.pop()
        if id(e) in done:
            continue
        kids = _kids(e)
        if not ready:
            stack.append((e, True))
            stack.extend((k, False) for k in reversed(kids) if id(k) not in done)
            continue
        new = []
        for k in kids:
            rebuilt = done.get(id(k), k)
            if _needs_binding(rebuilt):
                if id(k) not in bound:
                    bound[id(k)] = bb.emit(rebuilt)
                    keep.append(k)
                rebuilt = bound[id(k)]
            new.append(rebuilt)
        done[id(e)] = e if all(a is b for a, b in zip(new, kids)) else _with_operands(e, new)
    return done[id(expr)]


def rewrite_bindings(ctx: PatternContext, rewriter: Callable, func: Function) -> Function:
    """``func`` with, in each dataflow block where ``ctx``'s patterns match, the bindings
    ``rewriter(matchings, bindings)`` returns (variable -> new value) rebound to those values;
    ``matchings`` maps each pattern to the variable it matched, ``bindings`` each variable of
    the block to its value. Repeated while the patterns match and the rewriter changes something."""
    return _BindingsRewriter(ctx, rewriter).visit_expr(func)

"""``PatternMatchingRewriter`` (TVM's ``relax.dpl.PatternMatchingRewriter``, made by
``@R.rewriter``): a rewrite written as two Relax functions, ``pattern`` and ``replacement``, of
the same parameters.

The pattern function's bindings become one dataflow pattern (its parameters are wildcards
constrained to their dtype and static shape; each call's attributes must be equal); where a
binding value of a program matches, it is replaced by the replacement function's body with its
parameters bound to what the pattern's parameters matched. ``a | b`` tries ``a`` first on each
binding, then ``b``. Applied to an IRModule (every Relax function) or to one function.
"""

from __future__ import annotations

from ...ir.module import IRModule
from ...ir.prim_expr import IntImm
from ...ir.structural import structural_equal
from ..block_builder import _operands as _kids
from ..block_builder import _with_operands
from ..expr import (
    Call,
    Function,
    SeqExpr,
    Tuple,
    TupleGetItem,
    Var,
    VarBinding,
)
from ..struct_info import TensorStructInfo
from .pattern import (
    CallPattern,
    DFPattern,
    ExprPattern,
    TupleGetItemPattern,
    TuplePattern,
    wildcard,
)
from .rewrite import rewrite_call

__all__ = ["PatternMatchingRewriter"]


class _Rule:
    """One pattern function and its replacement."""

    def __init__(self, pattern_func: Function, replacement: Function):
        if len(pattern_func.params) != len(replacement.params):
            raise ValueError("the pattern and replacement functions take different parameters: "
                             f"{len(pattern_func.params)} vs {len(replacement.params)}")
        self.params = [_param_pattern(p) for p in pattern_func.params]
        self.calls: list[tuple[CallPattern, Call]] = []  # whose attributes must be equal
        self.pattern = _to_pattern(pattern_func, self.params, self.calls)
        self.replacement = replacement

    def apply(self, expr, matches: dict):
        for pat, call in self.calls:
            got = matches.get(pat)
            if got is None or not structural_equal(got.attrs, call.attrs):
                return None
        return _inline(self.replacement, [matches[p] for p in self.params])


class PatternMatchingRewriter:
    """Rewrites every binding that one of its rules' patterns matches (see the module doc)."""

    def __init__(self, rules: list[_Rule]):
        self.rules = list(rules)

    @staticmethod
    def from_module(mod: IRModule) -> PatternMatchingRewriter:
        """The rewriter of ``mod``'s functions ``pattern`` and ``replacement``."""
        names = {gv.name_hint for gv in mod.functions}
        missing = sorted({"pattern", "replacement"} - names)
        if missing:
            raise ValueError(f"a rewriter module needs functions named 'pattern' and "
                             f"'replacement'; {', '.join(missing)} missing (has {sorted(names)})")
        return PatternMatchingRewriter([_Rule(mod["pattern"], mod["replacement"])])

    def __or__(self, other: PatternMatchingRewriter) -> PatternMatchingRewriter:
        return PatternMatchingRewriter(self.rules + other.rules)

    def __call__(self, target):
        if isinstance(target, Function):
            return self._rewrite(target)
        if isinstance(target, IRModule):
            out = target.shallow_copy()
            for gv, func in list(target.functions.items()):
                if isinstance(func, Function):
                    new = self._rewrite(func)
                    if new is not func:
                        out.update_func(gv, new)
            return out
        raise TypeError(f"a PatternMatchingRewriter applies to an IRModule or a relax.Function, "
                        f"got {type(target).__name__}")

    def _rewrite(self, func: Function) -> Function:
        pattern: DFPattern = self.rules[0].pattern
        for r in self.rules[1:]:
            pattern = pattern | r.pattern

        def rewriter(expr, matches):
            for r in self.rules:  # the first rule whose pattern matched, and accepts
                if r.pattern in matches:
                    new = r.apply(expr, matches)
                    if new is not None:
                        return new
            return expr

        return rewrite_call(pattern, rewriter, func)


def _param_pattern(p: Var) -> DFPattern:
    s = p.struct_info
    pat: DFPattern = wildcard()
    if isinstance(s, TensorStructInfo):
        if s.dtype and s.dtype != "void":
            pat = pat.has_dtype(s.dtype)
        dims = getattr(s.shape, "values", None) if s.shape is not None else None
        if dims is not None and all(isinstance(d, IntImm) for d in dims):
            pat = pat.has_shape([d.value for d in dims])
    return pat


def _bindings(func: Function) -> tuple[list, object]:
    body = func.body
    if not isinstance(body, SeqExpr):
        return [], body
    out = []
    for block in body.blocks:
        for b in block.bindings:
            if not isinstance(b, VarBinding):
                raise ValueError("a pattern function may hold only variable bindings (no "
                                 "match_cast)")
            out.append(b)
    return out, body.body


def _to_pattern(func: Function, params: list, calls: list) -> DFPattern:
    """The pattern of ``func``'s result: its bindings' calls, tuples and items, iteratively."""
    bindings, result = _bindings(func)
    of: dict = dict(zip(func.params, params))
    for b in bindings:
        of[b.var] = _expr_pattern(b.value, of, calls)
    return _expr_pattern(result, of, calls)


def _expr_pattern(expr, of: dict, calls: list) -> DFPattern:
    done: dict[int, DFPattern] = {}
    stack = [(expr, False)]
    while stack:
        e, ready = stack.pop()
        if id(e) in done:
            continue
        if isinstance(e, Var):
            if e not in of:
                raise ValueError(f"the pattern function uses {e.name_hint}, bound outside it")
            done[id(e)] = of[e]
            continue
        kids = _kids(e)
        if not ready:
            stack.append((e, True))
            stack.extend((k, False) for k in kids if id(k) not in done)
            continue
        sub = [done[id(k)] for k in kids]
        if isinstance(e, Call):
            pat = CallPattern(ExprPattern(e.op) if not isinstance(e.op, Var) else of[e.op], sub,
                              add_constraint=False)
            if e.attrs is not None:
                calls.append((pat, e))
        elif isinstance(e, Tuple):
            pat = TuplePattern(sub)
        elif isinstance(e, TupleGetItem):
            pat = TupleGetItemPattern(sub[0], e.index)
        else:  # constants, shapes, prim values, extern functions: equal to themselves
            pat = ExprPattern(e)
        done[id(e)] = pat
    return done[id(expr)]


def _inline(func: Function, args: list):
    """``func``'s result with its parameters replaced by ``args`` and its bindings inlined
    (the caller's normalizer binds the nested calls again)."""
    bindings, result = _bindings(func)
    value: dict = dict(zip(func.params, args))
    for b in bindings:
        value[b.var] = _substitute(b.value, value)
    return _substitute(result, value)


def _substitute(expr, value: dict):
    done: dict[int, object] = {}
    stack = [(expr, False)]
    while stack:
        e, ready = stack.pop()
        if id(e) in done:
            continue
        if isinstance(e, Var):
            done[id(e)] = value.get(e, e)
            continue
        kids = _kids(e)
        if not ready:
            stack.append((e, True))
            stack.extend((k, False) for k in kids if id(k) not in done)
            continue
        new = [done[id(k)] for k in kids]
        done[id(e)] = e if all(a is b for a, b in zip(new, kids)) else _with_operands(e, new)
    return done[id(expr)]


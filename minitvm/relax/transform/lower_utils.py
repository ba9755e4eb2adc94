"""Helpers shared by the lowering passes (CallTIRRewrite ... VMShapeLower): rewrite every
binding sequence of a function (its body and the branches of nested ``If``s, inner ones first,
with an explicit stack), fresh variable names, struct-info filling, byte sizes of tensors."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable

from ...ir.gc_pause import paused
from ...ir.prim_expr import IntImm
from ..expr import (
    BindingBlock,
    Call,
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

__all__ = ["Namer", "Leaves", "AllocSinfo", "typed_call", "typed_var", "binding_names", "rewrite_function_seqs", "normalized", "dtype_bytes",
           "vars_used", "simplify", "function_rewrite_pass"]


class Namer:
    """Fresh variable names (``alloc``, ``alloc1``, ...) avoiding every name in a function."""

    def __init__(self, func: Function | None = None):
        self.used: set[str] = set()
        self.next: dict[str, int] = {}
        if func is not None:
            self.used.update(p.name_hint for p in func.params)
            self.used.update(binding_names(func.body))

    def fresh(self, hint: str) -> str:
        if hint not in self.used:
            self.used.add(hint)
            return hint
        used = self.used
        k = self.next.get(hint, 1)
        name = f"{hint}{k}"
        while name in used:
            k += 1
            name = f"{hint}{k}"
        self.next[hint] = k + 1
        used.add(name)
        return name


def binding_names(expr) -> list[str]:
    """The names of every variable bound under ``expr`` (nested functions, branches and
    sequences too; in no particular order). A sequence's names are taken in one comprehension
    and only nested values are pushed: each lowering pass's ``Namer`` took a generator step per
    binding (``iter_bindings``), a tenth of VMShapeLower on a 100,000-binding chain."""
    names: list[str] = []
    stack = [expr]
    while stack:
        e = stack.pop()
        if isinstance(e, Function):
            stack.append(e.body)
        elif isinstance(e, If):
            stack.append(e.false_branch)
            stack.append(e.true_branch)
        elif isinstance(e, SeqExpr):
            stack.append(e.body)
            for block in e.blocks:
                bindings = block.bindings
                names.extend([b.var.name_hint for b in bindings])
                stack.extend([b.value for b in bindings if isinstance(b.value, _NESTED)])
    return names


_NESTED = (Function, If, SeqExpr)


def typed_call(op, args: tuple, sinfo, span=None) -> Call:
    """``Call(op, args)`` whose struct info ``sinfo`` the caller already knows, built without
    the constructor's checks or the normalizer (no attrs, no ``sinfo_args``): ``args`` must be
    a tuple of Relax expressions. The lowering passes build 100,000s of allocation and kill
    calls whose struct info is the same for every one of a kind."""
    c = _new(Call)
    c.span, c._checked_type, c._virtual_device = span, sinfo, None
    c.op, c.args, c.attrs, c.sinfo_args = op, args, None, ()
    return c


_new = object.__new__


def typed_var(name: str, sinfo) -> Var:
    """``Var(name, sinfo)`` for a ``name`` (a str, from ``Namer``) and a StructInfo the caller
    made or inferred, without the constructor's checks: the variables of the 100,000s of
    bindings the lowering passes add."""
    v = _new(Var)
    v.span, v._checked_type, v._virtual_device, v.name_hint = None, sinfo, None, name
    return v


class AllocSinfo:
    """The struct info of allocation calls inferred once per (shape node, dtype) within one
    pass run, by the normalizer, and shared by the next allocations of that shape node: a
    chain's 100,000 allocations share one output shape node, and inferring (and making) a
    fresh ``TensorStructInfo`` for each was a fifth of CallTIRRewrite / StaticPlanBlockMemory.
    Struct info is immutable, so sharing it changes nothing the program says."""

    __slots__ = ("_memo", "mod")

    def __init__(self, mod=None):
        self._memo: dict = {}
        self.mod = mod

    def call(self, op, args: tuple, shape, dtype: str) -> Call:
        """``Call(op, args)`` normalized, where its struct info depends only on the node
        ``shape`` (an argument) and ``dtype``."""
        key = (id(shape), dtype)
        hit = self._memo.get(key)
        if hit is not None and hit[0] is shape and hit[1] is op:
            return typed_call(op, args, hit[2])
        c = normalized(Call(op, args), self.mod)
        self._memo[key] = (shape, op, c._checked_type)  # (the node kept: its id stays unique)
        return c


class Leaves:
    """Constant leaves (``R.prim_value(0)``, ``R.dtype("float32")``, ``R.str("global")``) made
    once per pass run and shared by the calls it builds: IR nodes may be shared, and making
    three fresh leaves (with their struct info) for each of 100,000 allocations was a quarter
    of CallTIRRewrite's time."""

    __slots__ = ("_prims", "_dtypes", "_strs")

    def __init__(self):
        self._prims: dict = {}
        self._dtypes: dict = {}
        self._strs: dict = {}

    def prim(self, value: int):
        """A shared ``PrimValue`` of the int64 ``value``."""
        e = self._prims.get(value)
        if e is None:
            from ..expr import PrimValue

            e = self._prims[value] = PrimValue(int(value))
        return e

    def dtype(self, value: str):
        """A shared ``DataTypeImm`` of ``value``."""
        e = self._dtypes.get(value)
        if e is None:
            from ..expr import DataTypeImm

            e = self._dtypes[value] = DataTypeImm(value)
        return e

    def string(self, value: str):
        """A shared ``StringImm`` of ``value``."""
        e = self._strs.get(value)
        if e is None:
            from ..expr import StringImm

            e = self._strs[value] = StringImm(value)
        return e


_LOCAL = threading.local()  # per thread: the last (module, builder) and an Analyzer


def normalized(expr: Expr, mod=None) -> Expr:
    """``expr`` with struct info filled (operands must already carry theirs)."""
    if expr._checked_type is not None:
        return expr
    last = getattr(_LOCAL, "builder", None)
    if last is None or last[0] is not mod:
        from ..block_builder import BlockBuilder  # (only for a new builder: per call it cost
        # a microsecond, a tenth of the lowering passes' time on a 100,000-binding function)

        last = _LOCAL.builder = (mod, BlockBuilder(mod))
    return last[1].normalize(expr)


def simplify(e):
    """Simplify an integer shape expression with the shared Analyzer (constant folding of
    products of constants needs no analyzer)."""
    if isinstance(e, IntImm):
        return e
    folded = _fold_const(e)
    if folded is not None:
        return folded
    from ...arith import Analyzer

    an = getattr(_LOCAL, "analyzer", None)
    if an is None:
        an = _LOCAL.analyzer = Analyzer()
    return an.simplify(e)


def _fold_const(e):
    """``e`` as an IntImm when it is a tree of constant +, *, - (iteratively), else None."""
    from ...tir import expr as T
    from ...tir.stmt_functor import post_order

    vals: dict = {}
    for n in post_order(e):
        if isinstance(n, IntImm):
            vals[id(n)] = n.value
        elif isinstance(n, T.Mul | T.Add | T.Sub) and id(n.a) in vals and id(n.b) in vals:
            a, b = vals[id(n.a)], vals[id(n.b)]
            vals[id(n)] = a * b if isinstance(n, T.Mul) else a + b if isinstance(n, T.Add) \
                else a - b
        else:
            return None
    return IntImm(e.dtype, vals[id(e)])


@functools.lru_cache(maxsize=256)
def dtype_bytes(dtype: str) -> int:
    """Bytes per element (bool takes a byte)."""
    if dtype == "bool":
        return 1
    bits = int("".join(c for c in dtype if c.isdigit()) or 32)
    return max(1, (bits + 7) // 8)


_NOT_LEAF_FIELD = (Call, Tuple, TupleGetItem, If, SeqExpr)  # (tuples made once, not per check)
_NOT_LEAF_ARG = (Call, TupleGetItem, If, SeqExpr)


def vars_used(expr) -> list:
    """The Relax variables ``expr`` reads (nested If branches included), each once, in order."""
    if isinstance(expr, Var):
        return [expr]
    if isinstance(expr, Call):  # the common case: a call of leaves, no walk needed
        out = [expr.op] if isinstance(expr.op, Var) else []
        for a in expr.args:
            if isinstance(a, Var):
                out.append(a)
            elif isinstance(a, Tuple):  # (a call_tir's operands: a tuple of leaves)
                for f in a.fields:
                    if isinstance(f, Var):
                        out.append(f)
                    elif isinstance(f, _NOT_LEAF_FIELD):
                        break
                else:
                    continue
                break
            elif isinstance(a, _NOT_LEAF_ARG):
                break
        else:
            return list(dict.fromkeys(out))
    out, seen = [], set()
    stack = [expr]
    while stack:
        e = stack.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, Var):
            out.append(e)
        elif isinstance(e, Call):
            stack.extend(reversed(e.args))
            stack.append(e.op)
        elif isinstance(e, Tuple):
            stack.extend(reversed(e.fields))
        elif isinstance(e, TupleGetItem):
            stack.append(e.tuple_value)
        elif isinstance(e, If):
            stack.extend((e.false_branch, e.true_branch, e.cond))
        elif isinstance(e, SeqExpr):
            stack.append(e.body)
            for block in reversed(e.blocks):
                for b in reversed(block.bindings):
                    stack.append(b.value)
    return out


SeqRewriter = Callable[[list, Expr, bool], tuple]


def rewrite_function_seqs(func: Function, rewrite: SeqRewriter) -> Function:
    """Apply ``rewrite(bindings, body, is_top) -> (bindings, body)`` to every binding sequence
    of ``func``: If branches first (their rewritten SeqExprs replace the old ones in the If),
    then the enclosing sequence. The result has one non-dataflow block per sequence."""
    if not isinstance(func.body, SeqExpr):
        return func
    # collect SeqExprs, outer ones first
    order, stack = [], [func.body]
    while stack:
        seq = stack.pop()
        order.append(seq)
        for block in seq.blocks:
            for b in block.bindings:
                if isinstance(b.value, If):
                    for br in (b.value.true_branch, b.value.false_branch):
                        if isinstance(br, SeqExpr):
                            stack.append(br)
    new_seq: dict[int, SeqExpr] = {}
    for seq in reversed(order):
        if not new_seq:  # (no branch below was rewritten: the bindings as they are)
            bindings = [b for block in seq.blocks for b in block.bindings]
            out_b, body = rewrite(bindings, seq.body, seq is func.body)
            new_seq[id(seq)] = _new_seq(out_b, body, seq)
            continue
        bindings = []
        for block in seq.blocks:
            for b in block.bindings:
                v = b.value
                if isinstance(v, If) and (id(v.true_branch) in new_seq or
                                          id(v.false_branch) in new_seq):
                    t = new_seq.get(id(v.true_branch), v.true_branch)
                    f = new_seq.get(id(v.false_branch), v.false_branch)
                    if t is not v.true_branch or f is not v.false_branch:
                        nv = If(v.cond, t, f, v.span)
                        nv._checked_type = v._checked_type
                        b = MatchCast(b.var, nv, b.struct_info, b.span) \
                            if isinstance(b, MatchCast) else VarBinding(b.var, nv, b.span)
                bindings.append(b)
        out_b, body = rewrite(bindings, seq.body, seq is func.body)
        new_seq[id(seq)] = _new_seq(out_b, body, seq)
    body = new_seq[id(func.body)]
    return Function(func.params, body, func.ret_struct_info, func.is_pure, func.attrs, func.span)


def _new_seq(bindings: list, body, old: SeqExpr) -> SeqExpr:
    """The rewritten ``old``: one block of ``bindings`` (none when empty) and ``body``."""
    ns = SeqExpr([BindingBlock(bindings)] if bindings else [], body, old.span)
    ns._checked_type = body._checked_type if body._checked_type is not None \
        else old._checked_type
    return ns


def is_const_int(e) -> bool:
    return isinstance(e, IntImm)


FunctionRewrite = Callable[[Function, object], tuple]


def function_rewrite_pass(rewrite: FunctionRewrite, name: str, stat: str):
    """The module pass (opt 0) ``name`` applying ``rewrite(func, mod) -> (func, count)`` to
    every Relax function of the module (garbage collector paused); the functions with a
    nonzero count are replaced and the total is recorded as statistic ``stat``. A module
    without Relax functions is returned unchanged."""
    from ...transform.decorators import module_pass
    from ...transform.stats import record_stat
    from .utils import has_relax_function

    def run(mod, _ctx):
        if not has_relax_function(mod):
            return mod
        with paused():
            out = mod.shallow_copy()
            total = 0
            for gv, func in list(mod.functions.items()):
                if isinstance(func, Function):
                    new, n = rewrite(func, mod)
                    if n:
                        out.update_func(gv, new)
                        total += n
        if total:
            record_stat(stat, total)
        return out

    return module_pass(run, opt_level=0, name=name)

"""LazyGradientInit: delay, and often avoid, allocating the zero and one tensors of gradients.

Every tensor value becomes a ``GradCell[T]`` (``std/gradient.rly``): ``zeros``/``zeros_like``
become ``Zero(thunk)``, ``ones``/``ones_like`` become ``One(thunk)``, ``add`` and ``multiply`` of
two values of one type go through ``@AddGradCell``/``@MultiplyGradCell`` (adding a zero or
multiplying by one returns the other cell, no tensor is made), and every other operator reads
its arguments with ``@FromGradCell`` and wraps its result in ``Raw``. Each function keeps its
tensor interface: parameters are wrapped on entry and the result read on exit, calls of global
functions unwrap and rewrap around the call (function values by eta-expansion), and ADT values
keep plain contents: constructor arguments are read and pattern variables wrapped. Run it after ``gradient``, whose reference
cells start at ``zeros_like``; PartialEvaluate then removes the cells that are statically known.
"""

from __future__ import annotations

from ...ir.expr import GlobalVar
from ...ir.op import Op
from ...ir.type import FuncType, RelayRefType, TensorType, TupleType, TypeCall
from ...transform.decorators import module_pass
from ...transform.stats import record_stat
from ..adt import Clause, Constructor, Match, PatternConstructor, PatternTuple, PatternVar
from ..expr import Call, Function, If, Let, Tuple, TupleGetItem, Var
from ..scoped_functor import ScopedMutator
from ._ad_common import lets
from ._pass_helpers import register
from .infer_type import InferType, InferTypeLocal

__all__ = ["LazyGradientInit", "lazy_gradient_init"]

_STD_FUNCS = ("FromGradCell", "AddGradCell", "MultiplyGradCell")
_LAZY = {"zeros": "Zero", "zeros_like": "Zero", "ones": "One", "ones_like": "One"}
_OVERLOADED = {"add": "AddGradCell", "multiply": "MultiplyGradCell"}


def _shared(e, build):
    """``build(v)`` with ``e`` evaluated once into ``v`` (a let unless ``e`` is a variable)."""
    if isinstance(e, Var):
        return build(e)
    v = Var("t")
    return Let(v, e, build(v))


class _Std:
    """The GradCell ADT and its functions in a module."""

    def __init__(self, mod):
        self.cell, self.raw, self.one, self.zero = mod.get_type("GradCell")
        self.from_cell = mod.get_global_var("FromGradCell")
        self.funcs = {n: mod.get_global_var(n) for n in _STD_FUNCS}
        self.ctor = {"Raw": self.raw, "One": self.one, "Zero": self.zero}

    def cell_type(self, t):
        if isinstance(t, TensorType):
            return TypeCall(self.cell, [t])
        if isinstance(t, TupleType):
            return TupleType([self.cell_type(f) for f in t.fields])
        if isinstance(t, FuncType):
            return FuncType([self.cell_type(a) for a in t.arg_types], self.cell_type(t.ret_type),
                            t.type_params, t.type_constraints)
        if isinstance(t, RelayRefType):
            return RelayRefType(self.cell_type(t.value))
        return t  # ADT values keep plain contents (converted at constructors and patterns)

    def wrap(self, e, t):
        """A plain value of type ``t`` as cells (functions are wrapped by eta-expansion)."""
        if isinstance(t, TensorType):
            return Call(self.raw, [e])
        if isinstance(t, TupleType):
            return _shared(e, lambda v: Tuple([self.wrap(TupleGetItem(v, i), f)
                                               for i, f in enumerate(t.fields)]))
        if isinstance(t, FuncType):
            params = [Var(f"p{i}", self.cell_type(a)) for i, a in enumerate(t.arg_types)]
            call = Call(e, [self.unwrap(p, a) for p, a in zip(params, t.arg_types)])
            return Function(params, self.wrap(call, t.ret_type))
        return e

    def unwrap(self, e, t):
        """The plain value of cells of original type ``t``."""
        if isinstance(t, TensorType):
            return Call(self.from_cell, [e])
        if isinstance(t, TupleType):
            return _shared(e, lambda v: Tuple([self.unwrap(TupleGetItem(v, i), f)
                                               for i, f in enumerate(t.fields)]))
        if isinstance(t, FuncType):
            params = [Var(f"p{i}", a) for i, a in enumerate(t.arg_types)]
            call = Call(e, [self.wrap(p, a) for p, a in zip(params, t.arg_types)])
            return Function(params, self.unwrap(call, t.ret_type), t.ret_type)
        return e


class _Lazy(ScopedMutator):
    """The rewrite; function and match hooks are generators (``scoped_functor``), so scopes
    nest to any depth without Python recursion."""

    def __init__(self, std: _Std, mod):
        super().__init__()
        self.std = std
        self.mod = mod
        self.lazy = 0
        self.overloaded = 0

    def visit_var(self, v):
        return Var(v.name_hint, self.std.cell_type(v.type_annotation))

    def visit_constant(self, c):
        return Call(self.std.raw, [c])

    def gen_function(self, fn):
        params = []
        for p in fn.params:
            params.append((yield p))
        ret = self.std.cell_type(fn.ret_type) if fn.ret_type is not None else None
        body = yield fn.body
        return Function(params, body, ret, fn.type_params, fn.attrs, fn.span)

    def visit_if(self, ite):
        cond = self.std.unwrap(self.visit(ite.cond), ite.cond.checked_type)
        return If(cond, self.visit(ite.true_branch), self.visit(ite.false_branch))

    def gen_match(self, m):
        """Constructor fields hold plain values: rebind each pattern variable as cells."""
        clauses = []
        for c in m.clauses:
            binds: list = []
            lhs = self._plain_pattern(c.lhs, binds)
            clauses.append(Clause(lhs, lets(binds, (yield c.rhs))))
        data = self.std.unwrap((yield m.data), m.data.checked_type)
        return Match(data, clauses, m.complete)

    def _plain_pattern(self, p, binds):
        if isinstance(p, PatternVar):
            plain = Var(p.var.name_hint)
            binds.append((self.visit(p.var), self.std.wrap(plain, p.var.checked_type)))
            return PatternVar(plain)
        if isinstance(p, PatternConstructor):
            return PatternConstructor(p.constructor,
                                      [self._plain_pattern(q, binds) for q in p.patterns])
        if isinstance(p, PatternTuple):
            return PatternTuple([self._plain_pattern(q, binds) for q in p.patterns])
        return p

    def visit_call(self, call):
        op = call.op
        if isinstance(op, GlobalVar | Constructor):
            args = [self.std.unwrap(self.visit(a), a.checked_type) for a in call.args]
            out = Call(op, args)
            return self.std.wrap(out, call.checked_type) if isinstance(op, GlobalVar) else out
        if not isinstance(op, Op):
            return super().visit_call(call)
        plain = [self.std.unwrap(self.visit(a), a.checked_type) for a in call.args]
        kind = _LAZY.get(op.name)
        if kind is not None and isinstance(call.checked_type, TensorType):
            self.lazy += 1
            thunk = Function([], Call(op, plain, call.attrs, call.type_args), call.checked_type)
            return Call(self.std.ctor[kind], [thunk])
        name = _OVERLOADED.get(op.name)
        if name is not None and len(call.args) == 2 and _same_type(*call.args):
            t = call.args[0].checked_type
            lhs, rhs = Var("lhs", t), Var("rhs", t)
            fallback = Function([lhs, rhs], Call(op, [lhs, rhs], call.attrs), t)
            self.overloaded += 1
            return Call(self.std.funcs[name], [fallback, *[self.visit(a) for a in call.args]])
        return self.std.wrap(Call(op, plain, call.attrs, call.type_args), call.checked_type)


def _same_type(a, b) -> bool:
    from ...ir.structural import structural_equal

    ta, tb = a.checked_type, b.checked_type
    return isinstance(ta, TensorType) and structural_equal(ta, tb)


def lazy_gradient_init(func: Function, mod) -> tuple[Function, int, int]:
    """LazyGradientInit on one function of ``mod`` (which holds the GradCell definitions)."""
    InferTypeLocal(func, mod)
    std = _Std(mod)
    lazy = _Lazy(std, mod)
    binds = []
    for p in func.params:
        binds.append((lazy.visit(p), std.wrap(p, p.checked_type)))
    body = std.unwrap(lazy.visit(func.body), func.body.checked_type)
    out = Function(list(func.params), lets(binds, body), func.ret_type, func.type_params,
                   func.attrs, func.span)
    return out, lazy.lazy, lazy.overloaded


@register("LazyGradientInit")
def LazyGradientInit():  # noqa: N802 - TVM's name
    """Reduces memory usage of gradient tensors

    Returns
    -------
    ret: tvm.transform.Pass
        A pass which delays and/or reduces memory allocation,
        by lazily allocating 0 or one filled tensors.
    """

    def run(mod, ctx):
        new = mod.shallow_copy()
        new.import_from_std("gradient.rly")
        lazy = overloaded = 0
        for gv, f in list(new.functions.items()):
            if not isinstance(f, Function) or gv.name_hint in _STD_FUNCS or (
                    f.attrs and f.attrs.get("Primitive")) or f.type_params:
                continue
            out, n_lazy, n_over = lazy_gradient_init(f, new)
            new.update_func(gv, out)
            lazy += n_lazy
            overloaded += n_over
        record_stat("lazy zero/one tensors", lazy)
        record_stat("overloaded add/multiply", overloaded)
        return InferType()(new)  # TVM's function pass re-infers types afterwards

    # opt level 2: TVM v0.19 registers it as a function pass at level 2
    return module_pass(run, opt_level=2, name="LazyGradientInit")


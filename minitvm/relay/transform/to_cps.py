"""ToCPS / to_cps / un_cps: continuation-passing style and back.

``to_cps(f)`` turns ``fn (x: T) -> R`` into ``fn [answer](x: T', k: fn (R') -> answer) -> answer``
where every call of a function (closure or global) passes the rest of the computation as a
continuation; primitive operator calls stay direct. ``If`` and ``match`` bind the rest of their
block once as a join-point continuation shared by the branches. Function types inside become CPS
function types with the same answer type; a called global ``@f`` is converted once into
``@f_cps`` (added to the module, as TVM does). ``un_cps`` applies a CPS function to the identity
continuation. Works on the A-normal form; let chains are folded with loops, and the steps that
enter a nested scope (a function body, the branches of an ``if`` or ``match``) are generators run
on one explicit stack (``printer.trampoline``), so nesting depth costs no Python recursion.
"""

from __future__ import annotations

from ...ir.expr import GlobalVar
from ...ir.op import Op
from ...ir.type import FuncType, RelayRefType, TupleType, TypeCall, TypeVar
from ..adt import Clause, Constructor, Match, PatternConstructor, PatternTuple, PatternVar
from ..expr import (
    Call,
    Constant,
    Function,
    If,
    Let,
    RefCreate,
    RefRead,
    RefWrite,
    Tuple,
    TupleGetItem,
    Var,
)
from ..printer import trampoline
from ._pass_helpers import register
from .function_pass import function_pass
from .infer_type import InferTypeLocal
from .to_a_normal_form import to_a_normal_form

__all__ = ["ToCPS", "to_cps", "un_cps", "cps_type"]


def cps_type(t, answer: TypeVar):
    """The type of a value after CPS: function types take a continuation returning ``answer``."""
    if isinstance(t, FuncType):
        args = [cps_type(a, answer) for a in t.arg_types]
        cont = FuncType([cps_type(t.ret_type, answer)], answer)
        return FuncType(args + [cont], answer, t.type_params, t.type_constraints)
    if isinstance(t, TupleType):
        return TupleType([cps_type(f, answer) for f in t.fields])
    if isinstance(t, RelayRefType):
        return RelayRefType(cps_type(t.value, answer))
    if isinstance(t, TypeCall):
        return TypeCall(t.func, [cps_type(a, answer) for a in t.args])
    return t


def _type_of(e):
    return e._checked_type


class _CPS:
    def __init__(self, mod, answer: TypeVar, globals_: dict, pending: list):
        self.mod = mod
        self.answer = answer
        self.env: dict = {}
        self.globals = globals_
        self.pending = pending
        self.count = 0

    def _ty(self, t):
        return None if t is None else cps_type(t, self.answer)

    def fresh(self, hint: str, t=None) -> Var:
        self.count += 1
        return Var(f"{hint}{self.count}", self._ty(t))

    # -------------------------------------------------------------- blocks
    def block(self, expr, k):
        """CPS of an ANF block whose result goes to continuation ``k`` (a Var)."""
        return trampoline.run(self._block(expr, k))

    def _block(self, expr, k):
        steps: list = []  # ("let", var, value) | ("call", var, f, args) | ("branch", var, build)
        e = expr
        while isinstance(e, Let):
            if isinstance(e.value, Var | GlobalVar | Op | Constructor):
                self.env[e.var] = self.atom(e.value)  # a renaming: no binding needed
            else:
                steps.append((yield self._step(e.var, e.value)))
            e = e.body
        if self._needs_cont(e):
            tail_var = self.fresh("x", _type_of(e))
            steps.append((yield self._step(None, e, tail_var)))
            body = Call(k, [tail_var])
        else:
            body = Call(k, [self.atom(e)])
        for step in reversed(steps):
            kind = step[0]
            if kind == "let":
                body = Let(step[1], step[2], body)
            elif kind == "call":
                _, v, f, args = step
                body = Call(f, args + [Function([v], body)])
            else:
                _, v, build = step
                join = self.fresh("k", None)
                join = Var(join.name_hint, FuncType([v.type_annotation], self.answer)
                           if v.type_annotation is not None else None)
                body = Let(join, Function([v], body), (yield build(join)))
        return body

    def _needs_cont(self, e) -> bool:
        if isinstance(e, Call):
            return not isinstance(e.op, Op | Constructor)
        return isinstance(e, If | Match)

    def _step(self, var, value, new_var=None):
        """One binding of the chain: a direct let, a call with continuation, or a branch (whose
        builder makes the generator of the branches' blocks)."""
        if new_var is None:
            new_var = self.fresh(var.name_hint if var is not None else "x", _type_of(value))
        if var is not None:
            self.env[var] = new_var
        if isinstance(value, Call) and not isinstance(value.op, Op | Constructor):
            args = [self.atom(a) for a in value.args]
            return ("call", new_var, self.callee(value.op), args)
        if isinstance(value, If):
            cond = self.atom(value.cond)
            t_br, f_br = value.true_branch, value.false_branch
            return ("branch", new_var, lambda j: self._if(cond, t_br, f_br, j))
        if isinstance(value, Match):
            data = self.atom(value.data)
            return ("branch", new_var, lambda j: self._match(data, value, j))
        if isinstance(value, Function):
            return ("let", new_var, (yield self._function(value)))
        return ("let", new_var, self.simple(value))

    def _if(self, cond, t_br, f_br, j):
        then = yield self._block(t_br, j)
        return If(cond, then, (yield self._block(f_br, j)))

    def _match(self, data, m, j):
        clauses = []
        for c in m.clauses:
            lhs = self.pattern(c.lhs)
            clauses.append(Clause(lhs, (yield self._block(c.rhs, j))))
        return Match(data, clauses, m.complete)

    # -------------------------------------------------------------- values
    def callee(self, f):
        if isinstance(f, GlobalVar):
            return self.global_cps(f)
        return self.atom(f)

    def atom(self, e):
        if isinstance(e, Var):
            if e not in self.env:
                raise ValueError(f"to_cps: free variable %{e.name_hint}")
            return self.env[e]
        if isinstance(e, GlobalVar):
            return self.global_cps(e)
        if isinstance(e, Constant | Op | Constructor):
            return e
        return self.simple(e)

    def simple(self, e):
        if isinstance(e, Var | GlobalVar | Constant | Op | Constructor):
            return self.atom(e)
        if isinstance(e, Call):  # an operator or constructor call: direct
            return Call(e.op, [self.atom(a) for a in e.args], e.attrs, e.type_args)
        if isinstance(e, Tuple):
            return Tuple([self.atom(f) for f in e.fields])
        if isinstance(e, TupleGetItem):
            return TupleGetItem(self.atom(e.tuple_value), e.index)
        if isinstance(e, RefCreate):
            return RefCreate(self.atom(e.value))
        if isinstance(e, RefRead):
            return RefRead(self.atom(e.ref))
        if isinstance(e, RefWrite):
            return RefWrite(self.atom(e.ref), self.atom(e.value))
        if isinstance(e, Function):
            return self.function(e)
        raise TypeError(f"to_cps: unexpected {type(e).__name__} in A-normal form")

    def function(self, fn, type_params=()):
        return trampoline.run(self._function(fn, type_params))

    def _function(self, fn, type_params=()):
        params = []
        for p in fn.params:
            np_ = Var(p.name_hint, self._ty(_type_of(p) or p.type_annotation))
            self.env[p] = np_
            params.append(np_)
        ret = _type_of(fn.body)
        k = Var("k", FuncType([self._ty(ret)], self.answer) if ret is not None else None)
        body = yield self._block(fn.body, k)
        return Function(params + [k], body, self.answer, list(fn.type_params) + list(type_params))

    def pattern(self, p):
        if isinstance(p, PatternVar):
            nv = Var(p.var.name_hint, self._ty(_type_of(p.var) or p.var.type_annotation))
            self.env[p.var] = nv
            return PatternVar(nv)
        if isinstance(p, PatternConstructor):
            return PatternConstructor(p.constructor, [self.pattern(q) for q in p.patterns])
        if isinstance(p, PatternTuple):
            return PatternTuple([self.pattern(q) for q in p.patterns])
        return p

    def global_cps(self, gv: GlobalVar) -> GlobalVar:
        new = self.globals.get(gv)
        if new is None:
            if self.mod is None or gv not in self.mod:
                raise ValueError(f"to_cps: @{gv.name_hint} is used but no module defining it "
                                 "was given")
            name = gv.name_hint + "_cps"
            # a second differentiation/conversion replaces the earlier version's body
            new = self.mod._gvars.get(name) or GlobalVar(name)
            self.globals[gv] = new
            self.pending.append((gv, new))
        return new


def _convert(func: Function, mod, globals_: dict, pending: list) -> Function:
    anf = to_a_normal_form(func)
    InferTypeLocal(anf, mod)
    answer = TypeVar("answer")
    return _CPS(mod, answer, globals_, pending).function(anf, [answer])


def to_cps(func, mod=None) -> Function:
    """Turn expression into CPS expression.

    Every intermediate compute will be passed to a continuation.

    Parameters
    ----------
    func : tvm.relay.Function
        The input function.
    mod : Optional[tvm.IRModule]
        The global module; converted global functions ``@f_cps`` are added to it.

    Returns
    -------
    result : tvm.relay.Function
        The output function.
    """
    if isinstance(func, GlobalVar):
        if mod is None:
            raise ValueError("to_cps of a GlobalVar needs the module")
        func = mod[func]
    if not isinstance(func, Function):
        raise TypeError(f"to_cps expects a relay.Function, got {type(func).__name__}")
    globals_: dict = {}
    pending: list = []
    out = _convert(func, mod, globals_, pending)
    while pending:
        gv, new_gv = pending.pop()
        mod[new_gv] = _convert(mod[gv], mod, globals_, pending)
    return out


def un_cps(func) -> Function:
    """Turn a CPS function into a Function without the continuation argument.

    Note that this will not give the exact same interface as before cps: if the input/output is
    higher order, they will still be in cps form.
    """
    if not isinstance(func, Function) or not func.params:
        raise TypeError("un_cps expects a CPS relay.Function (with a continuation parameter)")
    t = _type_of(func)
    if t is None and all(p.type_annotation is not None for p in func.params):
        t = FuncType([p.type_annotation for p in func.params], func.ret_type, func.type_params)
    if t is None:
        InferTypeLocal(func)
        t = func.checked_type
    cont_t = t.arg_types[-1]
    if not isinstance(cont_t, FuncType) or len(cont_t.arg_types) != 1:
        raise TypeError(f"un_cps: the last parameter of the function must be a continuation "
                        f"fn (T) -> answer, got {cont_t}")
    ret_t = cont_t.arg_types[0]
    params = [Var(p.name_hint, a) for p, a in zip(func.params[:-1], t.arg_types[:-1])]
    x = Var("x", ret_t)
    type_params = [tp for tp in t.type_params if tp not in _free_type_vars_of(cont_t.ret_type)]
    return Function(params, Call(func, params + [Function([x], x)]), ret_t, type_params)


def _free_type_vars_of(t) -> list:
    return [t] if isinstance(t, TypeVar) else []


@register("ToCPS")
def _to_cps_pass():
    """Function pass (opt 1, as TVM): every Relay function in CPS; a called global ``@f``
    gets its CPS version ``@f_cps`` added to the module."""

    def transform(func, mod, ctx):
        return to_cps(func, mod)

    return function_pass(transform, opt_level=1, name="ToCPS")


def ToCPS(expr=None, mod=None):  # noqa: N802 - TVM's name
    """Turn expression into continuation passing style (CPS).

    Called with a function (``ToCPS(expr, mod)``), returns its CPS form as ``to_cps`` does; called
    with no argument, returns the function pass converting every Relay function of a module.
    """
    if expr is not None:
        return to_cps(expr, mod)
    return _to_cps_pass()

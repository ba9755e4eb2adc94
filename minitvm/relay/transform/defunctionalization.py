"""Defunctionalization: turn a higher-order program into a first-order one.

Every function value of a (monomorphic) function type T becomes a constructor of an ADT made
for T -- its free variables are the constructor's fields -- and every call of such a value
becomes a call of ``@apply_k``, which matches on the constructor and runs the function's body.
Global functions are cloned for the argument types of each call site, their type parameters
substituted, so every function type met is concrete. ``Defunctionalization(func, mod)`` returns
the first-order ``func`` and adds the ADTs, apply functions and specialized globals to ``mod``
(in place, as TVM does). Works on the A-normal form: let chains are walked with loops and
only scopes nest.
"""

from __future__ import annotations

from ...ir.expr import GlobalVar
from ...ir.op import Op
from ...ir.structural import structural_hash
from ...ir.type import (
    FuncType,
    GlobalTypeVar,
    RelayRefType,
    TupleType,
    TypeCall,
    TypeVar,
)
from ..adt import (
    Clause,
    Constructor,
    Match,
    PatternConstructor,
    PatternTuple,
    PatternVar,
    TypeData,
)
from ..analysis.free_vars import free_vars
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
from .infer_type import InferTypeLocal
from .to_a_normal_form import to_a_normal_form

__all__ = ["Defunctionalization"]


def _subst(t, s: dict):
    if not s or t is None:
        return t
    if isinstance(t, TypeVar) and not isinstance(t, GlobalTypeVar):
        return s.get(t, t)
    if isinstance(t, FuncType):
        return FuncType([_subst(a, s) for a in t.arg_types], _subst(t.ret_type, s))
    if isinstance(t, TupleType):
        return TupleType([_subst(f, s) for f in t.fields])
    if isinstance(t, RelayRefType):
        return RelayRefType(_subst(t.value, s))
    if isinstance(t, TypeCall):
        return TypeCall(t.func, [_subst(a, s) for a in t.args])
    return t


def _unify(pattern, concrete, s: dict) -> None:
    """Bind the type variables of ``pattern`` so that it equals ``concrete``."""
    stack = [(pattern, concrete)]
    while stack:
        p, c = stack.pop()
        if isinstance(p, TypeVar) and not isinstance(p, GlobalTypeVar):
            s.setdefault(p, c)
        elif isinstance(p, FuncType) and isinstance(c, FuncType):
            stack.extend(zip(p.arg_types, c.arg_types))
            stack.append((p.ret_type, c.ret_type))
        elif isinstance(p, TupleType) and isinstance(c, TupleType):
            stack.extend(zip(p.fields, c.fields))
        elif isinstance(p, RelayRefType) and isinstance(c, RelayRefType):
            stack.append((p.value, c.value))
        elif isinstance(p, TypeCall) and isinstance(c, TypeCall):
            stack.extend(zip(p.args, c.args))


def _is_first_order(t) -> bool:
    stack = [t]
    while stack:
        x = stack.pop()
        if isinstance(x, FuncType):
            return False
        if isinstance(x, TupleType):
            stack.extend(x.fields)
        elif isinstance(x, RelayRefType):
            stack.append(x.value)
        elif isinstance(x, TypeCall):
            stack.extend(x.args)
    return True


class _FuncADT:
    """The ADT standing for one function type, and its apply function."""

    def __init__(self, index: int, ftype: FuncType, dtype):
        self.gtv = GlobalTypeVar(f"Func{index}")
        self.ftype = ftype
        self.apply = GlobalVar(f"apply_{index}")
        self.closure = Var("f", TypeCall(self.gtv, []))
        self.params = [Var(f"a{i}", dtype(a)) for i, a in enumerate(ftype.arg_types)]
        self.ret = dtype(ftype.ret_type)
        self.ctors: list = []
        self.clauses: list = []


class _Defunc:
    def __init__(self, mod):
        self.mod = mod
        self.adts: dict = {}
        self.specialized: dict = {}
        self.pending: list = []
        self.globals_as_values: dict = {}

    # -------------------------------------------------------------- types
    def dtype(self, t):
        if isinstance(t, FuncType):
            return TypeCall(self.adt(t).gtv, [])
        if isinstance(t, TupleType):
            return TupleType([self.dtype(f) for f in t.fields])
        if isinstance(t, RelayRefType):
            return RelayRefType(self.dtype(t.value))
        if isinstance(t, TypeCall):
            return TypeCall(t.func, [self.dtype(a) for a in t.args])
        return t

    def adt(self, ftype: FuncType) -> _FuncADT:
        key = structural_hash(FuncType(ftype.arg_types, ftype.ret_type))
        adt = self.adts.get(key)
        if adt is None:
            adt = _FuncADT(len(self.adts), ftype, self.dtype)
            self.adts[key] = adt
        return adt

    # -------------------------------------------------------------- expressions
    def block(self, expr, env: dict, s: dict):
        binds = []
        e = expr
        while isinstance(e, Let):
            if isinstance(e.value, Var):  # a renaming (A-normal form makes them): substitute
                env[e.var] = self.expr(e.value, env, s)
            else:
                v = Var(e.var.name_hint)
                env[e.var] = v
                binds.append((v, self.expr(e.value, env, s)))
            e = e.body
        out = self.expr(e, env, s)
        for v, value in reversed(binds):
            out = Let(v, value, out)
        return out

    def expr(self, e, env: dict, s: dict):
        if isinstance(e, Var):
            if e not in env:
                raise ValueError(f"Defunctionalization: free variable %{e.name_hint}")
            return env[e]
        if isinstance(e, Constant | Op | Constructor):
            return e
        if isinstance(e, GlobalVar):
            return self.global_value(e, s)
        if isinstance(e, Function):
            return self.closure(e, env, s)
        if isinstance(e, Call):
            return self.call(e, env, s)
        if isinstance(e, Let):
            return self.block(e, env, s)
        if isinstance(e, Tuple):
            return Tuple([self.expr(f, env, s) for f in e.fields])
        if isinstance(e, TupleGetItem):
            return TupleGetItem(self.expr(e.tuple_value, env, s), e.index)
        if isinstance(e, If):
            return If(self.expr(e.cond, env, s), self.block(e.true_branch, env, s),
                      self.block(e.false_branch, env, s))
        if isinstance(e, RefCreate):
            return RefCreate(self.expr(e.value, env, s))
        if isinstance(e, RefRead):
            return RefRead(self.expr(e.ref, env, s))
        if isinstance(e, RefWrite):
            return RefWrite(self.expr(e.ref, env, s), self.expr(e.value, env, s))
        if isinstance(e, Match):
            clauses = [Clause(self.pattern(c.lhs, env), self.block(c.rhs, env, s))
                       for c in e.clauses]
            return Match(self.expr(e.data, env, s), clauses, e.complete)
        raise TypeError(f"Defunctionalization: unsupported expression {type(e).__name__}")

    def pattern(self, p, env):
        if isinstance(p, PatternVar):
            v = Var(p.var.name_hint)
            env[p.var] = v
            return PatternVar(v)
        if isinstance(p, PatternConstructor):
            return PatternConstructor(p.constructor, [self.pattern(q, env) for q in p.patterns])
        if isinstance(p, PatternTuple):
            return PatternTuple([self.pattern(q, env) for q in p.patterns])
        return p

    def _type_of(self, e, s):
        if e._checked_type is None:
            InferTypeLocal(e, self.mod)
        return _subst(e.checked_type, s)

    def closure(self, fn: Function, env: dict, s: dict):
        """A lambda: a constructor holding its free variables; its body joins @apply."""
        ftype = self._type_of(fn, s)
        adt = self.adt(ftype)
        fvs = free_vars(fn)
        fields = [self.dtype(self._type_of(v, s)) for v in fvs]
        ctor = Constructor(f"{adt.gtv.name_hint}_{len(adt.ctors)}", fields, adt.gtv)
        adt.ctors.append(ctor)
        inner = dict(env)
        pattern_vars = []
        for v in fvs:
            pv = Var(v.name_hint)
            inner[v] = pv
            pattern_vars.append(PatternVar(pv))
        for p, a in zip(fn.params, adt.params, strict=True):
            inner[p] = a
        body = self.block(fn.body, inner, s)
        adt.clauses.append(Clause(PatternConstructor(ctor, pattern_vars), body))
        return Call(ctor, [env[v] if v in env else self.expr(v, env, s) for v in fvs])

    def global_value(self, gv: GlobalVar, s: dict):
        """A global function used as a value: a field-less constructor calling it."""
        func = self.mod[gv]
        params = [Var(p.name_hint, p.type_annotation) for p in func.params]
        wrapper = Function(params, Call(gv, params))
        return self.closure(wrapper, {}, s)

    def call(self, e: Call, env: dict, s: dict):
        args = [self.expr(a, env, s) for a in e.args]
        f = e.op
        if isinstance(f, Op | Constructor):
            return Call(f, args, e.attrs, e.type_args)
        if isinstance(f, GlobalVar):
            types = [self._type_of(a, s) for a in e.args]
            return Call(self.specialize(f, types), args)
        if isinstance(f, Function):  # an immediately applied lambda: bind its parameters
            inner = dict(env)
            binds = []
            for p, a in zip(f.params, args, strict=True):
                v = Var(p.name_hint)
                inner[p] = v
                binds.append((v, a))
            out = self.block(f.body, inner, s)
            for v, a in reversed(binds):
                out = Let(v, a, out)
            return out
        adt = self.adt(self._type_of(f, s))
        return Call(adt.apply, [self.expr(f, env, s), *args])

    # -------------------------------------------------------------- globals
    def specialize(self, gv: GlobalVar, arg_types: list) -> GlobalVar:
        func = self.mod[gv]
        if not isinstance(func, Function):
            return gv
        s: dict = {}
        for p, t in zip(func.params, arg_types, strict=True):
            _unify(p.checked_type if p._checked_type is not None else p.type_annotation, t, s)
        concrete = [_subst(p.checked_type, s) for p in func.params]
        if not func.type_params and all(_is_first_order(t) for t in concrete):
            key = (gv, None)
        else:
            key = (gv, structural_hash(TupleType(concrete)))
        new = self.specialized.get(key)
        if new is None:
            if key[1] is None:
                new = gv
            else:
                new = GlobalVar(f"{gv.name_hint}_{len(self.specialized)}")
            self.specialized[key] = new
            self.pending.append((gv, new, s))
        return new

    def run_pending(self, out_mod):
        while self.pending:
            gv, new, s = self.pending.pop()
            func = to_a_normal_form(self.mod[gv])
            InferTypeLocal(func, self.mod)
            env: dict = {}
            params = []
            for p in func.params:
                v = Var(p.name_hint, self.dtype(_subst(p.checked_type, s)))
                env[p] = v
                params.append(v)
            body = self.block(func.body, env, s)
            ret = self.dtype(_subst(func.ret_type, s)) if func.ret_type is not None else None
            out_mod[new] = Function(params, body, ret)


def Defunctionalization(func: Function, mod):  # noqa: N802 - TVM's name
    """Performs defunctionalization on func, transforming func from a higher-order program to a
    first-order program.

    At each call site, the function is cloned and type parameters are substituted in. Function
    arguments are encoded as datatypes and additional apply functions are used for application.

    Parameters
    ----------
    func : tvm.relay.Function
        The input function, which should not be polymorphic or be higher-order. This is because
        all types must be known and we can't encode function arguments to the program itself.
    mod : tvm.IRModule
        The IRModule containing function and type definitions, which is also mutated during
        this pass.

    Returns
    -------
    expr : tvm.relay.Function
        The output function.
    """
    if not isinstance(func, Function):
        raise TypeError(f"Defunctionalization expects a relay.Function, got "
                        f"{type(func).__name__}")
    if func.type_params:
        raise ValueError("Defunctionalization: the function must not be polymorphic")
    func = to_a_normal_form(func)
    InferTypeLocal(func, mod)
    ftype = func.checked_type
    if not all(_is_first_order(t) for t in [*ftype.arg_types, ftype.ret_type]):
        raise ValueError("Defunctionalization: the function's parameters and result must be "
                         f"first-order, got {ftype}")
    d = _Defunc(mod)
    env = {p: p for p in func.params}
    body = d.block(func.body, env, {})
    d.run_pending(mod)
    for adt in d.adts.values():
        mod[adt.gtv] = TypeData(adt.gtv, [], adt.ctors)
    for adt in d.adts.values():
        body_ = Match(adt.closure, adt.clauses, complete=True) if adt.clauses else None
        if body_ is None:
            continue
        mod[adt.apply] = Function([adt.closure, *adt.params], body_, adt.ret)
    return Function(list(func.params), body, func.ret_type, [], func.attrs)



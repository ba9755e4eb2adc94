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
    TensorType,
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
from ..analysis.scoped_free_vars import free_vars_of_functions
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


def _unify_vars(a, b, s: dict, flexible: set) -> None:
    """Make ``a`` and ``b`` equal by binding the type variables in ``flexible`` (on either
    side) in ``s``: a callee's type parameters against a polymorphic argument's own."""
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        while x in flexible and x in s:
            x = s[x]
        while y in flexible and y in s:
            y = s[y]
        if x is y:
            continue
        if x in flexible:
            s[x] = y
        elif y in flexible:
            s[y] = x
        elif isinstance(x, FuncType) and isinstance(y, FuncType):
            stack.extend(zip(x.arg_types, y.arg_types))
            stack.append((x.ret_type, y.ret_type))
        elif isinstance(x, TupleType) and isinstance(y, TupleType):
            stack.extend(zip(x.fields, y.fields))
        elif isinstance(x, RelayRefType) and isinstance(y, RelayRefType):
            stack.append((x.value, y.value))
        elif isinstance(x, TypeCall) and isinstance(y, TypeCall):
            stack.extend(zip(x.args, y.args))


def _resolved(s: dict) -> dict:
    """``s`` with chains of variable bindings followed to their ends (bounded by its size)."""
    out = dict(s)
    for _ in range(len(out) + 1):
        nxt = {k: _subst(v, out) for k, v in out.items()}
        if all(nxt[k] is out[k] for k in out):
            break
        out = nxt
    return out


_MISSING = object()


def _restore(env: dict, saved: list) -> None:
    """Put back the bindings a scope overrode (``_MISSING``: there was none)."""
    for v, old in reversed(saved):
        if old is _MISSING:
            env.pop(v, None)
        else:
            env[v] = old


class _PolyClosure:
    """A let-bound polymorphic lambda: encoded at each use, with that use's type arguments."""

    def __init__(self, fn: Function, env: dict, s: dict):
        self.fn, self.env, self.s = fn, env, s


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


def _type_key(t) -> tuple:
    """A cheap structural key of a type (iterative; TypeVars and ADTs by identity)."""
    key: list = []
    stack = [t]
    while stack:
        x = stack.pop()
        if isinstance(x, TensorType):
            key.append(("T", tuple(str(d) for d in x.shape), x.dtype))
        elif isinstance(x, FuncType):
            key.append(("F", len(x.arg_types)))
            stack.append(x.ret_type)
            stack.extend(reversed(x.arg_types))
        elif isinstance(x, TupleType):
            key.append(("U", len(x.fields)))
            stack.extend(reversed(x.fields))
        elif isinstance(x, RelayRefType):
            key.append(("R",))
            stack.append(x.value)
        elif isinstance(x, TypeCall):
            key.append(("C", id(x.func), len(x.args)))
            stack.extend(reversed(x.args))
        else:
            key.append(("X", id(x)) if isinstance(x, TypeVar) else ("S", str(x)))
    return tuple(key)


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
        self.free_vars: dict = {}  # Function -> its free variables

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
        key = _type_key(FuncType(ftype.arg_types, ftype.ret_type))
        adt = self.adts.get(key)
        if adt is None:
            adt = _FuncADT(len(self.adts), ftype, self.dtype)
            self.adts[key] = adt
        return adt

    # -------------------------------------------------------------- expressions
    # The steps that enter scopes are generators run on one explicit stack
    # (``printer.trampoline``): nesting depth costs no Python recursion. ``env`` is one dict
    # for the whole function; a closure body rebinds its free variables and parameters in it
    # and restores them after (no copy per closure).
    def block(self, expr, env: dict, s: dict):
        """The first-order form of block ``expr``."""
        return trampoline.run(self._block(expr, env, s))

    def expr(self, e, env: dict, s: dict):
        """The first-order form of expression ``e``."""
        return trampoline.run(self._expr(e, env, s))

    def _block(self, expr, env: dict, s: dict):
        binds = []
        e = expr
        while isinstance(e, Let):
            if isinstance(e.value, Var):  # a renaming (A-normal form makes them): substitute
                env[e.var] = yield self._expr(e.value, env, s)
            elif isinstance(e.value, Function) and e.value.type_params:
                env[e.var] = _PolyClosure(e.value, env, s)  # encoded where it is used
            else:
                v = Var(e.var.name_hint)
                env[e.var] = v  # before the value: a closure may call itself
                binds.append((v, (yield self._expr(e.value, env, s))))
            e = e.body
        out = yield self._expr(e, env, s)
        for v, value in reversed(binds):
            out = Let(v, value, out)
        return out

    def _exprs(self, items, env, s):
        out = []
        for x in items:
            out.append((yield self._expr(x, env, s)))
        return out

    def _expr(self, e, env: dict, s: dict):
        if isinstance(e, Var):
            if e not in env:
                raise ValueError(f"Defunctionalization: free variable %{e.name_hint}")
            if isinstance(env[e], _PolyClosure):
                raise ValueError(f"Defunctionalization: the polymorphic function %{e.name_hint} "
                                 "is used where its type arguments are unknown; only calls and "
                                 "arguments of global functions can instantiate it")
            return env[e]
        if isinstance(e, Constant | Op | Constructor):
            return e
        if isinstance(e, GlobalVar):
            return (yield self._global_value(e, s))
        if isinstance(e, Function):
            return (yield self._closure(e, env, s))
        if isinstance(e, Call):
            return (yield self._call(e, env, s))
        if isinstance(e, Let):
            return (yield self._block(e, env, s))
        if isinstance(e, Tuple):
            return Tuple((yield self._exprs(e.fields, env, s)))
        if isinstance(e, TupleGetItem):
            return TupleGetItem((yield self._expr(e.tuple_value, env, s)), e.index)
        if isinstance(e, If):
            cond = yield self._expr(e.cond, env, s)
            then = yield self._block(e.true_branch, env, s)
            return If(cond, then, (yield self._block(e.false_branch, env, s)))
        if isinstance(e, RefCreate):
            return RefCreate((yield self._expr(e.value, env, s)))
        if isinstance(e, RefRead):
            return RefRead((yield self._expr(e.ref, env, s)))
        if isinstance(e, RefWrite):
            ref, value = yield self._exprs([e.ref, e.value], env, s)
            return RefWrite(ref, value)
        if isinstance(e, Match):
            clauses = []
            for c in e.clauses:
                lhs = self.pattern(c.lhs, env)
                clauses.append(Clause(lhs, (yield self._block(c.rhs, env, s))))
            return Match((yield self._expr(e.data, env, s)), clauses, e.complete)
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

    def _closure(self, fn: Function, env: dict, s: dict):
        """A lambda: a constructor holding its free variables; its body joins @apply."""
        ftype = self._type_of(fn, s)
        adt = self.adt(ftype)
        fvs = self.free_vars.get(fn)
        if fvs is None:  # a function made here (an eta-expanded global, a specialization)
            self.free_vars.update(free_vars_of_functions(fn))
            fvs = self.free_vars[fn]
        fields = [self.dtype(self._type_of(v, s)) for v in fvs]
        ctor = Constructor(f"{adt.gtv.name_hint}_{len(adt.ctors)}", fields, adt.gtv)
        adt.ctors.append(ctor)
        args = []
        for v in fvs:
            args.append(env[v] if v in env else (yield self._expr(v, env, s)))
        saved = [(v, env.get(v, _MISSING)) for v in (*fvs, *fn.params)]
        pattern_vars = []
        for v in fvs:
            pv = Var(v.name_hint)
            env[v] = pv
            pattern_vars.append(PatternVar(pv))
        for p, a in zip(fn.params, adt.params, strict=True):
            env[p] = a
        body = yield self._block(fn.body, env, s)
        _restore(env, saved)
        adt.clauses.append(Clause(PatternConstructor(ctor, pattern_vars), body))
        return Call(ctor, args)

    def _global_value(self, gv: GlobalVar, s: dict):
        """A global function used as a value: a field-less constructor calling it."""
        func = self.mod[gv]
        params = [Var(p.name_hint, p.type_annotation) for p in func.params]
        wrapper = Function(params, Call(gv, params))
        return (yield self._closure(wrapper, {}, s))

    def _poly(self, e, env):
        """The polymorphic lambda ``e`` stands for (a literal or a let-bound one), else None."""
        if isinstance(e, Function) and e.type_params:
            return _PolyClosure(e, env, {})
        if isinstance(e, GlobalVar):
            func = self.mod[e]
            if isinstance(func, Function) and func.type_params:  # eta-expanded, then encoded
                params = [Var(p.name_hint, p.type_annotation) for p in func.params]
                return _PolyClosure(Function(params, Call(e, params), func.ret_type,
                                             func.type_params), {}, {})
        found = env.get(e) if isinstance(e, Var) else None
        return found if isinstance(found, _PolyClosure) else None

    def _instantiate(self, poly: _PolyClosure, expected, env: dict, s: dict):
        """``poly``'s lambda encoded at the (concrete) function type ``expected``; its free
        variables are read where it is used (``env``)."""
        fn = poly.fn
        inst: dict = {}
        _unify_vars(self._type_of(fn, {}), expected, inst, set(fn.type_params))
        return (yield self._closure(fn, env, {**s, **poly.s, **_resolved(inst)}))

    def _call(self, e: Call, env: dict, s: dict):
        f = e.op
        polys = [self._poly(a, env) for a in e.args]
        if isinstance(f, GlobalVar) and any(polys):
            types = [self._type_of(a, s) for a in e.args]
            callee, inst = self.specialize(f, types, with_subst=True)
            func = self.mod[f]
            args = []
            for a, p, q in zip(e.args, polys, func.params, strict=True):
                args.append((yield self._expr(a, env, s)) if p is None else
                            (yield self._instantiate(p, _subst(q.checked_type, inst), env, s)))
            return Call(callee, args)
        if isinstance(f, Var) and isinstance(env.get(f), _PolyClosure):  # called directly
            poly = env[f]
            args = yield self._exprs(e.args, env, s)
            expected = FuncType([self._type_of(a, s) for a in e.args],
                                self._type_of(e, s))
            closure = yield self._instantiate(poly, expected, env, s)
            return Call(self.adt(expected).apply, [closure, *args])
        args = yield self._exprs(e.args, env, s)
        if isinstance(f, Op | Constructor):
            return Call(f, args, e.attrs, e.type_args)
        if isinstance(f, GlobalVar):
            types = [self._type_of(a, s) for a in e.args]
            return Call(self.specialize(f, types), args)
        if isinstance(f, Function):  # an immediately applied lambda: bind its parameters
            saved = [(p, env.get(p, _MISSING)) for p in f.params]
            binds = []
            for p, a in zip(f.params, args, strict=True):
                v = Var(p.name_hint)
                env[p] = v
                binds.append((v, a))
            out = yield self._block(f.body, env, s)
            _restore(env, saved)
            for v, a in reversed(binds):
                out = Let(v, a, out)
            return out
        adt = self.adt(self._type_of(f, s))
        return Call(adt.apply, [(yield self._expr(f, env, s)), *args])

    # -------------------------------------------------------------- globals
    def specialize(self, gv: GlobalVar, arg_types: list, with_subst: bool = False):
        """``gv`` cloned for these argument types (``gv`` itself when it is first-order)."""
        func = self.mod[gv]
        if not isinstance(func, Function):
            return (gv, {}) if with_subst else gv
        s: dict = {}
        flexible = set(func.type_params)
        for t in arg_types:  # a polymorphic lambda's own type parameters are unknowns too
            if isinstance(t, FuncType):
                flexible.update(t.type_params)
        for p, t in zip(func.params, arg_types, strict=True):
            _unify_vars(p.checked_type if p._checked_type is not None else p.type_annotation,
                        t, s, flexible)
        s = _resolved(s)
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
        return (new, s) if with_subst else new

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



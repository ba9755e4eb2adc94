"""PartialEvaluate: evaluate the static fragment of a program, residualize the rest.

An online partial evaluator over the A-normal form. Each value is tracked as a pair: what is known
statically (a tensor, a tuple, a closure with its environment, a constructor value, a reference
into a static store) and an atom of the residual program that computes it. Operator calls on
static tensors are evaluated (by the ops' numpy references), ``if`` and ``match`` on static values
take their branch, reads of references with a known content are forwarded, and calls of known
closures and global functions are inlined -- recursive ones only while an argument is static,
up to a depth limit. Unknown calls, or writes through unknown references, forget the store. The
residual is a let chain (run DeadCodeElimination afterwards to drop what became unused, as TVM's
tests do). Let chains are walked with loops; only scopes and inlining nest.
"""

from __future__ import annotations

import numpy as np

from ...ir.expr import GlobalVar
from ...ir.op import Op
from ...ir.type import GlobalTypeVar, TensorType, TupleType, Type, TypeCall, TypeVar
from ...runtime.ndarray import NDArray
from ...transform.decorators import module_pass
from ...transform.stats import record_stat
from ..adt import (
    Clause,
    Constructor,
    Match,
    PatternConstructor,
    PatternTuple,
    PatternVar,
    PatternWildcard,
)
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
from ._ad_common import lets
from ._pass_helpers import register
from .to_a_normal_form import to_a_normal_form

__all__ = ["PartialEvaluate", "partial_evaluate"]

MAX_INLINE_DEPTH = 64  # nested inlined calls, all functions together
MAX_RECURSION = 16  # nested inlined calls of one function
_NEVER_FOLD = frozenset({"on_device", "device_copy", "annotation.stop_fusion",
                         "annotation.compiler_begin", "annotation.compiler_end"})


class _Closure:
    __slots__ = ("fn", "env")

    def __init__(self, fn, env):
        self.fn = fn
        self.env = env


class _PV:
    """A partially known value: ``kind`` in tensor/tuple/closure/global/ctor/ref, or None."""

    __slots__ = ("kind", "data", "dyn")

    def __init__(self, kind, data, dyn):
        self.kind = kind
        self.data = data
        self.dyn = dyn


class _Deferred:
    """The residual of a let-bound closure, made when its block ends and only if some emitted
    code names it: a closure that is only ever inlined costs one evaluation of its body, not
    two per nesting level (which is exponential in the depth)."""

    __slots__ = ("fn", "env", "name", "used")

    def __init__(self, fn, env, name):
        self.fn, self.env, self.name, self.used = fn, env, name, False


class _ClosurePV(_PV):
    """A known closure; reading its residual (``dyn``) marks the residual as needed."""

    __slots__ = ("deferred",)

    def __init__(self, closure, deferred):  # noqa: D107 - no base __init__: dyn is derived
        self.kind = "closure"
        self.data = closure
        self.deferred = deferred

    @property
    def dyn(self):
        self.deferred.used = True
        return self.deferred.name


def _dynamic(atom) -> _PV:
    return _PV(None, None, atom)


class _Env:
    """Lexical environment frames (a frame per inlined call), looked up innermost first."""

    __slots__ = ("vars", "parent")

    def __init__(self, parent=None):
        self.vars: dict = {}
        self.parent = parent

    def lookup(self, v):
        env = self
        while env is not None:
            pv = env.vars.get(v)
            if pv is not None:
                return pv
            env = env.parent
        raise ValueError(f"PartialEvaluate: free variable %{v.name_hint}")


class _PE:
    def __init__(self, mod):
        self.mod = mod
        self.store: dict = {}
        self.active: dict = {}
        self.depth = 0
        self.bound: frozenset = frozenset()  # the evaluated function's type parameters
        self.count = 0
        self.folded = 0
        self.inlined = 0
        self._anf: dict = {}

    # -------------------------------------------------------------- residual code
    def push(self, binds, value, hint="x", like=None):
        """Bind ``value`` to a fresh variable; annotated with the type of ``like`` (the input
        expression it computes) when that mentions an ADT: an unused ``Nothing`` or a match
        on one cannot be typed from its uses."""
        self.count += 1
        v = Var(f"{hint}{self.count}", _adt_annotation(like, self.bound))
        binds.append((v, value))
        return v

    # Every step that may enter a scope or an inlined call is a generator: it ``yield``s its
    # sub-steps to one explicit stack (``printer.trampoline``), so the Python stack stays flat
    # however deeply closures, branches and lets nest.
    def block(self, expr, env):
        """The residual of block ``expr`` in ``env`` (its bindings as lets)."""
        return trampoline.run(self._block(expr, env))

    def _block(self, expr, env):
        binds: list = []
        pv = yield self._eval_block(expr, env, binds)
        result = pv.dyn
        # the residuals of this block's closures, innermost first: making one may need an
        # earlier one; the unneeded ones are dropped
        for i in range(len(binds) - 1, -1, -1):
            v, value = binds[i]
            if isinstance(value, _Deferred):
                binds[i] = (v, (yield self._residual_function(value.fn, value.env))
                            if value.used else None)
        return lets([b for b in binds if b[1] is not None], result)

    def _eval_block(self, expr, env, binds):
        e = expr
        while isinstance(e, Let):
            if isinstance(e.value, Function):
                self._bind_function(e.var, e.value, env, binds)
            else:
                env.vars[e.var] = yield self._eval(e.value, env, binds, e.var.name_hint)
            e = e.body
        return (yield self._eval(e, env, binds, "x"))

    # -------------------------------------------------------------- values
    def _eval(self, e, env, binds, hint):
        if isinstance(e, Var):
            return env.lookup(e)
        if isinstance(e, Constant):
            return _PV("tensor", e.data.numpy(), e)
        if isinstance(e, GlobalVar):
            return _PV("global", e, e)
        if isinstance(e, Constructor):
            return _PV("ctor", (e, []), e) if not e.inputs else _dynamic(e)
        if isinstance(e, Op):
            return _dynamic(e)
        if isinstance(e, Function):
            v = Var(f"{hint}_fn")
            self._bind_function(v, e, env, binds)
            return env.vars.pop(v)
        if isinstance(e, Tuple):
            fields = []
            for f in e.fields:
                fields.append((yield self._eval(f, env, binds, hint)))
            return _PV("tuple", fields, self.push(binds, Tuple([f.dyn for f in fields]), hint,
                                                  e))
        if isinstance(e, TupleGetItem):
            t = yield self._eval(e.tuple_value, env, binds, hint)
            if t.kind == "tuple":
                return t.data[e.index]
            return _dynamic(self.push(binds, TupleGetItem(t.dyn, e.index), hint, e))
        if isinstance(e, Call):
            return (yield self._call(e, env, binds, hint))
        if isinstance(e, If):
            return (yield self._eval_if(e, env, binds, hint))
        if isinstance(e, Match):
            return (yield self._eval_match(e, env, binds, hint))
        if isinstance(e, Let):
            return (yield self._eval_block(e, _Env(env), binds))
        if isinstance(e, RefCreate):
            value = yield self._eval(e.value, env, binds, hint)
            atom = self.push(binds, RefCreate(value.dyn), hint)
            self.store[atom] = value
            return _PV("ref", atom, atom)
        if isinstance(e, RefRead):
            ref = yield self._eval(e.ref, env, binds, hint)
            if ref.kind == "ref" and ref.data in self.store:
                return self.store[ref.data]
            return _dynamic(self.push(binds, RefRead(ref.dyn), hint))
        if isinstance(e, RefWrite):
            ref = yield self._eval(e.ref, env, binds, hint)
            value = yield self._eval(e.value, env, binds, hint)
            atom = self.push(binds, RefWrite(ref.dyn, value.dyn), hint)
            if ref.kind == "ref":
                self.store[ref.data] = value
            else:
                self.store = {}
            return _PV("tuple", [], atom)
        raise TypeError(f"PartialEvaluate: unsupported expression {type(e).__name__}")

    def _bind_function(self, var, fn, env, binds):
        """``let var = fn``: a known closure (recursive through ``var``) and its residual."""
        name = Var(var.name_hint, _annotation(var.type_annotation, self.bound))
        deferred = _Deferred(fn, env, name)
        env.vars[var] = _ClosurePV(_Closure(fn, env), deferred)
        binds.append((name, deferred))

    def _residual_function(self, fn, env):
        """The function with its body partially evaluated for unknown arguments."""
        saved, self.store = self.store, {}
        inner = _Env(env)
        params = []
        for p in fn.params:
            np_ = Var(p.name_hint, _annotation(p.type_annotation, self.bound))
            inner.vars[p] = _dynamic(np_)
            params.append(np_)
        body = yield self._block(fn.body, inner)
        self.store = saved
        return Function(params, body, _annotation(fn.ret_type, self.bound), fn.type_params,
                        fn.attrs)

    # -------------------------------------------------------------- calls
    def _call(self, e, env, binds, hint):
        f = e.op
        args = []
        for a in e.args:
            args.append((yield self._eval(a, env, binds, hint)))
        if isinstance(f, Op):
            return self.op_call(e, args, binds, hint)
        if isinstance(f, Constructor):
            return _PV("ctor", (f, args), self.push(binds, Call(f, [a.dyn for a in args]), hint,
                                                    e))
        fpv = yield self._eval(f, env, binds, hint)
        target = None
        if fpv.kind == "closure":
            target = (fpv.data.fn, fpv.data.env)
        elif fpv.kind == "global" and self.mod is not None:
            func = self.mod[fpv.data]
            if isinstance(func, Function) and not (func.attrs and func.attrs.get("Primitive")):
                target = (self._global_anf(fpv.data, func), None)
        if target is not None and self._may_inline(target[0], args):
            return (yield self._inline(target[0], target[1], args, binds))
        self.store = {}  # an unknown call may write any reference
        return _dynamic(self.push(binds, Call(fpv.dyn, [a.dyn for a in args], e.attrs), hint,
                                  e))

    def _global_anf(self, gv, func):
        anf = self._anf.get(gv)
        if anf is None:
            anf = self._anf[gv] = _typed_anf(func, self.mod)
        return anf

    def _may_inline(self, fn, args) -> bool:
        if self.depth >= MAX_INLINE_DEPTH:
            return False
        active = self.active.get(fn, 0)
        if active == 0:
            return True
        return active < MAX_RECURSION and any(a.kind is not None for a in args)

    def _inline(self, fn, env, args, binds):
        frame = _Env(env)
        for p, a in zip(fn.params, args, strict=True):
            frame.vars[p] = a
        self.active[fn] = self.active.get(fn, 0) + 1
        self.depth += 1
        self.inlined += 1
        try:
            return (yield self._eval_block(fn.body, frame, binds))
        finally:
            self.depth -= 1
            self.active[fn] -= 1

    def op_call(self, e, args, binds, hint) -> _PV:
        op = e.op
        if all(_is_static_data(a) for a in args) and args and self._foldable(op):
            value = self._fold(op, e.attrs, args)
            if value is not None:
                self.folded += 1
                return value
        return _dynamic(self.push(binds, Call(op, [a.dyn for a in args], e.attrs, e.type_args),
                                  hint))

    @staticmethod
    def _foldable(op) -> bool:
        return (op.name not in _NEVER_FOLD and not op.get_attr("TOpIsStateful")
                and op.get_attr("FTypeRelation") is not None
                and op.get_attr("FNumpy") is not None)

    def _fold(self, op, attrs, args):
        try:
            out_t = op.get_attr("FTypeRelation")([_static_type(a) for a in args], attrs)
            value = op.get_attr("FNumpy")(attrs, [_static_value(a) for a in args], out_t)
        except (TypeError, ValueError):
            return None
        return _from_value(value, out_t)

    # -------------------------------------------------------------- control flow
    def _eval_if(self, e, env, binds, hint):
        cond = yield self._eval(e.cond, env, binds, hint)
        if cond.kind == "tensor":
            branch = e.true_branch if bool(np.asarray(cond.data)) else e.false_branch
            return (yield self._eval_block(branch, _Env(env), binds))
        saved = self.store
        self.store = dict(saved)
        then = yield self._block(e.true_branch, _Env(env))
        self.store = dict(saved)
        other = yield self._block(e.false_branch, _Env(env))
        self.store = {}
        return _dynamic(self.push(binds, If(cond.dyn, then, other), hint, e))

    def _eval_match(self, e, env, binds, hint):
        data = yield self._eval(e.data, env, binds, hint)
        for clause in e.clauses:
            frame = _Env(env)
            verdict = _static_match(clause.lhs, data, frame.vars)
            if verdict is None:
                break  # undecidable statically
            if verdict:
                return (yield self._eval_block(clause.rhs, frame, binds))
        saved = self.store
        clauses = []
        for clause in e.clauses:
            frame = _Env(env)
            pattern = _dynamic_pattern(clause.lhs, frame.vars)
            self.store = dict(saved)
            clauses.append(Clause(pattern, (yield self._block(clause.rhs, frame))))
        self.store = {}
        return _dynamic(self.push(binds, Match(data.dyn, clauses, e.complete), hint, e))


def _is_static_data(pv) -> bool:
    if pv.kind == "tensor":
        return True
    return pv.kind == "tuple" and all(_is_static_data(f) for f in pv.data)


def _static_type(pv):
    if pv.kind == "tensor":
        arr = np.asarray(pv.data)
        return TensorType(arr.shape, str(arr.dtype))
    return TupleType([_static_type(f) for f in pv.data])


def _static_value(pv):
    if pv.kind == "tensor":
        return np.asarray(pv.data)
    return tuple(_static_value(f) for f in pv.data)


def _from_value(value, t):
    if isinstance(t, TupleType):
        fields = [_from_value(v, ft) for v, ft in zip(value, t.fields, strict=True)]
        return _PV("tuple", fields, Tuple([f.dyn for f in fields]))
    arr = np.asarray(value)
    if isinstance(t, TensorType) and str(arr.dtype) != t.dtype:
        arr = arr.astype(t.dtype)
    return _PV("tensor", arr, Constant(NDArray(arr)))


def _static_match(p, pv, out: dict):
    """True/False when ``pv`` statically does/doesn't match ``p`` (binding into ``out``);
    None when it cannot be decided."""
    if isinstance(p, PatternWildcard):
        return True
    if isinstance(p, PatternVar):
        out[p.var] = pv
        return True
    if isinstance(p, PatternConstructor):
        if pv.kind != "ctor":
            return None
        con, fields = pv.data
        if con is not p.constructor:
            return False
        return _match_all(p.patterns, fields, out)
    if isinstance(p, PatternTuple):
        if pv.kind != "tuple":
            return None
        return _match_all(p.patterns, pv.data, out)
    return None


def _match_all(patterns, fields, out):
    result = True
    for q, f in zip(patterns, fields, strict=True):
        r = _static_match(q, f, out)
        if r is False:
            return False
        if r is None:
            result = None
    return result


def _annotation(t, bound=frozenset()):
    """A variable's annotation for the residual, dropped when it names type parameters other
    than ``bound`` (the evaluated function's own): code inlined from a polymorphic function is
    not polymorphic where it lands."""
    if t is None:
        return None
    stack = [t]
    while stack:
        x = stack.pop()
        if isinstance(x, TypeVar) and not isinstance(x, GlobalTypeVar) and x not in bound:
            return None
        for name in ("fields", "arg_types", "args"):
            stack.extend(getattr(x, name, ()) or ())
        for name in ("ret_type", "value"):
            sub = getattr(x, name, None)
            if isinstance(sub, Type):
                stack.append(sub)
    return t


def _typed_anf(func, mod):
    """The A-normal form of ``func``, type checked where possible (for ``_adt_annotation``)."""
    from .infer_type import InferTypeLocal

    anf = to_a_normal_form(func)
    try:
        InferTypeLocal(anf, mod)
    except Exception:  # noqa: BLE001 - an untyped input: residual vars stay unannotated
        pass
    return anf


def _adt_annotation(e, bound=frozenset()):
    """The checked type of ``e`` when it mentions an ADT (and no type parameter), else None."""
    t = getattr(e, "_checked_type", None)
    if t is None:
        return None
    stack = [t]
    while stack:
        x = stack.pop()
        if isinstance(x, TypeCall):
            return _annotation(t, bound)
        stack.extend(getattr(x, "fields", ()) or ())
    return None


def _dynamic_pattern(p, out: dict):
    if isinstance(p, PatternVar):
        nv = Var(p.var.name_hint, _annotation(p.var.type_annotation))
        out[p.var] = _dynamic(nv)
        return PatternVar(nv)
    if isinstance(p, PatternConstructor):
        return PatternConstructor(p.constructor, [_dynamic_pattern(q, out) for q in p.patterns])
    if isinstance(p, PatternTuple):
        return PatternTuple([_dynamic_pattern(q, out) for q in p.patterns])
    return p


def partial_evaluate(func: Function, mod=None, stats: list | None = None) -> Function:
    """PartialEvaluate on one function (its parameters unknown)."""
    pe = _PE(mod)
    anf = _typed_anf(func, mod)
    pe.bound = frozenset(anf.type_params)
    env = _Env()
    for p in anf.params:
        env.vars[p] = _dynamic(p)
    out = Function(list(anf.params), pe.block(anf.body, env), anf.ret_type, anf.type_params,
                   anf.attrs)
    if stats is not None:
        stats.append((pe.folded, pe.inlined))
    return out


@register("PartialEvaluate")
def PartialEvaluate():  # noqa: N802 - TVM's name
    """Evaluate the static fragment of the code.

    Returns
    -------
    ret : tvm.transform.Pass
        The registered pass that performs partial evaluation on an expression.
    """

    def run(mod, ctx):
        new = mod.shallow_copy()
        stats: list = []
        for gv, f in list(mod.functions.items()):
            if isinstance(f, Function) and not (f.attrs and (f.attrs.get("Primitive")
                                                             or f.attrs.get("Compiler"))):
                new.update_func(gv, partial_evaluate(f, mod, stats))
        record_stat("folded operator calls", sum(s[0] for s in stats))
        record_stat("inlined calls", sum(s[1] for s in stats))
        return new

    return module_pass(run, opt_level=1, name="PartialEvaluate")

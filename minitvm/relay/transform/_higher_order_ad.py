"""Higher-order reverse mode for ``gradient``: tensors paired with gradient references.

Works on the A-normal form of a typed function. Every tensor value ``t`` becomes ``(t, ref(g))``
with ``g`` starting at zero; every differentiable op call pushes a closure onto the backpropagator
reference ``bp`` that reads its output's gradient, applies the op's ``FPrimalGradient`` rule, adds
the results into its arguments' gradient references, then runs the previously pushed closure.
Closures, If, Match, references and tuples carry the pairs through unchanged; a global function
``@f`` is differentiated into ``@f_grad`` taking ``bp`` as an extra last parameter. Traversal is a
loop over each let chain; entering a scope is a generator step run on one explicit stack
(``printer.trampoline``), so neither program length nor nesting depth uses the Python stack.
"""

from __future__ import annotations

from ...ir.expr import GlobalVar
from ...ir.op import Op
from ...ir.type import FuncType, RelayRefType, TensorType, TupleType
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
from ..op import tensor as _t
from ..printer import trampoline
from ._ad_common import ad_type, bind_rule, differentiable, grad_rule, lets
from .infer_type import InferTypeLocal
from .to_a_normal_form import to_a_normal_form

__all__ = ["higher_order_gradient"]

_BP_TYPE = RelayRefType(FuncType([], TupleType([])))


def _primal_of(value, t, emit):
    """The plain value inside a reverse-mode value of original type ``t``."""
    if isinstance(t, TensorType):
        return emit(TupleGetItem(value, 0), t, "p")
    if isinstance(t, TupleType):
        tup = Tuple([_primal_of(TupleGetItem(value, i), ft, emit)
                     for i, ft in enumerate(t.fields)])
        tup._checked_type = t  # gradient rules read argument types
        return tup
    return value


def _pair_up(value, t, emit):
    """A reverse-mode value for plain ``value``: each tensor gets a zero gradient reference."""
    if isinstance(t, TensorType):
        return Tuple([value, RefCreate(_t.zeros_like(value))])
    if isinstance(t, TupleType):
        parts = []
        for i, ft in enumerate(t.fields):
            item = emit(TupleGetItem(value, i), ft, "p")
            parts.append(_pair_up(item, ft, emit))
        return Tuple(parts)
    return value


def _read_grad(value, t):
    """The accumulated gradient held by a reverse-mode value."""
    if isinstance(t, TensorType):
        return RefRead(TupleGetItem(value, 1))
    if isinstance(t, TupleType):
        return Tuple([_read_grad(TupleGetItem(value, i), ft) for i, ft in enumerate(t.fields)])
    raise TypeError(f"gradient: cannot read the gradient of a value of type {t}")


def _accumulate(value, g, t, out: list):
    """Statements adding gradient ``g`` into the references of reverse-mode ``value``."""
    if isinstance(t, TensorType):
        if differentiable(t):
            ref = TupleGetItem(value, 1)
            out.append(RefWrite(ref, _t.add(RefRead(ref), g)))
        return
    if isinstance(t, TupleType):
        for i, ft in enumerate(t.fields):
            gi = g.fields[i] if isinstance(g, Tuple) else TupleGetItem(g, i)
            _accumulate(TupleGetItem(value, i), gi, ft, out)


def _seed(value, t, out: list):
    """Statements setting the output's gradient to ones. A tuple result seeds only its first
    field, recursively (TVM's higher-order ``init_grad``): the gradient is that of field 0."""
    while isinstance(t, TupleType) and t.fields:
        value, t = TupleGetItem(value, 0), t.fields[0]
    if isinstance(t, TensorType):
        out.append(RefWrite(TupleGetItem(value, 1), _t.ones_like(TupleGetItem(value, 0))))
    elif isinstance(t, TupleType):
        return  # an empty tuple: nothing to seed, every gradient stays zero
    else:
        raise TypeError(f"gradient: the function's result must be a tensor or a tuple of "
                        f"tensors, got {t}")


class _ReverseAD:
    def __init__(self, mod, bp: Var, globals_: dict, pending: list):
        self.mod = mod
        self.bp = bp
        self.env: dict = {}
        self.globals = globals_
        self.pending = pending
        self.count = 0

    # ------------------------------------------------------------------ blocks
    def block(self, expr):
        """The transformed block ``expr`` (its bindings as lets)."""
        return trampoline.run(self._block(expr))

    def _block(self, expr):
        binds: list = []
        result = yield self._block_into(expr, binds)
        return lets(binds, result)

    def block_into(self, expr, binds: list):
        """Transform a let chain, appending its bindings to ``binds``; returns its result."""
        return trampoline.run(self._block_into(expr, binds))

    def _block_into(self, expr, binds: list):
        e = expr
        while isinstance(e, Let):
            value = yield self._value(e.value, binds)
            nv = Var(e.var.name_hint)
            binds.append((nv, value))
            self.env[e.var] = nv
            e = e.body
        return (yield self._value(e, binds))

    def _emitter(self, binds):
        def emit(value, t=None, hint="t"):
            self.count += 1
            v = Var(f"{hint}{self.count}", t)
            binds.append((v, value))
            return v

        return emit

    # ------------------------------------------------------------------ values
    def _value(self, e, binds):
        """A generator: the reverse-mode value of ``e`` (sub-steps yielded to the driver)."""
        if isinstance(e, Var):
            if e not in self.env:
                raise ValueError(f"gradient: free variable %{e.name_hint}")
            return self.env[e]
        if isinstance(e, Constant):
            return _pair_up(e, e.checked_type, self._emitter(binds))
        if isinstance(e, GlobalVar):
            return self._eta_global(e)
        if isinstance(e, Constructor):
            return e
        if isinstance(e, Op):
            raise TypeError(f"gradient: operator {e.name} used as a value; call it instead")
        if isinstance(e, Call):
            return (yield self._call(e, binds))
        if isinstance(e, Tuple):
            fields = []
            for f in e.fields:
                fields.append((yield self._value(f, binds)))
            return Tuple(fields)
        if isinstance(e, TupleGetItem):
            return TupleGetItem((yield self._value(e.tuple_value, binds)), e.index)
        if isinstance(e, If):
            cond = TupleGetItem((yield self._value(e.cond, binds)), 0)
            then = yield self._block(e.true_branch)
            return If(cond, then, (yield self._block(e.false_branch)))
        if isinstance(e, Function):
            params = []
            for p in e.params:
                np_ = Var(p.name_hint, ad_type(p.checked_type))
                self.env[p] = np_
                params.append(np_)
            return Function(params, (yield self._block(e.body)), None, e.type_params)
        if isinstance(e, Let):
            return (yield self._block(e))
        if isinstance(e, RefCreate):
            return RefCreate((yield self._value(e.value, binds)))
        if isinstance(e, RefRead):
            return RefRead((yield self._value(e.ref, binds)))
        if isinstance(e, RefWrite):
            ref = yield self._value(e.ref, binds)
            return RefWrite(ref, (yield self._value(e.value, binds)))
        if isinstance(e, Match):
            data = yield self._value(e.data, binds)
            clauses = []
            for c in e.clauses:
                lhs = self._pattern(c.lhs)
                clauses.append(Clause(lhs, (yield self._block(c.rhs))))
            return Match(data, clauses, e.complete)
        raise TypeError(f"gradient: unsupported expression {type(e).__name__}")

    def _pattern(self, p):
        if isinstance(p, PatternVar):
            nv = Var(p.var.name_hint)
            self.env[p.var] = nv
            return PatternVar(nv)
        if isinstance(p, PatternConstructor):
            return PatternConstructor(p.constructor, [self._pattern(q) for q in p.patterns])
        if isinstance(p, PatternTuple):
            return PatternTuple([self._pattern(q) for q in p.patterns])
        return p

    def _call(self, e, binds):
        op = e.op
        args = []
        for a in e.args:
            args.append((yield self._value(a, binds)))
        if isinstance(op, Op):
            return self._op_call(e, args, binds)
        if isinstance(op, GlobalVar):
            return Call(self.global_grad(op), args + [self.bp])
        if isinstance(op, Constructor):
            return Call(op, args)
        return Call((yield self._value(op, binds)), args)

    def _op_call(self, e, args, binds):
        emit = self._emitter(binds)
        primals = [_primal_of(a, orig.checked_type, emit) for a, orig in zip(args, e.args)]
        out_t = e.checked_type
        fwd = Call(e.op, primals, e.attrs, e.type_args)
        r = emit(fwd, out_t, "r")
        out = emit(_pair_up(r, out_t, emit), None, "o")
        if not differentiable(out_t) or not any(differentiable(a.checked_type) for a in e.args):
            return out
        rule = grad_rule(e.op)
        # the backward closure: read this output's gradient, push it into the arguments
        inner: list = []
        g = Var("g")
        inner.append((g, _read_grad(out, out_t)))
        orig = Call(e.op, primals, e.attrs, e.type_args)
        orig._checked_type = out_t
        grads = bind_rule(rule, orig, r, g)
        if len(grads) != len(e.args):
            raise ValueError(f"gradient of {e.op.name} returned {len(grads)} gradients for "
                             f"{len(e.args)} arguments")
        stmts: list = []
        for a, orig_a, ga in zip(args, e.args, grads):
            if differentiable(orig_a.checked_type):
                _accumulate(a, ga, orig_a.checked_type, stmts)
        prev = emit(RefRead(self.bp), None, "prev")
        for s in stmts:
            inner.append((Var("_"), s))
        closure = Function([], lets(inner, Call(prev, [])))
        emit(RefWrite(self.bp, closure), None, "_")
        return out

    # ------------------------------------------------------------------ globals
    def global_grad(self, gv: GlobalVar) -> GlobalVar:
        new = self.globals.get(gv)
        if new is None:
            if self.mod is None:
                raise ValueError(f"gradient: @{gv.name_hint} is called but no module was given")
            name = gv.name_hint + "_grad"
            # a second differentiation/conversion replaces the earlier version's body
            new = self.mod._gvars.get(name) or GlobalVar(name)
            self.globals[gv] = new
            self.pending.append((gv, new))
        return new

    def _eta_global(self, gv):
        func = self.mod[gv] if self.mod is not None else None
        if not isinstance(func, Function):
            raise ValueError(f"gradient: @{gv.name_hint} is not a function of the module")
        params = [Var(p.name_hint, ad_type(p.checked_type)) for p in func.params]
        return Function(params, Call(self.global_grad(gv), params + [self.bp]))


def _differentiate_global(mod, gv, new_gv, globals_, pending):
    func = to_a_normal_form(mod[gv])
    InferTypeLocal(func, mod)
    bp = Var("bp", _BP_TYPE)
    ad = _ReverseAD(mod, bp, globals_, pending)
    params = []
    for p in func.params:
        np_ = Var(p.name_hint, ad_type(p.checked_type))
        ad.env[p] = np_
        params.append(np_)
    body = ad.block(func.body)
    ret = ad_type(func.ret_type) if func.ret_type is not None else None
    mod[new_gv] = Function(params + [bp], body, ret, func.type_params)


def higher_order_gradient(func: Function, mod) -> Function:
    """The higher-order gradient of a type-checked function (see the module docstring)."""
    anf = to_a_normal_form(func)
    InferTypeLocal(anf, mod)
    ret_t = anf.body.checked_type
    bp = Var("bp", _BP_TYPE)
    globals_: dict = {}
    pending: list = []
    ad = _ReverseAD(mod, bp, globals_, pending)
    binds: list = [(bp, RefCreate(Function([], Tuple([]))))]
    emit = ad._emitter(binds)
    for p in anf.params:
        ad.env[p] = emit(_pair_up(p, p.checked_type, emit), None, "a")
    result = emit(ad.block_into(anf.body, binds), None, "res")
    stmts: list = []
    _seed(result, ret_t, stmts)
    for s in stmts:
        emit(s, None, "_")
    emit(Call(RefRead(bp), []), None, "_")
    grads = Tuple([_read_grad(ad.env[p], p.checked_type) for p in anf.params])
    out = Tuple([_primal_of(result, ret_t, emit), grads])
    body = lets(binds, out)
    while pending:
        gv, new_gv = pending.pop()
        _differentiate_global(mod, gv, new_gv, globals_, pending)
    return Function(list(anf.params), body)

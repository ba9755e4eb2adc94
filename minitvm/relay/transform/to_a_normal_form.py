"""ToANormalForm: make implicit sharing explicit by let-binding every non-atomic sub-expression.

Each sub-expression is bound in the innermost scope common to all its uses (function bodies, If
branches, let bodies and match clauses open scopes), in evaluation order within a scope. Constants
are bound too; variables, global vars, ops and constructors are atomic. Primitive functions are
kept whole; a let nested in a bound value is flattened into the enclosing scope. Inside a fixed
``on_device`` annotation (constraining result and body) the bound values carry the annotation's
device, as TVM's device-aware pass does. The same machinery, told to bind only values whose scope
was lifted, gives ToBasicBlockNormalForm.
"""

from __future__ import annotations

from types import GeneratorType

from ...ir.expr import GlobalVar
from ...ir.op import Op
from ...transform.decorators import module_pass
from ...transform.stats import record_stat
from ..adt import Clause, Constructor, Match
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
from ._pass_helpers import has_nonzero_attr, register

__all__ = ["ToANormalForm", "ToANormalFormExpr", "to_a_normal_form", "calc_scopes",
           "fill_normal_form"]

_ATOMIC = (Var, GlobalVar, Op, Constructor)


class _Scope:
    """A lexical scope: its parent, depth and the bindings collected for it so far.

    ``jump`` is a skew-binary jump pointer (Myers' scheme): ancestor and common-ancestor queries
    take O(log depth) steps, so an expression used at every level of a 100,000-deep let chain
    (an operator, a weight) does not make scope computation quadratic.
    """

    __slots__ = ("parent", "level", "bindings", "jump")

    def __init__(self, parent=None):
        self.parent = parent
        self.bindings: list = []
        if parent is None:
            self.level, self.jump = 0, self
            return
        self.level = parent.level + 1
        j = parent.jump
        self.jump = j.jump if parent.level - j.level == j.level - j.jump.level else parent

    def push(self, var: Var, value) -> Var:
        self.bindings.append((var, value))
        return var

    def get(self, body):
        """Wrap the collected bindings around ``body`` (and empty the list)."""
        for var, value in reversed(self.bindings):
            body = Let(var, value, body)
        self.bindings = []
        return body


def _ancestor(a: _Scope, level: int) -> _Scope:
    while a.level > level:
        a = a.jump if a.jump.level >= level else a.parent
    return a


def _lca(a: _Scope, b: _Scope) -> _Scope:
    if a.level > b.level:
        a = _ancestor(a, b.level)
    elif b.level > a.level:
        b = _ancestor(b, a.level)
    while a is not b:  # same level, so the jump pointers are at the same level too
        if a.jump is not b.jump:
            a, b = a.jump, b.jump
        else:
            a, b = a.parent, b.parent
    return a


class _Block:
    """A scope-opening edge of the dependency graph (function body, branch, let, clause)."""

    __slots__ = ("owner",)

    def __init__(self, owner):
        self.owner = owner


def _edges(e):
    """(parent, child) edges of ``e`` in depth-first order; parent is ``e`` or one of its blocks.

    Returns the edges and the blocks ``e`` opens (in the order TVM numbers its children).
    """
    t = type(e)
    if t is Call:
        return [(e, e.op)] + [(e, a) for a in e.args], ()
    if t is Tuple:
        return [(e, f) for f in e.fields], ()
    if t is TupleGetItem:
        return [(e, e.tuple_value)], ()
    if t is RefCreate:
        return [(e, e.value)], ()
    if t is RefRead:
        return [(e, e.ref)], ()
    if t is RefWrite:
        return [(e, e.ref), (e, e.value)], ()
    if t is If:
        tb, fb = _Block(e), _Block(e)
        return [(e, e.cond), (tb, e.true_branch), (fb, e.false_branch)], (tb, fb)
    if t is Function:
        b = _Block(e)
        return [(b, p) for p in e.params] + [(b, e.body)], (b,)
    if t is Let:
        b = _Block(e)
        return [(b, e.var), (b, e.value), (b, e.body)], (b,)
    if t is Match:
        blocks = tuple(_Block(e) for _ in e.clauses)
        return [(e, e.data)] + [(b, c.rhs) for b, c in zip(blocks, e.clauses)], blocks
    return [], ()


def calc_scopes(root):
    """Scope of every sub-expression of ``root`` and the set of expressions whose scope is lifted.

    Returns ``(scope_of_expr, sub_scopes, lifted)``: ``sub_scopes[e]`` lists the scopes opened by
    ``e``; an expression is lifted when its scope is above the scope of its first use.
    """
    parents: dict = {}
    blocks: dict = {}
    order = []  # post-order of expressions
    parents[root] = []
    stack = [(root, None)]
    while stack:
        e, it = stack[-1]
        if it is None:
            edges, opened = _edges(e)
            blocks[e] = opened
            it = iter(edges)
            stack[-1] = (e, it)
        for parent, child in it:
            if child in parents:
                parents[child].append(parent)
                continue
            parents[child] = [parent]
            stack.append((child, None))
            break
        else:
            stack.pop()
            order.append(e)
    scope: dict = {}
    block_scope: dict = {}
    lifted: set = set()
    glob = _Scope()

    def scope_of(p):
        if type(p) is _Block:
            s = block_scope.get(p)
            if s is None:
                s = block_scope[p] = _Scope(scope[p.owner])
            return s
        return scope[p]

    for e in reversed(order):
        ps = parents[e]
        if not ps:
            scope[e] = glob
            continue
        first = s = scope_of(ps[0])
        for p in ps[1:]:
            s = _lca(s, scope_of(p))
        scope[e] = s
        if s is not first and type(e) is not Op:
            lifted.add(e)
    sub_scopes = {e: tuple(scope_of(b) for b in bs) for e, bs in blocks.items() if bs}
    return scope, sub_scopes, lifted


def _ON_DEVICE():  # noqa: N802 - looked up lazily: the op registry fills at import
    return Op.get("on_device")


def _is_fixed_on_device(e) -> bool:
    """An ``on_device`` call constraining both its result and its body (TVM's is_fixed)."""
    if type(e) is not Call or not isinstance(e.op, Op) or e.op.name != "on_device":
        return False
    return bool(getattr(e.attrs, "constrain_result", False)) and \
        bool(getattr(e.attrs, "constrain_body", True))


class _Filler:
    """Rebuilds an expression, pushing bindings into the let lists of the scopes computed above.

    ``include`` is None for A-normal form (bind everything non-atomic) or the set of lifted
    expressions for basic-block normal form. Handlers are generators that yield ``(expr, var)``
    requests, so the walk uses an explicit stack instead of recursion.
    """

    def __init__(self, scope, sub_scopes, include=None):
        self.scope = scope
        self.sub = sub_scopes
        self.include = include
        self.memo: dict = {}
        self.nesting = 0
        self.bound = 0  # fresh let bindings introduced
        self.devices: list = []  # attrs of the lexically enclosing fixed on_device annotations

    def run(self, root):
        out = self._drive(root, None)
        return self.scope[root].get(out)

    def _drive(self, expr, var):
        stack = []
        value = self._start(expr, var)
        if type(value) is GeneratorType:
            stack.append((value, expr))
            value = None
        while stack:
            gen, e = stack[-1]
            try:
                req = gen.send(value)
            except StopIteration as stop:
                stack.pop()
                self.memo[e] = value = stop.value
                continue
            value = self._start(*req)
            if type(value) is GeneratorType:
                stack.append((value, req[0]))
                value = None
        return value

    def _start(self, e, v):
        """The result for ``e`` (memoized or atomic), or a generator computing it."""
        memo = self.memo
        if e in memo:
            res = memo[e]
            if v is not None:
                self.scope[e].push(v, res)
            return res
        if isinstance(e, _ATOMIC):
            res = self.scope[e].push(v, e) if v is not None else e
            memo[e] = res
            return res
        if type(e) is Constant:
            res = memo[e] = self._compound(e, e, v)
            return res
        return self._handlers[type(e)](self, e, v)

    def _on_device(self, now):
        """``now`` annotated with the enclosing on_device's device (TVM's MaybeOnDeviceFixed:
        variables, globals, operators, constructors, functions and already-annotated values
        are left as they are)."""
        if not self.devices or isinstance(now, Var | GlobalVar | Op | Constructor | Function) \
                or _is_fixed_on_device(now):
            return now
        return Call(_ON_DEVICE(), [now], self.devices[-1])

    def _compound(self, orig, now, v):
        if v is None and self.include is not None and orig not in self.include:
            return self._on_device(now)
        if v is None:
            self.bound += 1
            var = Var("x")
        else:
            var = v
        scope = self.scope[orig]
        if type(now) is Let:
            while type(now) is Let:
                scope.push(now.var, now.value)
                now = now.body
        return scope.push(var, self._on_device(now))

    def _call(self, e, v):
        if _is_fixed_on_device(e):
            # as TVM: the annotation is transparent; what its body binds is bound on its device
            self.devices.append(e.attrs)
            body = yield e.args[0], v
            self.devices.pop()
            return Call(e.op, [body], e.attrs, e.type_args, e.span)
        args = []
        for a in e.args:
            args.append((yield a, None))
        op = yield e.op, None
        return self._compound(e, Call(op, args, e.attrs, e.type_args, e.span), v)

    def _tuple(self, e, v):
        fields = []
        for f in e.fields:
            fields.append((yield f, None))
        return self._compound(e, Tuple(fields, e.span), v)

    def _tuple_getitem(self, e, v):
        t = yield e.tuple_value, None
        return self._compound(e, TupleGetItem(t, e.index, e.span), v)

    def _ref_create(self, e, v):
        x = yield e.value, None
        return self._compound(e, RefCreate(x, e.span), v)

    def _ref_read(self, e, v):
        x = yield e.ref, None
        return self._compound(e, RefRead(x, e.span), v)

    def _ref_write(self, e, v):
        r = yield e.ref, None
        x = yield e.value, None
        return self._compound(e, RefWrite(r, x, e.span), v)

    def _if(self, e, v):
        tscope, fscope = self.sub[e]
        c = yield e.cond, None
        t = tscope.get((yield e.true_branch, None))
        f = fscope.get((yield e.false_branch, None))
        return self._compound(e, If(c, t, f, e.span), v)

    def _function(self, e, v):
        if has_nonzero_attr(e, "Primitive"):
            ret = e
        else:
            (bscope,) = self.sub[e]
            self.nesting += 1
            body = bscope.get((yield e.body, None))
            self.nesting -= 1
            ret = e.with_fields(body=body)
        if self.nesting == 0 and v is None:
            return ret
        return self._compound(e, ret, v)

    def _let(self, e, v):
        (bscope,) = self.sub[e]
        yield e.value, e.var
        body = yield e.body, None
        scope = self.scope[e]
        if scope is not bscope and (v is not None or self.include is None or e in self.include):
            # _compound would unwrap the lets get() wraps: hand the bindings over instead, or
            # every let of a chain rebuilds the whole chain below it (quadratic)
            scope.bindings.extend(bscope.bindings)
            bscope.bindings = []
            return self._compound(e, body, v)
        return self._compound(e, bscope.get(body), v)

    def _match(self, e, v):
        data = yield e.data, None
        clauses = []
        for c, cscope in zip(e.clauses, self.sub[e]):
            rhs = cscope.get((yield c.rhs, None))
            clauses.append(Clause(c.lhs, rhs))
        return self._compound(e, Match(data, clauses, e.complete, e.span), v)

    _handlers = {
        Call: _call, Tuple: _tuple, TupleGetItem: _tuple_getitem, RefCreate: _ref_create,
        RefRead: _ref_read, RefWrite: _ref_write, If: _if, Function: _function, Let: _let,
        Match: _match,
    }


def fill_normal_form(expr, lifted_only: bool):
    """Let-bind sub-expressions of ``expr``: all of them, or only lifted ones (basic blocks)."""
    scope, sub, lifted = calc_scopes(expr)
    return _Filler(scope, sub, lifted if lifted_only else None).run(expr)


def fill_counting(lifted_only: bool, total: list):
    """A ``fill_normal_form`` converter that adds the fresh bindings it makes to ``total[0]``."""

    def convert(expr):
        scope, sub, lifted = calc_scopes(expr)
        filler = _Filler(scope, sub, lifted if lifted_only else None)
        out = filler.run(expr)
        total[0] += filler.bound
        return out

    return convert


def to_a_normal_form(expr):
    """The A-normal form of an expression (``ToANormalFormExpr``)."""
    return fill_normal_form(expr, lifted_only=False)


def ToANormalFormExpr(e):  # noqa: N802 - TVM's name
    """ToANormalForm for a single expression."""
    return to_a_normal_form(e)


def _check_closed(gv, func, what: str):
    fvs = free_vars(func)
    if fvs:
        names = ", ".join("%" + v.name_hint for v in fvs)
        raise ValueError(f"{what}: function @{gv.name_hint} has free variables {names}")


def transform_module(mod, convert, what: str):
    """Apply ``convert`` to every closed Relay function of ``mod`` except Compiler functions."""
    new = mod.shallow_copy()
    for gv, func in list(mod.functions.items()):
        if not isinstance(func, Function):
            continue
        _check_closed(gv, func, what)
        if func.attrs and func.attrs.get("Compiler") is not None:
            continue
        out = convert(func)
        if out is not func:
            new.update_func(gv, out)
    return new


@register("ToANormalForm")
def ToANormalForm():  # noqa: N802 - TVM's name
    """Module pass (opt 1): turn graph normal form into A-normal form.

    Called with an expression instead of being applied to a module, TVM's helper converts that
    expression directly; use :func:`ToANormalFormExpr` for that.
    """

    def run(mod, ctx):
        total = [0]
        out = transform_module(mod, fill_counting(False, total), "ToANormalForm")
        record_stat("let-bound expressions", total[0])
        return out

    return module_pass(run, opt_level=1, name="ToANormalForm", establishes=["anf"],
                       breaks=["gnf"])

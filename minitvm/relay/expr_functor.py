"""The traversal engine: ExprFunctor, ExprVisitor and ExprMutator with TVM's ``visit_*`` hooks.

Visitors and mutators never recurse along dataflow edges: before a Call, Tuple, TupleGetItem,
If or reference node is dispatched, its dataflow operands are visited from an explicit post-order
worklist (TVM's MixedModeMutator idea), so the hook's own ``self.visit(arg)`` is a memo hit. Let
chains are walked by a loop. Python recursion therefore grows only with the nesting depth of
functions and scopes, never with the length of a program.

Scopes (Function, Let, Match) join the worklist too, with all their children in the order their
hook visits them (parameters before the body; a let's variable, value, body; a match's data, then
each clause's pattern variables and right-hand side), where that cannot change what a visitor
sees: for a class that keeps ExprVisitor's/ExprMutator's hook for that scope and ``visit``, or
that declares ``_expand_scopes = True`` (its hooks do not depend on the order children are
visited in). Functions nested in lets, lets in functions, clauses in matches then nest to any
depth without recursion.
"""

from __future__ import annotations

from operator import is_

from ..ir.expr import GlobalVar
from ..ir.gc_pause import gc_paused
from ..ir.node import operand_getter
from ..ir.op import Op
from .adt import (
    Clause,
    Constructor,
    Match,
    PatternConstructor,
    PatternTuple,
    PatternVar,
    PatternWildcard,
    pattern_vars,
)
from .expr import (
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

_METHOD = {
    Var: "visit_var", GlobalVar: "visit_global_var", Constant: "visit_constant", Op: "visit_op",
    Call: "visit_call", Tuple: "visit_tuple", TupleGetItem: "visit_tuple_getitem",
    Let: "visit_let", If: "visit_if", Function: "visit_function", RefCreate: "visit_ref_create",
    RefRead: "visit_ref_read", RefWrite: "visit_ref_write", Constructor: "visit_constructor",
    Match: "visit_match",
}


def _method_name(cls) -> str:
    name = _METHOD.get(cls)
    if name is None:
        for base in cls.__mro__[1:]:
            if base in _METHOD:
                name = _METHOD[cls] = _METHOD[base]
                break
        else:
            raise TypeError(f"{cls.__name__} is not a Relay expression")
    return name


_DATAFLOW = frozenset({Call, Tuple, TupleGetItem, If, RefCreate, RefRead, RefWrite})
_DATAFLOW_OPERANDS = {cls: operand_getter(cls) for cls in _DATAFLOW}


def dataflow_children(e) -> tuple:
    """The operands of a dataflow node, in evaluation order (as the node class declares them in
    ``_node_operands``); () for binding nodes (Let, Function, Match) and leaves."""
    get = _DATAFLOW_OPERANDS.get(type(e))
    return get(e) if get is not None else ()


def dataflow_worklist(memo: dict, root, finish, children=dataflow_children,
                      cycle_error: str | None = None) -> None:
    """Set ``memo[node] = finish(node)`` for ``root`` and every dataflow node (Call, Tuple, ...)
    reachable from it through ``children`` that ``memo`` lacks, children first (iterative): the
    walk of an ExprMutator ``_visit_dataflow`` that changes what a node's children are (a match
    group's or a region's inputs) or what a finished node becomes (a callback's rewrite).
    ``cycle_error``: such children may form a cycle, raised as this ValueError."""
    stack = [root]
    entered: set | None = None if cycle_error is None else set()  # expanded, not finished
    while stack:
        node = stack[-1]
        if node in memo:
            stack.pop()
            continue
        pending = [c for c in children(node) if type(c) in _DATAFLOW and c not in memo]
        if pending:
            if entered is not None:
                if node in entered or any(c in entered for c in pending):
                    raise ValueError(cycle_error)
                entered.add(node)
            stack.extend(reversed(pending))
            continue
        stack.pop()
        memo[node] = finish(node)


def dataflow_post_order(root, children=dataflow_children) -> list:
    """Every expression reachable from ``root`` through ``children``, each once, operands
    before their users (iterative). Ops are left out."""
    order, seen, stack = [], set(), [(root, False)]
    while stack:
        e, ready = stack.pop()
        if ready:
            order.append(e)
            continue
        if id(e) in seen:
            continue
        seen.add(id(e))
        stack.append((e, True))
        for c in reversed(children(e)):
            if not isinstance(c, Op) and id(c) not in seen:
                stack.append((c, False))
    return order
_MISSING = object()
_SCOPES = (Function, Let, Match)
# class -> its scope kinds (a plain dict: ``visit`` asks per node); passes that define visitor
# classes inside functions make one per call, so it is emptied past ``_SCOPE_TYPES_MAX`` classes
_SCOPE_TYPES: dict = {}
_SCOPE_TYPES_MAX = 1024


def scope_children(e) -> tuple:
    """The children of a Function, Let or Match in the order the base hooks visit them."""
    t = type(e)
    if t is Function:
        return (*e.params, e.body)
    if t is Let:
        return (e.var, e.value, e.body)
    out = [e.data]
    for c in e.clauses:
        out.extend(pattern_vars(c.lhs))
        out.append(c.rhs)
    return tuple(out)


def _scope_types(cls) -> frozenset:
    """The scope classes whose children ``cls``'s worklist may visit before the hook."""
    found = _SCOPE_TYPES.get(cls)
    if found is not None:
        return found
    kinds: list = []
    opt = getattr(cls, "_expand_scopes", None)
    if (cls._expand_dataflow and opt is not False
            and cls._visit_dataflow is ExprFunctor._visit_dataflow):
        if opt:
            kinds = list(_SCOPES)
        elif cls.visit is ExprFunctor.visit and cls._let_chain is ExprFunctor._let_chain:
            base = ExprMutator if issubclass(cls, ExprMutator) else ExprVisitor
            if cls.visit_function is base.visit_function:
                kinds.append(Function)
            if cls.visit_let is base.visit_let:
                kinds.append(Let)
            if (cls.visit_match is base.visit_match and cls.visit_pattern is base.visit_pattern
                    and getattr(cls, "visit_clause", None) is getattr(base, "visit_clause",
                                                                       None)):
                kinds.append(Match)
    if len(_SCOPE_TYPES) >= _SCOPE_TYPES_MAX:
        _SCOPE_TYPES.clear()
    found = _SCOPE_TYPES[cls] = frozenset(kinds)
    return found


class ExprFunctor:
    """Dispatch on the expression's class to ``visit_<kind>``, memoizing results in memo_map.

    A plain functor recurses as its hooks do; ExprVisitor and ExprMutator add the worklist.
    """

    _expand_dataflow = False
    #: None: scopes join the worklist where the class keeps the base hooks; True: always (the
    #: class's scope hooks do not depend on visiting order); False: never.
    _expand_scopes: bool | None = None

    def __init__(self):
        self.memo_map = {}

    def visit(self, expr):
        memo = self.memo_map
        res = memo.get(expr, _MISSING)
        if res is not _MISSING:
            return res
        if self._expand_dataflow:
            t = type(expr)
            if t in _DATAFLOW or t in _scope_types(type(self)):
                self._visit_dataflow(expr)
                return memo[expr]
        res = getattr(self, _method_name(type(expr)))(expr)
        memo[expr] = res
        return res

    @gc_paused  # (a walk outside a pass: its stack and memo would set off full collections)
    def _visit_dataflow(self, root):
        memo = self.memo_map
        scopes = _scope_types(type(self))
        operands = _DATAFLOW_OPERANDS
        hooks: dict = {}  # node type -> this visitor's bound hook, looked up once per walk
        stack = [root]
        pop, push = stack.pop, stack.extend
        while stack:
            node = stack[-1]
            if type(node) is tuple:  # ``(node,)``: its children are done; run its hook
                pop()
                node = node[0]
                if node in memo:  # a hook's own walk may have reached it meanwhile
                    continue
            else:
                if node in memo:
                    pop()
                    continue
                t = type(node)
                if t in scopes:  # every child, in the hook's order
                    pending = [c for c in scope_children(node) if c not in memo]
                else:
                    get = operands.get(t)
                    pending = [] if get is None else [
                        c for c in get(node) if type(c) in _DATAFLOW and c not in memo]
                if pending:
                    stack[-1] = (node,)
                    push(reversed(pending))
                    continue
                pop()
            t = type(node)
            hook = hooks.get(t)
            if hook is None:
                hook = hooks[t] = getattr(self, _method_name(t))
            memo[node] = hook(node)

    def _let_chain(self, let):
        """The Let nodes of ``let`` and its directly nested, not yet visited, Let bodies."""
        chain = [let]
        body = let.body
        while type(body) is Let and body not in self.memo_map:
            chain.append(body)
            body = body.body
        return chain

    def visit_function(self, fn):
        raise NotImplementedError

    def visit_let(self, let):
        raise NotImplementedError

    def visit_call(self, call):
        raise NotImplementedError

    def visit_var(self, var):
        raise NotImplementedError

    def visit_type(self, t):
        return t

    def visit_if(self, ite):
        raise NotImplementedError

    def visit_tuple(self, tup):
        raise NotImplementedError

    def visit_tuple_getitem(self, op):
        raise NotImplementedError

    def visit_global_var(self, gv):
        raise NotImplementedError

    def visit_op(self, op):
        raise NotImplementedError

    def visit_constant(self, const):
        raise NotImplementedError

    def visit_ref_create(self, ref):
        raise NotImplementedError

    def visit_ref_write(self, ref):
        raise NotImplementedError

    def visit_ref_read(self, ref):
        raise NotImplementedError

    def visit_constructor(self, con):
        raise NotImplementedError

    def visit_match(self, m):
        raise NotImplementedError


class ExprVisitor(ExprFunctor):
    """Visits every sub-expression once (DAG-aware); override hooks and call super to descend."""

    _expand_dataflow = True

    def visit_tuple(self, tup):
        for x in tup.fields:
            self.visit(x)

    def visit_call(self, call):
        self.visit(call.op)
        for a in call.args:
            self.visit(a)

    def visit_var(self, var):
        pass

    def visit_let(self, let):
        chain = self._let_chain(let)
        for node in chain:
            self.visit(node.var)
            self.visit(node.value)
        self.visit(chain[-1].body)
        for node in chain[1:]:
            self.memo_map[node] = None

    def visit_function(self, fn):
        for x in fn.params:
            self.visit(x)
        self.visit(fn.body)

    def visit_if(self, i):
        self.visit(i.cond)
        self.visit(i.true_branch)
        self.visit(i.false_branch)

    def visit_global_var(self, gv):
        pass

    def visit_constructor(self, c):
        pass

    def visit_op(self, op):
        pass

    def visit_constant(self, const):
        pass

    def visit_ref_create(self, r):
        self.visit(r.value)

    def visit_ref_read(self, r):
        self.visit(r.ref)

    def visit_ref_write(self, r):
        self.visit(r.ref)
        self.visit(r.value)

    def visit_tuple_getitem(self, t):
        self.visit(t.tuple_value)

    def visit_match(self, m):
        self.visit(m.data)
        for c in m.clauses:
            self.visit_pattern(c.lhs)
            self.visit(c.rhs)

    def visit_pattern(self, p):
        if isinstance(p, PatternVar):
            self.visit(p.var)
        elif isinstance(p, PatternConstructor | PatternTuple):
            for q in p.patterns:
                self.visit_pattern(q)


class ExprMutator(ExprFunctor):
    """Rebuilds an expression bottom-up; unchanged sub-expressions are returned as they are."""

    _expand_dataflow = True

    def visit_function(self, fn):
        new_params = [self.visit(x) for x in fn.params]
        new_body = self.visit(fn.body)
        if all(a is b for a, b in zip(new_params, fn.params)) and new_body is fn.body:
            return fn
        return fn.with_fields(params=new_params, body=new_body)  # keeps its virtual device

    def visit_let(self, let):
        chain = self._let_chain(let)
        parts = [(self.visit(n.var), self.visit(n.value)) for n in chain]
        return self._rebuild_let_chain(chain, parts, self.visit(chain[-1].body))

    def _rebuild_let_chain(self, chain: list, parts: list, body):
        """The Let ``chain`` rebuilt inside out around its new ``body`` from each binding's new
        ``(var, value)`` in ``parts`` (None drops the binding); a Let whose var, value and body
        are unchanged is kept as it is, so an unchanged chain costs no allocation. Every Let of
        the chain is memoized to what replaces it (a visit_let override shares this)."""
        for node, part in zip(reversed(chain), reversed(parts), strict=True):
            if part is not None:
                var, value = part
                if var is node.var and value is node.value and body is node.body:
                    body = node
                else:
                    body = Let(var, value, body, node.span)
            self.memo_map[node] = body
        return body

    def visit_call(self, call):
        visit = self.visit
        op, args = call.op, call.args
        new_op = visit(op)
        new_args = [visit(a) for a in args]
        # (map over operator.is_ runs in C: every pass's walk meets each call here)
        if new_op is op and all(map(is_, new_args, args)):
            return call
        return Call(new_op, new_args, call.attrs, call.type_args, call.span)

    def visit_var(self, var):
        return var

    def visit_global_id(self, gid):
        return gid

    def visit_if(self, ite):
        c = self.visit(ite.cond)
        t = self.visit(ite.true_branch)
        f = self.visit(ite.false_branch)
        return ite.with_fields(c, t, f)

    def visit_tuple(self, tup):
        fields = [self.visit(f) for f in tup.fields]
        return tup.with_fields(fields)

    def visit_tuple_getitem(self, op):
        return op.with_fields(self.visit(op.tuple_value))

    def visit_global_var(self, gv):
        return gv

    def visit_op(self, op):
        return op

    def visit_constant(self, const):
        return const

    def visit_constructor(self, con):
        return con

    def visit_match(self, m):
        data = self.visit(m.data)
        clauses = [self.visit_clause(c) for c in m.clauses]
        return m.with_fields(data, clauses)

    def visit_clause(self, clause):
        lhs = self.visit_pattern(clause.lhs)
        rhs = self.visit(clause.rhs)
        if lhs is clause.lhs and rhs is clause.rhs:
            return clause
        return Clause(lhs, rhs)

    def visit_pattern(self, p):
        if isinstance(p, PatternVar):
            v = self.visit(p.var)
            return p if v is p.var else PatternVar(v)
        if isinstance(p, PatternConstructor):
            ps = [self.visit_pattern(q) for q in p.patterns]
            if all(a is b for a, b in zip(ps, p.patterns)):
                return p
            return PatternConstructor(p.constructor, ps)
        if isinstance(p, PatternTuple):
            ps = [self.visit_pattern(q) for q in p.patterns]
            if all(a is b for a, b in zip(ps, p.patterns)):
                return p
            return PatternTuple(ps)
        assert isinstance(p, PatternWildcard)
        return p

    def visit_ref_create(self, r):
        return r.with_fields(self.visit(r.value))

    def visit_ref_read(self, r):
        return r.with_fields(self.visit(r.ref))

    def visit_ref_write(self, r):
        return r.with_fields(self.visit(r.ref), self.visit(r.value))


class _PostOrderHooks(ExprVisitor):
    """ExprVisitor whose every hook calls ``self.fvisit`` after descending."""

    _expand_scopes = True  # children are visited in the base hooks' order either way

    def __init__(self, fvisit):
        super().__init__()
        self.fvisit = fvisit


def _hooked(name):
    base = getattr(ExprVisitor, name)

    def hook(self, e):
        base(self, e)
        self.fvisit(e)

    return hook


for _name in set(_METHOD.values()):
    setattr(_PostOrderHooks, _name, _hooked(_name))


def _post_order_let(self, let):
    inner = self._let_chain(let)[1:]
    ExprVisitor.visit_let(self, let)
    for node in reversed(inner):  # the chain's inner lets, innermost first
        self.fvisit(node)
    self.fvisit(let)


_PostOrderHooks.visit_let = _post_order_let


def post_order_visit(expr, fvisit) -> None:
    """Call ``fvisit`` on every sub-expression of ``expr`` once, children before parents."""
    _PostOrderHooks(fvisit).visit(expr)

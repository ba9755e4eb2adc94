"""Unification of Relay types: a substitution from IncompleteTypes, resolution, instantiation.

Types nest as deep as a program's tuples and closures do, so every structural helper here
walks types with an explicit stack (a tuple nested 100,000 deep needs no deep Python stack):
``_children``/``_rebuild`` give a post-order rebuild, and unification runs as generators on
a small driver that passes sub-results and errors back up.
"""

from __future__ import annotations

from ..ir.diagnostics import format_type
from ..ir.type import (
    FuncType,
    IncompleteType,
    PrimType,
    RelayRefType,
    TensorType,
    TupleType,
    TypeCall,
    TypeVar,
)
from ..tir.expr import Any, IntImm, PrimExpr
from ..tir.expr import Var as TirVar

__all__ = ["TypeSolver", "UnifyError", "is_ground", "substitute"]


class UnifyError(Exception):
    """Two types do not unify; ``detail`` says which part differs."""

    def __init__(self, lhs, rhs, detail: str = ""):
        self.lhs, self.rhs, self.detail = lhs, rhs, detail
        msg = f"{short_type(lhs)} does not match {short_type(rhs)}"
        super().__init__(f"{msg} ({detail})" if detail else msg)


def short_type(t, depth: int = 0) -> str:
    """``format_type`` for error messages, eliding what is nested deeper than 12 levels (so a
    5,000-deep tuple type prints in a line, with bounded recursion)."""
    if depth > 12:
        return "..."
    tt = type(t)
    if tt is TupleType:
        inner = ", ".join(short_type(f, depth + 1) for f in t.fields)
        return f"({inner},)" if len(t.fields) == 1 else f"({inner})"
    if tt is FuncType:
        args = ", ".join(short_type(a, depth + 1) for a in t.arg_types)
        return f"fn ({args}) -> {short_type(t.ret_type, depth + 1)}"
    if tt is RelayRefType:
        return f"ref({short_type(t.value, depth + 1)})"
    if tt is TypeCall:
        return f"{format_type(t.func)}[{', '.join(short_type(a, depth + 1) for a in t.args)}]"
    return format_type(t)


def _children(t) -> tuple:
    tt = type(t)
    if tt is TupleType:
        return tuple(t.fields)
    if tt is FuncType:
        return (*t.arg_types, t.ret_type)
    if tt is RelayRefType:
        return (t.value,)
    if tt is TypeCall:
        return tuple(t.args)
    return ()


def _rebuild(t, kids: list):
    """``t`` with its children replaced by ``kids`` (``t`` itself when none changed)."""
    if all(a is b for a, b in zip(kids, _children(t), strict=True)):
        return t
    tt = type(t)
    if tt is TupleType:
        return TupleType(kids)
    if tt is FuncType:
        return FuncType(kids[:-1], kids[-1], t.type_params, t.type_constraints)
    if tt is RelayRefType:
        return RelayRefType(kids[0])
    return TypeCall(t.func, kids)


def _map_type(t, leaf, enter=None):
    """Post-order rebuild of ``t`` without recursion. ``leaf(node, ctx)`` returns the
    replacement of a node without children (or None to recurse into a node that has some);
    ``enter(node, ctx)`` gives the context for a node's children (default: unchanged)."""
    done: dict = {}
    contexts: list = []
    stack = [(t, None, None)]
    while stack:
        node, ctx, inner = stack.pop()
        key = (id(node), id(ctx))
        if key in done:
            continue
        if inner is not None:  # children done, under the context ``enter`` gave them
            done[key] = _rebuild(node, [done[(id(c), id(inner[0]))] for c in _children(node)])
            continue
        r = leaf(node, ctx)
        if r is not None:
            done[key] = r
            continue
        kids = _children(node)
        if not kids:
            done[key] = node
            continue
        inner = enter(node, ctx) if enter else ctx  # once: a new dict has a new id
        contexts.append(inner)  # alive until the end, so no later context reuses its id
        stack.append((node, ctx, (inner,)))
        stack.extend((c, inner, None) for c in kids)
    return done[(id(t), id(None))]


def _any_node(t, pred) -> bool:
    """True when ``pred`` holds for some node of ``t`` (an explicit-stack walk)."""
    stack, seen = [t], set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if pred(node):
            return True
        stack.extend(_children(node))
    return False


def _is_incomplete(n) -> bool:
    return type(n) is IncompleteType


def is_ground(t) -> bool:
    """True when ``t`` contains no IncompleteType (after resolution)."""
    if not _children(t):  # a leaf (a tensor type, nearly always): no walk
        return type(t) is not IncompleteType
    return not _any_node(t, _is_incomplete)


def is_ground_memo(t, memo: dict) -> bool:
    """``is_ground`` remembering the answer for every part of ``t`` in ``memo`` (id -> bool),
    for calls on types that share parts (which must stay alive while ``memo`` is used)."""
    if not _children(t):
        return type(t) is not IncompleteType
    known = memo.get(id(t))
    if known is not None:
        return known
    stack = [(t, False)]
    while stack:
        node, expanded = stack.pop()
        key = id(node)
        if key in memo:
            continue
        kids = _children(node)
        if not kids:
            memo[key] = type(node) is not IncompleteType
        elif expanded:
            memo[key] = all(memo[id(c)] for c in kids)
        else:
            stack.append((node, True))
            stack.extend((c, False) for c in kids if id(c) not in memo)
    return memo[id(t)]


def substitute(t, mapping: dict):
    """Replace TypeVars (and IncompleteTypes) in ``t`` by ``mapping``'s values."""
    if not mapping:
        return t

    def leaf(node, m):
        m = mapping if m is None else m
        tt = type(node)
        if tt is TypeVar or tt is IncompleteType:
            return m.get(node, node)
        if tt is TensorType or tt is PrimType:
            return node
        return None

    def enter(node, m):
        m = mapping if m is None else m
        if type(node) is FuncType and any(k in m for k in node.type_params):
            return {k: v for k, v in m.items() if k not in node.type_params}
        return m

    out = _map_type(t, leaf, enter)
    return out


_SAME, _PARAM, _CALL, _SUBST = "same", "param", "call", "subst"


def _instantiation_plan(ft: FuncType) -> list:
    """How ``instantiate`` builds each of ``ft``'s argument types and its return type from the
    fresh type arguments: ``(_SAME, t, None)`` keeps a part without parameters, ``(_PARAM, i,
    None)`` is parameter ``i``, ``(_CALL, adt, [(i, None) | (None, t)])`` an ADT applied to
    parameters and fixed types, ``(_SUBST, t, None)`` a general substitution."""
    index = {p: i for i, p in enumerate(ft.type_params)}
    plan = []
    for part in (*ft.arg_types, ft.ret_type):
        if type(part) is TypeVar and part in index:
            plan.append((_PARAM, index[part], None))
        elif not _any_node(part, lambda n: type(n) is TypeVar and n in index):
            plan.append((_SAME, part, None))
        elif type(part) is TypeCall and all(
                (type(x) is TypeVar and x in index)
                or not _any_node(x, lambda n: type(n) is TypeVar and n in index)
                for x in part.args):
            plan.append((_CALL, part.func, [(index[x], None) if type(x) is TypeVar
                                            and x in index else (None, x) for x in part.args]))
        else:
            plan.append((_SUBST, part, None))
    return plan


def _unify_dim(a, b):
    if a is b:
        return a
    if isinstance(a, int) and isinstance(b, int):
        if a == b:
            return a
        return None
    if isinstance(a, Any) or isinstance(b, Any):
        return Any()
    if isinstance(a, IntImm):
        return _unify_dim(a.value, b)
    if isinstance(b, IntImm):
        return _unify_dim(a, b.value)
    if isinstance(a, TirVar) and isinstance(b, int):
        return b
    if isinstance(b, TirVar) and isinstance(a, int):
        return a
    if isinstance(a, PrimExpr) and isinstance(b, PrimExpr):
        from ..ir.structural import structural_equal

        return a if structural_equal(a, b, map_free_vars=False) else None
    return None


class TypeSolver:
    """A union-find substitution over IncompleteTypes with structural unification."""

    __slots__ = ("sub", "_keep", "_plans")

    def __init__(self):
        self.sub: dict = {}  # id(IncompleteType) -> Type; bound incompletes are kept alive
        self._keep: list = []
        self._plans: dict = {}  # id(polymorphic FuncType) -> (it, its instantiation plan)

    def find(self, t):
        """Follow bindings of an IncompleteType to its current representative."""
        if type(t) is not IncompleteType:
            return t
        sub = self.sub
        root = sub.get(id(t))
        if root is None:
            return t
        while type(root) is IncompleteType:
            nxt = sub.get(id(root))
            if nxt is None:
                break
            root = nxt
        sub[id(t)] = root  # path compression (t stays alive in self._keep)
        return root

    def _bind(self, inc, t) -> None:
        self.sub[id(inc)] = t
        self._keep.append(inc)

    def resolve(self, t, memo: dict | None = None):
        """``t`` with every bound IncompleteType replaced by what it is bound to.

        ``memo`` (id of a type -> its resolution) may be shared by calls between which nothing
        is unified, while the types passed stay alive: the types of a program's nested tuples
        share their parts, and each is then resolved once instead of once per enclosing type.
        """
        tt = type(t)
        if tt is TensorType or tt is TypeVar or tt is PrimType:
            return t
        if tt is IncompleteType:
            r = self.find(t)
            if not _children(r):  # unknown still, or bound to a type without parts
                return r
        elif not self.sub:
            return t
        done: dict = {} if memo is None else memo
        hit = done.get(id(t))
        if hit is not None:
            return hit
        stack = [(t, False)]
        while stack:
            node, expanded = stack.pop()
            key = id(node)
            if key in done:
                continue
            if type(node) is IncompleteType:
                r = self.find(node)
                if r is node:
                    done[key] = node
                elif expanded:
                    done[key] = done[id(r)]
                else:
                    stack.append((node, True))
                    stack.append((r, False))
                continue
            kids = _children(node)
            if not kids:
                done[key] = node
            elif expanded:
                done[key] = _rebuild(node, [done[id(c)] for c in kids])
            else:
                stack.append((node, True))
                stack.extend((c, False) for c in kids)
        return done[id(t)]

    def instantiate(self, ft: FuncType, type_args=()) -> FuncType:
        """A monomorphic copy of a polymorphic function type, with fresh (or given) type args."""
        if not ft.type_params:
            return ft
        if type_args and len(type_args) != len(ft.type_params):
            raise UnifyError(ft, ft, f"expected {len(ft.type_params)} type arguments, "
                                     f"got {len(type_args)}")
        fresh = list(type_args) if type_args else [IncompleteType() for _ in ft.type_params]
        entry = self._plans.get(id(ft))
        if entry is None:
            entry = self._plans[id(ft)] = (ft, _instantiation_plan(ft))  # keeps id(ft) alive
        mapping = None
        parts = []
        for kind, a, b in entry[1]:
            if kind is _SAME:
                parts.append(a)
            elif kind is _PARAM:
                parts.append(fresh[a])
            elif kind is _CALL:  # an ADT applied to parameters and fixed types
                parts.append(TypeCall(a, [fresh[x] if y is None else y for x, y in b]))
            else:
                if mapping is None:
                    mapping = dict(zip(ft.type_params, fresh))
                parts.append(substitute(a, mapping))
        return FuncType(parts[:-1], parts[-1])

    def _occurs(self, inc, t) -> bool:
        stack, seen = [t], set()
        while stack:
            node = self.find(stack.pop())
            if node is inc:
                return True
            if id(node) in seen:
                continue
            seen.add(id(node))
            stack.extend(_children(node))
        return False

    def unify(self, a, b):
        """Make ``a`` and ``b`` equal, binding IncompleteTypes; returns the unified type."""
        if a is b:
            return a
        # the common cases, as ``_unify`` answers them but without its generator machinery:
        # an unknown meets a type without parts (it cannot occur in one), or two tensor types
        fa, fb = self.find(a), self.find(b)
        if fa is fb:
            return fa
        ta, tb = type(fa), type(fb)
        if ta is IncompleteType and not _children(fb):
            self._bind(fa, fb)
            return fb
        if tb is IncompleteType and ta is not IncompleteType and not _children(fa):
            self._bind(fb, fa)
            return fa
        if ta is TensorType and tb is TensorType:
            return self._unify_tensor(fa, fb)
        if ta is TypeCall and tb is TypeCall:
            out = self._unify_flat_call(fa, fb)
            if out is not None:
                return out
        return _drive(self._unify(fa, fb))

    def _unify_flat_call(self, a: TypeCall, b: TypeCall):
        """``unify`` of two calls of one ADT whose argument pairs are all trivial (equal, or
        an unknown against a type without parts); None at the first other pair, after binding
        the pairs before it as ``_unify`` would (so it can go on from there)."""
        if a.func is not b.func or len(a.args) != len(b.args):
            return None
        find = self.find
        out = []
        for x, y in zip(a.args, b.args):
            x, y = find(x), find(y)
            if x is y:
                out.append(x)
            elif type(x) is IncompleteType and not _children(y):
                self._bind(x, y)
                out.append(y)
            elif type(y) is IncompleteType and not _children(x):
                self._bind(y, x)
                out.append(x)
            elif type(x) is TensorType and type(y) is TensorType and x == y:
                out.append(x)
            else:
                return None
        return TypeCall(a.func, out)

    def _unify(self, a, b):
        if a is b:
            return a
        a, b = self.find(a), self.find(b)
        if a is b:
            return a
        ta, tb = type(a), type(b)
        if ta is IncompleteType:
            if self._occurs(a, b):
                raise UnifyError(a, b, "a type cannot contain itself")
            self._bind(a, b)
            return b
        if tb is IncompleteType:
            if self._occurs(b, a):
                raise UnifyError(a, b, "a type cannot contain itself")
            self._bind(b, a)
            return a
        if ta is not tb:
            # a non-generic ADT named bare (``nat``) is the same type as its call ``nat[]``
            if ta is TypeCall and not a.args and a.func == b:
                return b
            if tb is TypeCall and not b.args and b.func == a:
                return a
            raise UnifyError(a, b)
        if ta is TensorType:
            return self._unify_tensor(a, b)
        if ta is TupleType:
            if len(a.fields) != len(b.fields):
                raise UnifyError(a, b, f"{len(a.fields)} fields vs {len(b.fields)}")
            fields = []
            for i, (x, y) in enumerate(zip(a.fields, b.fields, strict=True)):
                fields.append((yield self._sub_unify(x, y, a, b, f"field {i}")))
            return TupleType(fields)
        if ta is FuncType:
            return (yield self._unify_func(a, b))
        if ta is RelayRefType:
            v = yield self._sub_unify(a.value, b.value, a, b, "referenced value")
            return RelayRefType(v)
        if ta is TypeCall:
            if a.func is not b.func or len(a.args) != len(b.args):
                raise UnifyError(a, b)
            args = []
            for i, (x, y) in enumerate(zip(a.args, b.args, strict=True)):
                args.append((yield self._sub_unify(x, y, a, b, f"type argument {i}")))
            return TypeCall(a.func, args)
        if ta is PrimType:
            if a.dtype != b.dtype:
                raise UnifyError(a, b)
            return a
        if a == b:
            return a
        raise UnifyError(a, b)

    def _sub_unify(self, x, y, a, b, where: str):
        try:
            return (yield self._unify(x, y))
        except UnifyError as e:
            inner = e.detail or f"{short_type(e.lhs)} vs {short_type(e.rhs)}"
            detail = f"{where}: {inner}"
            if len(detail) > 400:  # deep types: keep the innermost part of the path
                detail = detail[:200] + " ... " + detail[-150:]
            raise UnifyError(self.resolve(a), self.resolve(b), detail) from None

    def _unify_tensor(self, a: TensorType, b: TensorType) -> TensorType:
        if a == b:
            return a
        if a.dtype != b.dtype:
            raise UnifyError(a, b, f"dtype {a.dtype} vs {b.dtype}")
        if len(a.shape) != len(b.shape):
            raise UnifyError(a, b, f"rank {len(a.shape)} vs {len(b.shape)}")
        dims = []
        changed = False
        for i, (x, y) in enumerate(zip(a.shape, b.shape)):
            d = _unify_dim(x, y)
            if d is None:
                raise UnifyError(a, b, f"dimension {i}: {format_type_dim(x)} vs "
                                       f"{format_type_dim(y)}")
            changed = changed or d is not x
            dims.append(d)
        return TensorType(dims, a.dtype) if changed else a

    def _unify_func(self, a: FuncType, b: FuncType):
        if len(a.type_params) < len(b.type_params):
            a, b = b, a
        if len(a.type_params) > len(b.type_params):
            # As TVM: the more polymorphic side's first type params take the other's, the rest
            # become fresh incomplete types (``fn[A](A) -> A`` unifies with ``fn(B) -> B``).
            extra = {p: IncompleteType() for p in a.type_params[len(b.type_params):]}
            keep = list(a.type_params[:len(b.type_params)])
            a = FuncType([substitute(t, extra) for t in a.arg_types],
                         substitute(a.ret_type, extra), keep, a.type_constraints)
        if b.type_params:
            b = FuncType([substitute(t, dict(zip(b.type_params, a.type_params)))
                          for t in b.arg_types],
                         substitute(b.ret_type, dict(zip(b.type_params, a.type_params))),
                         a.type_params)
        if len(a.arg_types) != len(b.arg_types):
            raise UnifyError(a, b, f"{len(a.arg_types)} parameters vs {len(b.arg_types)}")
        args = []
        for i, (x, y) in enumerate(zip(a.arg_types, b.arg_types, strict=True)):
            args.append((yield self._sub_unify(x, y, a, b, f"parameter {i}")))
        ret = yield self._sub_unify(a.ret_type, b.ret_type, a, b, "return type")
        return FuncType(args, ret, a.type_params, a.type_constraints)


def _drive(step):
    """Run generator ``step`` and the sub-generators it yields on an explicit stack; a
    sub-generator's return value is sent to its parent, its exception thrown into it."""
    if not hasattr(step, "send"):
        return step
    stack, value, err = [step], None, None
    while True:
        try:
            sub = stack[-1].throw(err) if err is not None else stack[-1].send(value)
        except StopIteration as stop:
            stack.pop()
            if not stack:
                return stop.value
            value, err = stop.value, None
            continue
        except UnifyError as e:
            stack.pop()
            if not stack:
                raise
            value, err = None, e
            continue
        value, err = None, None
        stack.append(sub)


def format_type_dim(d) -> str:
    if isinstance(d, Any):
        return "?"
    return str(d) if isinstance(d, int) else repr(d)

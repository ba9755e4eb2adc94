"""Unification of Relay types: a substitution from IncompleteTypes, resolution, instantiation.

Types nest only as deep as a program's *types* do (tuples of tuples, functions of functions),
never as long as the program, so the structural helpers here recurse on type structure.
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
        msg = f"{format_type(lhs)} does not match {format_type(rhs)}"
        super().__init__(f"{msg} ({detail})" if detail else msg)


def is_ground(t) -> bool:
    """True when ``t`` contains no IncompleteType (after resolution)."""
    tt = type(t)
    if tt is TensorType or tt is TypeVar or tt is PrimType:
        return True
    if tt is IncompleteType:
        return False
    if tt is TupleType:
        return all(is_ground(f) for f in t.fields)
    if tt is FuncType:
        return all(is_ground(a) for a in t.arg_types) and is_ground(t.ret_type)
    if tt is RelayRefType:
        return is_ground(t.value)
    if tt is TypeCall:
        return all(is_ground(a) for a in t.args)
    return True


def substitute(t, mapping: dict):
    """Replace TypeVars (and IncompleteTypes) in ``t`` by ``mapping``'s values."""
    tt = type(t)
    if tt is TensorType or tt is PrimType:
        return t
    if tt is TypeVar or tt is IncompleteType:
        return mapping.get(t, t)
    if tt is TupleType:
        fields = [substitute(f, mapping) for f in t.fields]
        return t if all(a is b for a, b in zip(fields, t.fields)) else TupleType(fields)
    if tt is FuncType:
        inner = {k: v for k, v in mapping.items() if k not in t.type_params}
        args = [substitute(a, inner) for a in t.arg_types]
        ret = substitute(t.ret_type, inner)
        if ret is t.ret_type and all(a is b for a, b in zip(args, t.arg_types)):
            return t
        return FuncType(args, ret, t.type_params, t.type_constraints)
    if tt is RelayRefType:
        v = substitute(t.value, mapping)
        return t if v is t.value else RelayRefType(v)
    if tt is TypeCall:
        args = [substitute(a, mapping) for a in t.args]
        return t if all(a is b for a, b in zip(args, t.args)) else TypeCall(t.func, args)
    return t


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

    __slots__ = ("sub", "_keep")

    def __init__(self):
        self.sub: dict = {}  # id(IncompleteType) -> Type; bound incompletes are kept alive
        self._keep: list = []

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

    def resolve(self, t):
        """``t`` with every bound IncompleteType replaced by what it is bound to."""
        tt = type(t)
        if tt is TensorType or tt is TypeVar or tt is PrimType:
            return t
        if tt is IncompleteType:
            r = self.find(t)
            return r if r is t else self.resolve(r)
        if not self.sub:
            return t
        if tt is TupleType:
            fields = [self.resolve(f) for f in t.fields]
            return t if all(a is b for a, b in zip(fields, t.fields)) else TupleType(fields)
        if tt is FuncType:
            args = [self.resolve(a) for a in t.arg_types]
            ret = self.resolve(t.ret_type)
            if ret is t.ret_type and all(a is b for a, b in zip(args, t.arg_types)):
                return t
            return FuncType(args, ret, t.type_params, t.type_constraints)
        if tt is RelayRefType:
            v = self.resolve(t.value)
            return t if v is t.value else RelayRefType(v)
        if tt is TypeCall:
            args = [self.resolve(a) for a in t.args]
            return t if all(a is b for a, b in zip(args, t.args)) else TypeCall(t.func, args)
        return t

    def instantiate(self, ft: FuncType, type_args=()) -> FuncType:
        """A monomorphic copy of a polymorphic function type, with fresh (or given) type args."""
        if not ft.type_params:
            return ft
        if type_args and len(type_args) != len(ft.type_params):
            raise UnifyError(ft, ft, f"expected {len(ft.type_params)} type arguments, "
                                     f"got {len(type_args)}")
        fresh = list(type_args) if type_args else [IncompleteType() for _ in ft.type_params]
        mapping = dict(zip(ft.type_params, fresh))
        return FuncType([substitute(a, mapping) for a in ft.arg_types],
                        substitute(ft.ret_type, mapping))

    def _occurs(self, inc, t) -> bool:
        t = self.find(t)
        tt = type(t)
        if t is inc:
            return True
        if tt is TupleType:
            return any(self._occurs(inc, f) for f in t.fields)
        if tt is FuncType:
            return any(self._occurs(inc, a) for a in t.arg_types) or self._occurs(inc, t.ret_type)
        if tt is RelayRefType:
            return self._occurs(inc, t.value)
        if tt is TypeCall:
            return any(self._occurs(inc, a) for a in t.args)
        return False

    def unify(self, a, b):
        """Make ``a`` and ``b`` equal, binding IncompleteTypes; returns the unified type."""
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
            raise UnifyError(a, b)
        if ta is TensorType:
            return self._unify_tensor(a, b)
        if ta is TupleType:
            if len(a.fields) != len(b.fields):
                raise UnifyError(a, b, f"{len(a.fields)} fields vs {len(b.fields)}")
            fields = [self._sub_unify(x, y, a, b, f"field {i}")
                      for i, (x, y) in enumerate(zip(a.fields, b.fields))]
            return TupleType(fields)
        if ta is FuncType:
            return self._unify_func(a, b)
        if ta is RelayRefType:
            return RelayRefType(self._sub_unify(a.value, b.value, a, b, "referenced value"))
        if ta is TypeCall:
            if a.func is not b.func or len(a.args) != len(b.args):
                raise UnifyError(a, b)
            args = [self._sub_unify(x, y, a, b, f"type argument {i}")
                    for i, (x, y) in enumerate(zip(a.args, b.args))]
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
            return self.unify(x, y)
        except UnifyError as e:
            inner = e.detail or f"{format_type(e.lhs)} vs {format_type(e.rhs)}"
            detail = f"{where}: {inner}"
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

    def _unify_func(self, a: FuncType, b: FuncType) -> FuncType:
        if len(a.type_params) != len(b.type_params):
            raise UnifyError(a, b, "different numbers of type parameters")
        if b.type_params:
            b = FuncType([substitute(t, dict(zip(b.type_params, a.type_params)))
                          for t in b.arg_types],
                         substitute(b.ret_type, dict(zip(b.type_params, a.type_params))),
                         a.type_params)
        if len(a.arg_types) != len(b.arg_types):
            raise UnifyError(a, b, f"{len(a.arg_types)} parameters vs {len(b.arg_types)}")
        args = [self._sub_unify(x, y, a, b, f"parameter {i}")
                for i, (x, y) in enumerate(zip(a.arg_types, b.arg_types))]
        ret = self._sub_unify(a.ret_type, b.ret_type, a, b, "return type")
        return FuncType(args, ret, a.type_params, a.type_constraints)


def format_type_dim(d) -> str:
    if isinstance(d, Any):
        return "?"
    return str(d) if isinstance(d, int) else repr(d)

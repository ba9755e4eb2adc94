"""Relations between struct infos: base check (is-a), least common ancestor, erasure of
undefined symbolic variables, static types, and the return struct info of a call.

Everything walks struct info with explicit stacks (nested tuples and functions of any depth).
Symbolic dims compare through ``relax.op._common.prove_equal``/``prove_not_equal`` (arith when
available); "cannot tell" is a level-2 failure, as in TVM.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import IntEnum

from ...ir.expr import GlobalVar
from ...ir.structural import structural_equal
from ...ir.type import FuncType, PrimType, TupleType, Type
from ...tir import expr as T
from ...tir.stmt_functor import post_order, substitute
from ..expr import Call, Expr, ShapeExpr, Var
from ..op._common import prove_equal, prove_not_equal
from ..op.base import StructInfoError
from ..struct_info import (
    FuncStructInfo,
    ObjectStructInfo,
    PrimStructInfo,
    ShapeStructInfo,
    StructInfo,
    TensorStructInfo,
    TupleStructInfo,
)
from .static_type import ObjectType, PackedFuncType, ShapeType, TensorType

__all__ = [
    "BaseCheckResult", "struct_info_base_check", "struct_info_base_check_result",
    "derive_call_ret_struct_info", "erase_to_well_defined", "get_static_type",
    "struct_info_lca", "tir_vars_in_struct_info",
]


class BaseCheckResult(IntEnum):
    """How far ``derived`` is from being covered by ``base`` (TVM's levels).

    FAIL_L0: never (statically different); FAIL_L1: not by static type (needs a cast);
    FAIL_L2: maybe (symbolic shapes or values that cannot be proven equal); PASS: always."""

    FAIL_L0 = 0
    FAIL_L1 = 1
    FAIL_L2 = 2
    PASS = 3


def _post_order_map(root, children: Callable, combine: Callable):
    """``combine(node, [results of children(node)])`` bottom-up, without recursion."""
    results: list = []
    stack: list = [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            kids = children(node)
            n = len(kids)
            vals = results[len(results) - n:] if n else []
            if n:
                del results[len(results) - n:]
            results.append(combine(node, vals))
            continue
        stack.append((node, True))
        for k in reversed(children(node)):
            stack.append((k, False))
    return results[0]


# --------------------------------------------------------------------------- base check
class _Checker:
    """Base check with optional binding of the base's symbolic vars (for call derivation)."""

    def __init__(self, bind: bool = False, ctx=None):
        self.bind = bind
        self.ctx = ctx
        self.shape_var_map: dict = {}
        self.var_map: dict = {}

    def _dim(self, base, derived) -> BaseCheckResult:
        if self.bind:
            if isinstance(base, T.Var):
                bound = self.shape_var_map.get(base)
                if bound is None:
                    self.shape_var_map[base] = derived
                    return BaseCheckResult.PASS
                base = bound
            elif self.shape_var_map:
                base = substitute(base, self.shape_var_map)
        if prove_equal(base, derived, self.ctx):
            return BaseCheckResult.PASS
        if prove_not_equal(base, derived, self.ctx):
            return BaseCheckResult.FAIL_L0
        return BaseCheckResult.FAIL_L2

    def _dims(self, base, derived) -> BaseCheckResult:
        if len(base) != len(derived):
            return BaseCheckResult.FAIL_L0
        res = BaseCheckResult.PASS
        for b, d in zip(base, derived):
            res = min(res, self._dim(b, d))
            if res == BaseCheckResult.FAIL_L0:
                break
        return res

    def _shape_expr(self, base: Expr, derived: Expr) -> BaseCheckResult:
        if isinstance(base, ShapeExpr) and isinstance(derived, ShapeExpr):
            return self._dims(base.values, derived.values)
        if base is derived or structural_equal(base, derived):
            return BaseCheckResult.PASS
        if self.bind and isinstance(base, Var):
            bound = self.var_map.get(base)
            if bound is None:
                self.var_map[base] = derived
                return BaseCheckResult.PASS
            if bound is derived or structural_equal(bound, derived):
                return BaseCheckResult.PASS
        return BaseCheckResult.FAIL_L2

    def check(self, base: StructInfo, derived: StructInfo) -> BaseCheckResult:
        res = BaseCheckResult.PASS
        stack = [(base, derived)]
        while stack and res != BaseCheckResult.FAIL_L0:
            b, d = stack.pop()
            res = min(res, self._local(b, d, stack))
        return res

    def _local(self, b, d, stack) -> BaseCheckResult:
        L0, L1, L2, PASS = (BaseCheckResult.FAIL_L0, BaseCheckResult.FAIL_L1,
                            BaseCheckResult.FAIL_L2, BaseCheckResult.PASS)
        if b is d and not self.bind:
            return PASS
        if isinstance(b, ObjectStructInfo):
            return PASS
        if isinstance(d, ObjectStructInfo):
            return L1
        if isinstance(b, PrimStructInfo):
            if not isinstance(d, PrimStructInfo):
                return L0
            if b.dtype != d.dtype:
                return L0
            if b.value is None:
                return PASS
            if d.value is None:
                return L2
            return self._dim(b.value, d.value)
        if isinstance(b, ShapeStructInfo):
            if not isinstance(d, ShapeStructInfo):
                return L0
            if b.ndim != -1 and b.ndim != d.ndim:
                return L1 if d.ndim == -1 else L0
            if b.values is None:
                return PASS
            if d.values is None:
                return L2
            return self._dims(b.values, d.values)
        if isinstance(b, TensorStructInfo):
            if not isinstance(d, TensorStructInfo):
                return L0
            res = PASS
            if b.dtype != "void" and b.dtype != d.dtype:
                if d.dtype != "void":
                    return L0
                res = L1
            if b.ndim != -1 and b.ndim != d.ndim:
                if d.ndim != -1:
                    return L0
                res = min(res, L1)
            if b.vdevice is not None and d.vdevice is not None and b.vdevice != d.vdevice:
                return L0
            if b.shape is None:
                return res
            if d.shape is None:
                return min(res, L2)
            return min(res, self._shape_expr(b.shape, d.shape))
        if isinstance(b, TupleStructInfo):
            if not isinstance(d, TupleStructInfo) or len(b.fields) != len(d.fields):
                return L0
            stack.extend(zip(b.fields, d.fields))
            return PASS
        if isinstance(b, FuncStructInfo):
            if not isinstance(d, FuncStructInfo):
                return L0
            if b.purity and not d.purity:
                return L0
            if b.is_opaque():
                if b.derive_func is not None:
                    return PASS if b.derive_func is d.derive_func else L2
                stack.append((b.ret, d.ret))
                return PASS
            if d.is_opaque():
                return L2
            if len(b.params) != len(d.params):
                return L0
            # parameters are contravariant: the derived function must accept the base's args
            stack.extend((dp, bp) for bp, dp in zip(b.params, d.params))
            stack.append((b.ret, d.ret))
            return PASS
        return L0 if type(b) is not type(d) else PASS


def struct_info_base_check_result(base: StructInfo, derived: StructInfo) -> BaseCheckResult:
    """The level (FAIL_L0 .. PASS) at which ``base`` covers ``derived``."""
    return _Checker().check(base, derived)


def struct_info_base_check(base: StructInfo, derived: StructInfo) -> bool:
    """Whether ``base`` is a base of ``derived``: every value ``derived`` describes is
    described by ``base`` (provably; unprovable symbolic equality counts as no)."""
    return struct_info_base_check_result(base, derived) == BaseCheckResult.PASS


# --------------------------------------------------------------------------- erasure
def _free_tir_vars(e) -> list:
    return [n for n in post_order(e) if isinstance(n, T.Var)]


def tir_vars_in_struct_info(sinfo: StructInfo) -> list:
    """The symbolic (tir) variables a struct info mentions, in first-use order."""
    seen: dict = {}
    stack = [sinfo]
    while stack:
        s = stack.pop()
        exprs: list = []
        if isinstance(s, TensorStructInfo) and isinstance(s.shape, ShapeExpr):
            exprs = list(s.shape.values)
        elif isinstance(s, ShapeStructInfo) and s.values is not None:
            exprs = list(s.values)
        elif isinstance(s, PrimStructInfo) and s.value is not None:
            exprs = [s.value]
        elif isinstance(s, TupleStructInfo):
            stack.extend(reversed(s.fields))
        elif isinstance(s, FuncStructInfo) and not s.is_opaque():
            stack.append(s.ret)
            stack.extend(reversed(s.params))
        for e in exprs:
            for v in _free_tir_vars(e):
                seen.setdefault(v, None)
    return list(seen)


def _erase_values(values, shape_var_map: dict):
    """Dims with the map applied, or None when one mentions an unmapped variable."""
    out = []
    for v in values:
        if any(fv not in shape_var_map for fv in _free_tir_vars(v)):
            return None
        out.append(substitute(v, shape_var_map) if shape_var_map else v)
    return out


def _erase_local(s: StructInfo, fields: list, shape_var_map: dict, var_map: dict) -> StructInfo:
    if isinstance(s, TupleStructInfo):
        if all(a is b for a, b in zip(fields, s.fields)):
            return s
        return TupleStructInfo(fields, s.span)
    if isinstance(s, PrimStructInfo):
        if s.value is None:
            return s
        v = _erase_values([s.value], shape_var_map)
        return PrimStructInfo(s.dtype, v[0] if v is not None else None, s.span)
    if isinstance(s, ShapeStructInfo):
        if s.values is None:
            return s
        v = _erase_values(s.values, shape_var_map)
        return ShapeStructInfo(v, s.ndim if v is None else -1, s.span)
    if isinstance(s, TensorStructInfo):
        shape = s.shape
        if shape is None:
            return s
        if isinstance(shape, Var):
            shape = var_map.get(shape)
            if shape is None:
                return TensorStructInfo(None, s.dtype, s.vdevice, s.ndim, s.span)
        if isinstance(shape, ShapeExpr):
            v = _erase_values(shape.values, shape_var_map)
            if v is None:
                return TensorStructInfo(None, s.dtype, s.vdevice, s.ndim, s.span)
            if all(a is b for a, b in zip(v, shape.values)) and shape is s.shape:
                return s
            return TensorStructInfo(ShapeExpr(v), s.dtype, s.vdevice, span=s.span)
        return TensorStructInfo(shape, s.dtype, s.vdevice, span=s.span)
    return s  # Object; functions define their own symbolic variables


def erase_to_well_defined(sinfo: StructInfo, shape_var_map: dict | None = None,
                          var_map: dict | None = None) -> StructInfo:
    """``sinfo`` with every symbolic variable not in ``shape_var_map`` (tir Var -> PrimExpr)
    and every shape Var not in ``var_map`` (Relax Var -> Expr) erased (the shape becomes
    unknown, keeping the rank); mapped ones are substituted."""
    smap = dict(shape_var_map or {})
    vmap = dict(var_map or {})

    def children(s):
        return list(s.fields) if isinstance(s, TupleStructInfo) else []

    return _post_order_map(sinfo, children, lambda s, f: _erase_local(s, f, smap, vmap))


# --------------------------------------------------------------------------- static type
def get_static_type(sinfo: StructInfo) -> Type:
    """The static type a struct info erases to (shapes and values dropped)."""

    def children(s):
        if isinstance(s, TupleStructInfo):
            return list(s.fields)
        if isinstance(s, FuncStructInfo) and not s.is_opaque():
            return [*s.params, s.ret]
        return []

    def combine(s, kids):
        if isinstance(s, ObjectStructInfo):
            return ObjectType(s.span)
        if isinstance(s, PrimStructInfo):
            return PrimType(s.dtype, s.span)
        if isinstance(s, ShapeStructInfo):
            return ShapeType(s.ndim, s.span)
        if isinstance(s, TensorStructInfo):
            return TensorType(s.ndim, s.dtype, s.span)
        if isinstance(s, TupleStructInfo):
            return TupleType(kids, s.span)
        if isinstance(s, FuncStructInfo):
            if s.is_opaque():
                return PackedFuncType(s.span)
            return FuncType(kids[:-1], kids[-1], span=s.span)
        raise TypeError(f"get_static_type: not a struct info: {type(s).__name__}")

    return _post_order_map(sinfo, children, combine)


# --------------------------------------------------------------------------- LCA
def _dims_equal(a, b) -> bool:
    return len(a) == len(b) and all(prove_equal(x, y) for x, y in zip(a, b))


def _lca_local(a: StructInfo, b: StructInfo, kids: list) -> StructInfo:
    if isinstance(a, ObjectStructInfo) or isinstance(b, ObjectStructInfo) or \
            type(a) is not type(b):
        return ObjectStructInfo()
    if isinstance(a, PrimStructInfo):
        if a.dtype != b.dtype:
            return ObjectStructInfo()
        if a.value is not None and b.value is not None and prove_equal(a.value, b.value):
            return a
        return a if a.value is None else PrimStructInfo(a.dtype)
    if isinstance(a, ShapeStructInfo):
        if a.ndim != b.ndim:
            return ShapeStructInfo(ndim=-1)
        if a.values is not None and b.values is not None and _dims_equal(a.values, b.values):
            return a
        return ShapeStructInfo(ndim=a.ndim)
    if isinstance(a, TensorStructInfo):
        dtype = a.dtype if a.dtype == b.dtype else "void"
        ndim = a.ndim if a.ndim == b.ndim else -1
        vdev = a.vdevice if a.vdevice == b.vdevice else None
        shape = None
        if a.shape is not None and b.shape is not None:
            if isinstance(a.shape, ShapeExpr) and isinstance(b.shape, ShapeExpr):
                if _dims_equal(a.shape.values, b.shape.values):
                    shape = a.shape
            elif a.shape is b.shape or structural_equal(a.shape, b.shape):
                shape = a.shape
        if shape is a.shape and dtype == a.dtype and vdev is a.vdevice:
            return a
        if shape is not None:
            return TensorStructInfo(shape, dtype, vdev)
        return TensorStructInfo(None, dtype, vdev, ndim)
    if isinstance(a, TupleStructInfo):
        if len(a.fields) != len(b.fields):
            return ObjectStructInfo()
        if all(k is f for k, f in zip(kids, a.fields)):
            return a
        return TupleStructInfo(kids)
    if isinstance(a, FuncStructInfo):
        purity = a.purity and b.purity
        if a.is_opaque() or b.is_opaque():
            if a.derive_func is not None and a.derive_func is not b.derive_func:
                return FuncStructInfo.opaque_func(purity=purity)
            return FuncStructInfo.opaque_func(ret=kids[0], purity=purity)
        if len(a.params) != len(b.params):
            return FuncStructInfo.opaque_func(purity=purity)
        ret = kids[0]
        if not all(structural_equal(p, q) for p, q in zip(a.params, b.params)):
            return FuncStructInfo.opaque_func(ret=ret, purity=purity)
        if ret is a.ret and purity == a.purity:
            return a
        return FuncStructInfo(a.params, ret, purity)
    return a


def struct_info_lca(lhs: StructInfo, rhs: StructInfo) -> StructInfo:
    """The most specific struct info that is a base of both (``R.Object`` at worst)."""

    def children(pair):
        a, b = pair
        if isinstance(a, TupleStructInfo) and isinstance(b, TupleStructInfo) and \
                len(a.fields) == len(b.fields):
            return list(zip(a.fields, b.fields))
        if isinstance(a, FuncStructInfo) and isinstance(b, FuncStructInfo):
            opaque = a.is_opaque() or b.is_opaque()
            same_arity = opaque or len(a.params) == len(b.params)
            if same_arity and not (opaque and a.derive_func is not None
                                   and a.derive_func is not b.derive_func):
                return [(a.ret, b.ret)]
        return []

    return _post_order_map((lhs, rhs), children, lambda p, k: _lca_local(p[0], p[1], k))


# --------------------------------------------------------------------------- call derivation
def derive_call_ret_struct_info(func_sinfo: FuncStructInfo, call: Call, ctx=None) -> StructInfo:
    """The struct info a call of a function of ``func_sinfo`` returns: its symbolic
    parameters are bound from the arguments' struct info and substituted into the return."""
    if func_sinfo.is_opaque():
        if func_sinfo.derive_func is not None:
            return func_sinfo.derive_func(call, ctx)
        return func_sinfo.ret
    params = func_sinfo.params
    if len(params) != len(call.args):
        raise StructInfoError(f"call of a function of {len(params)} parameters with "
                              f"{len(call.args)} arguments")
    checker = _Checker(bind=True, ctx=ctx)
    for i, (p, a) in enumerate(zip(params, call.args)):
        arg = getattr(a, "struct_info_", None)
        if arg is None and isinstance(a, GlobalVar):  # a global function passed as a value
            arg = a._checked_type if isinstance(a._checked_type, StructInfo) else None
        if arg is None:
            raise StructInfoError(f"argument {i} of the call has no struct info; normalize it "
                                  "first")
        # a function-typed parameter binds nothing: its symbolic variables would otherwise be
        # bound to those of the function passed, which belong to that function's scope
        res = (_Checker(ctx=ctx) if isinstance(p, FuncStructInfo) else checker).check(p, arg)
        if res in (BaseCheckResult.FAIL_L0, BaseCheckResult.FAIL_L1):
            from ..op._common import fmt_sinfo

            raise StructInfoError(f"argument {i} type mismatch: expected {fmt_sinfo(p)}, given "
                                  f"{fmt_sinfo(arg)}")
    return erase_to_well_defined(func_sinfo.ret, checker.shape_var_map, checker.var_map)

"""Apply the intrinsic lowerings users register (TVM's LowerIntrin).

``tvm.ir.register_intrin_lowering("tir.exp", target="llvm", f=rule, level=99)`` stores ``rule``
as the op's ``"llvm.FLowerIntrinsic"`` attribute. Before code generation each call of such an
intrinsic is handed to its rule (``"<target kind>.FLowerIntrinsic"``, else
``"default.FLowerIntrinsic"``) as a ``tir.Call`` whose ``op`` is the registered ``Op``; the
expression the rule returns replaces the call, and is lowered in turn (a rule may produce calls
of other intrinsics). A rule that returns its argument, or None, keeps the call.

The code generator implements the built-in intrinsics itself, so without user rules the
function is returned unchanged.
"""

from __future__ import annotations

from collections.abc import Callable

from ...ir.op import Op
from .. import expr as E
from ..function import PrimFunc
from ..stmt_functor import transform_expr, transform_stmt

__all__ = ["lower_intrin", "intrin_lowering_rules", "LowerIntrin"]

# a rule whose result keeps producing calls to lower (exp -> f(exp) -> ...) never terminates
MAX_LOWERING_ROUNDS = 16


_TIR_OPS: dict[str, object] = {"count": -1, "ops": []}


def _intrinsic_ops() -> list:
    """The registered ``tir.*`` ops (re-listed when the registry grows: every kernel compile
    asks, and the registry holds hundreds of dialect ops)."""
    registry = Op._registry
    if _TIR_OPS["count"] != len(registry):
        _TIR_OPS["ops"] = [(n, op) for n, op in list(registry.items()) if n.startswith("tir.")]
        _TIR_OPS["count"] = len(registry)
    return _TIR_OPS["ops"]


def intrin_lowering_rules(target_kind: str) -> dict[str, Callable]:
    """Intrinsic name -> lowering rule registered for ``target_kind`` (or for every target)."""
    rules = {}
    for name, op in _intrinsic_ops():
        f = op.get_attr(f"{target_kind}.FLowerIntrinsic")
        if f is None:
            f = op.get_attr("default.FLowerIntrinsic")
        if f is not None:
            rules[name] = f
    return rules


def _target_kind(func: PrimFunc, target) -> str:
    if target is None and func.attrs:
        target = func.attrs.get("target")
    if target is None:
        return "llvm"
    kind = getattr(target, "kind", None)
    if kind is not None:
        return getattr(kind, "name", str(kind))
    return str(target).split()[0]


def lower_intrin(func: PrimFunc, target=None) -> PrimFunc:
    """``func`` with every call of an intrinsic that has a registered lowering rule for
    ``target`` (default: the function's ``target`` attribute, else llvm) replaced by the
    rule's result."""
    if not isinstance(func, PrimFunc):
        raise TypeError(f"lower_intrin takes a tir.PrimFunc, got {type(func).__name__}")
    rules = intrin_lowering_rules(_target_kind(func, target))
    if not rules:
        return func

    def lower_call(call: E.Call):
        rule = rules.get(call.op_name)
        if rule is None:
            return None
        as_op = call if isinstance(call.op, Op) else E.Call(call.dtype, Op.get(call.op_name),
                                                             call.args)
        out = rule(as_op)
        if out is None or out is as_op:
            return None
        if not isinstance(out, E.PrimExpr):
            raise TypeError(f"the lowering rule of {call.op_name} returned "
                            f"{type(out).__name__}, not a PrimExpr")
        return out

    changed: list[E.Call] = []

    def fpost(node):
        if isinstance(node, E.Call):
            rep = lower_call(node)
            if rep is not None:
                changed.append(node)
            return rep
        return None

    def lower_expr(e):
        for _ in range(MAX_LOWERING_ROUNDS):
            changed.clear()
            e = transform_expr(e, fpost)
            if not changed:
                return e
        raise RuntimeError(f"intrinsic lowering did not terminate after {MAX_LOWERING_ROUNDS} "
                           f"rounds: a rule keeps producing calls to lower (last: "
                           f"{changed[-1].op_name})")

    body = transform_stmt(func.body, fexpr=lower_expr)
    return func if body is func.body else func.with_body(body)


def LowerIntrin():  # noqa: N802 - TVM's name
    """``tvm.tir.transform.LowerIntrin()``: the module pass applying ``lower_intrin`` to every
    PrimFunc, for its ``target`` attribute (else the current target, else llvm)."""
    from ...transform import module_pass

    def run(mod, ctx):
        from ...target import Target

        current = Target.current()
        new = mod.shallow_copy()
        for gv, func in list(mod.functions.items()):
            if isinstance(func, PrimFunc):
                lowered = lower_intrin(func, None if func.attrs and func.attrs.get("target")
                                       else current)
                if lowered is not func:
                    new[gv] = lowered
        return new

    return module_pass(run, opt_level=0, name="tir.LowerIntrin")

"""ConvertBlockedOps: the channel-blocked ops of the x86 AlterOpLayout rules
(``nn.contrib_conv2d_NCHWc``, ``nn.contrib_depthwise_conv2d_NCHWc``, ``nn.contrib_dense_pack``)
back to the plain ops whose native kernels minitvm has, before Legalize.

relay.build optimizes for a plain ``llvm`` target, so it never makes these ops; a module whose
passes ran by hand under ``llvm -mcpu=<x86 cpu>``, or parsed from TVM-printed optimized Relay,
holds them, and they had no compute (numpy at run time). The convolutions go back to NCHW by
ConvertLayout (``{op: ["NCHW", "OIHW"]}``, the hooks of ``op/nn/_layout_hooks_blocked.py``),
which carries NCHW through the ops between two of them, so the blocked graph's
``layout_transform`` calls meet in chains (NCHW -> NCHW16c -> NCHW8c -> NCHW where two convs
blocked differently meet): each chain becomes one transform, none where it ends where it began.
A constant blocked weight's transform back to OIHW folds at build time. A packed dense becomes ``nn.dense`` of its weight
laid out back to NC (also folded for a constant). The kernels are then those of the unblocked
model: the conv / depthwise / GEMM schedules, not a loop nest over the blocked layout.

minitvm's own pass, opt_level 0: without it these ops have no native code at all."""

from __future__ import annotations

from ...ir.op import Op
from ...transform.stats import record_stat
from ..analysis.op_names import calls_any
from ..analysis.properties import walk
from ..expr import Call, Function
from ..expr_functor import ExprMutator
from ._pass_helpers import register
from .convert_layout import convert_layout
from .function_pass import function_pass

__all__ = ["BLOCKED_CONVS", "ConvertBlockedOps", "convert_blocked_ops"]

BLOCKED_CONVS = ("nn.contrib_conv2d_NCHWc", "nn.contrib_depthwise_conv2d_NCHWc")
_DENSE_PACK = "nn.contrib_dense_pack"
_DESIRED = {name: ["NCHW", "OIHW"] for name in BLOCKED_CONVS}


def _has_blocked_op(body) -> bool:
    """Does ``body`` (not entering nested functions) call a blocked op?"""
    names = (*BLOCKED_CONVS, _DENSE_PACK)
    return any(isinstance(e, Call) and isinstance(e.op, Op) and e.op.name in names
               for e in walk(body, enter=lambda f: False))


class _DefuseBlocked(ExprMutator):
    """Inlines the called ``Primitive`` function literals that hold a blocked op (a module
    optimized elsewhere, fused already), so that their ops convert and FuseOps fuses them
    again; other fused calls are kept."""

    def __init__(self):
        super().__init__()
        self.count = 0

    def visit_call(self, call):
        new = super().visit_call(call)
        fn = new.op if isinstance(new, Call) else None
        if not (isinstance(fn, Function) and fn.attrs is not None and
                fn.attrs.get("Primitive", 0) and _has_blocked_op(fn.body)):
            return new
        from .defuse_ops import _Substitute

        self.count += 1
        return _Substitute(dict(zip(fn.params, new.args))).visit(fn.body)


def _typed_function(func, mod):
    """``func`` type-checked beside ``mod``'s functions (it may call them)."""
    from ...ir.module import IRModule
    from .infer_type import infer_type_module

    tmp = mod.shallow_copy() if mod is not None else IRModule()
    tmp["__convert_blocked_ops"] = func
    return infer_type_module(tmp)["__convert_blocked_ops"]


def _blocked_ops(func) -> tuple[bool, bool, bool]:
    """(has a blocked convolution, has a packed dense, calls a Primitive function literal
    holding a blocked op) in ``func``'s own body: every build asks, and most functions call
    none of them (``op_names``, which the pipeline's other passes share, answers that)."""
    if not calls_any(func, (*BLOCKED_CONVS, _DENSE_PACK)):
        return False, False, False
    conv = dense = fused = False
    for e in walk(func, enter=lambda f: f is func):
        if not isinstance(e, Call):
            continue
        if isinstance(e.op, Op):
            conv = conv or e.op.name in BLOCKED_CONVS
            dense = dense or e.op.name == _DENSE_PACK
        elif isinstance(e.op, Function) and e.op.attrs is not None and \
                e.op.attrs.get("Primitive", 0):
            fused = fused or _has_blocked_op(e.op.body)
    return conv, dense, fused


def _is_transform(e) -> bool:
    return isinstance(e, Call) and isinstance(e.op, Op) and e.op.name == "layout_transform"


class _FoldTransformChains(ExprMutator):
    """``layout_transform(layout_transform(x, A, B), B, C)`` -> ``layout_transform(x, A, C)``,
    or ``x`` where C is A. The layouts a chain passes through are those of the graph's own
    tensors (channel blocks dividing the channels: no padding), so every step is a bijection
    and the composition is exact."""

    def visit_call(self, call):
        new = super().visit_call(call)
        if not (_is_transform(new) and _is_transform(new.args[0])):
            return new
        from ..op.transform import layout_transform

        inner = new.args[0]
        src, dst = str(inner.attrs.src_layout), str(new.attrs.dst_layout)
        if str(inner.attrs.dst_layout) != str(new.attrs.src_layout):
            return new
        if src == dst:
            return inner.args[0]
        out = layout_transform(inner.args[0], src, dst)
        return Call(out.op, out.args, out.attrs, None, new.span)


class _UnpackDense(ExprMutator):
    """``contrib_dense_pack(x, w)`` -> ``dense(x, layout_transform(w, weight_layout, "NC"))``."""

    def __init__(self):
        super().__init__()
        self.rewritten = 0

    def visit_call(self, call):
        new = super().visit_call(call)
        if not (isinstance(new, Call) and isinstance(new.op, Op) and
                new.op.name == _DENSE_PACK):
            return new
        from ..op.nn import dense
        from ..op.transform import layout_transform

        data, weight = new.args
        layout = str(new.attrs.weight_layout)
        if layout != "NC":
            weight = layout_transform(weight, layout, "NC")
        self.rewritten += 1
        out = dense(data, weight, units=new.attrs.units, out_dtype=new.attrs.out_dtype)
        return Call(out.op, out.args, out.attrs, None, new.span)


def convert_blocked_ops(func, mod=None):
    """(function, ops rewritten): ``func`` with its blocked convolutions in NCHW and its packed
    dense calls as ``nn.dense``; ``func`` itself when it has neither. Needs a typed ``func``;
    fused functions holding blocked ops are inlined first (``mod``: the module ``func`` is
    type-checked in after that)."""
    count = 0
    conv, dense, fused = _blocked_ops(func)
    if fused:
        defuser = _DefuseBlocked()
        func = _typed_function(defuser.visit(func), mod)
        count += defuser.count
        conv, dense, _ = _blocked_ops(func)
    if conv:
        func, _ = convert_layout(func, _DESIRED)
        func = _FoldTransformChains().visit(func)
        count += 1
    if dense:
        mutator = _UnpackDense()
        func = mutator.visit(func)
        count += mutator.rewritten
    return func, count


@register("ConvertBlockedOps")
def ConvertBlockedOps(after_alter_op_layout: bool = False):  # noqa: N802 - TVM's pass naming
    """Function pass (opt 0): blocked NCHWc convolutions and packed dense back to NCHW / NC.

    ``after_alter_op_layout``: the instance relay.build's pipeline runs right after its own
    AlterOpLayout, which makes blocked ops only under an x86 ``-mcpu`` target
    (``relay.optimize(mod, target="llvm -mcpu=skylake-avx512")``); elsewhere it does nothing,
    sparing a large graph a second walk."""

    def transform(func, mod, ctx):
        if func.attrs is not None and (func.attrs.get("Primitive", 0) or
                                       func.attrs.get("Compiler")):
            return func
        if after_alter_op_layout:
            from ...topi.x86.utils import is_x86_target

            if not is_x86_target():
                return func
        out, count = convert_blocked_ops(func, mod)
        record_stat("blocked functions converted", count)
        return out

    return function_pass(transform, opt_level=0, name="ConvertBlockedOps",
                         required=["InferType"], needs=["typed"])

"""``relax.transform.FunctionPass`` / ``DataflowBlockPass`` and their decorators.

Both are passes of the shared pass infrastructure (``minitvm.transform``): the context, the
Sequential filtering, instruments, statistics and IR-property contracts apply to them as to any
pass. The decorators take TVM's arguments (``opt_level`` is mandatory, as in TVM's Relax) and
accept a function or a class (``transform_function`` / ``transform_dataflowblock``).

TVM's rules: a function pass runs ``pass_func(func, mod, ctx)`` on every ``relax.Function`` of
the module (not on PrimFuncs or ExternFuncs), except functions with a ``Compiler`` attribute or a
non-zero ``SkipOptimization``; the module handed to it is the pass's own shallow copy and the
results are added back after all functions were visited. A dataflow-block pass rewrites every
``DataflowBlock`` of every Relax function (nested functions too) with
``pass_func(block, mod, ctx)`` and must neither rebind nor drop the block's non-dataflow
variables or the symbolic variables its ``match_cast``s define.
"""

from __future__ import annotations

import inspect

from ...ir.attrs import nonzero_attr
from ...transform.decorators import make_info, wrap_pass_class
from ...transform.pass_base import Pass, check_module_arg
from ...transform.pass_info import PassInfo
from ...transform.stats import record_stat
from ..expr import DataflowBlock, DataflowVar, Function, MatchCast
from ..expr_functor import ExprMutator

__all__ = ["FunctionPass", "DataflowBlockPass", "function_pass", "dataflowblock_pass",
           "skip_function"]


def skip_function(func) -> bool:
    """TVM's FunctionPassNode::SkipFunction: a ``Compiler`` attribute or ``SkipOptimization``."""
    attrs = func.attrs
    if not attrs:
        return False
    return attrs.get("Compiler") is not None or nonzero_attr(attrs.get("SkipOptimization"))


class FunctionPass(Pass):
    """A pass applied to each Relax function of a module: ``pass_func(func, mod, ctx)``."""

    kind = "function"

    def __init__(self, pass_func, info: PassInfo):
        super().__init__(info)
        self.pass_func = pass_func

    def _run(self, mod, ctx):
        check_module_arg(self, mod)
        updated = mod.shallow_copy()
        changed = []
        for gvar, func in mod.functions.items():
            if not isinstance(func, Function) or skip_function(func):
                continue
            new_func = self.pass_func(func, updated, ctx)
            if not isinstance(new_func, Function):
                raise TypeError(f"function pass {self.info.name!r} returned "
                                f"{type(new_func).__name__} for @{gvar.name_hint}, expected a "
                                "relax.Function")
            if new_func is not func:
                changed.append((gvar, new_func))
        for gvar, new_func in changed:
            _update_function(updated, gvar, new_func)
        if changed:
            record_stat("functions changed", len(changed))
        return updated


def _update_function(mod, gvar, func) -> None:
    mod.update_func(gvar, func)
    if func._checked_type is not None:
        gvar._checked_type = func._checked_type


# ------------------------------------------------------------------------------ dataflow blocks
def _symbolic_vars_defined(sinfo) -> dict:
    """The tir variables that appear directly as dimensions / values in ``sinfo`` (what a
    ``match_cast`` defines), by name."""
    from ...tir.expr import Var as TirVar
    from .utils import sinfo_prim_fields

    out = {}
    for e in sinfo_prim_fields(sinfo):
        if isinstance(e, TirVar):
            out[e.name] = e
    return out


class _BlockRewriter(ExprMutator):
    """Rewrites each dataflow block of a function with the pass function (TVM's
    DataflowBlockMutator), checking the block keeps its outputs and symbolic variables."""

    def __init__(self, pass_func, mod, ctx, name: str):
        super().__init__(mod)
        self.pass_func = pass_func
        self.mod = mod
        self.ctx = ctx
        self.name = name
        self.rewritten = 0

    def visit_dataflow_block_(self, block: DataflowBlock):
        outputs, symbolic = {}, {}
        for b in block.bindings:
            if isinstance(b, MatchCast):
                symbolic.update(_symbolic_vars_defined(b.struct_info))
            if not isinstance(b.var, DataflowVar):
                outputs[b.var.name_hint] = b.var
        new = self.pass_func(block, self.mod, self.ctx)
        if not isinstance(new, DataflowBlock):
            raise TypeError(f"dataflow-block pass {self.name!r} returned {type(new).__name__}, "
                            "expected a relax.DataflowBlock")
        for b in new.bindings:
            if isinstance(b, MatchCast):
                for n, v in _symbolic_vars_defined(b.struct_info).items():
                    if n in symbolic:
                        if symbolic[n] is not v:
                            raise ValueError("Error: DataflowBlock Pass should not rewrite any "
                                             f"Symbolic Var ({n}).")
                        del symbolic[n]
            if not isinstance(b.var, DataflowVar) and b.var.name_hint in outputs:
                if outputs[b.var.name_hint] is not b.var:
                    raise ValueError("Error: DataflowBlock Pass should not rewrite any "
                                     f"GlobalScope Var ({b.var.name_hint}).")
                del outputs[b.var.name_hint]
        if outputs or symbolic:
            gone = sorted(outputs) + sorted(symbolic)
            raise ValueError("Error: DataflowBlock Pass should not delete any GlobalScope/"
                             f"Symbolic Var (missing: {', '.join(gone)}).")
        if new is not block:
            self.rewritten += 1
        return new


class DataflowBlockPass(Pass):
    """A pass applied to each DataflowBlock of each Relax function of a module."""

    kind = "dataflowblock"

    def __init__(self, pass_func, info: PassInfo):
        super().__init__(info)
        self.pass_func = pass_func

    def _run(self, mod, ctx):
        check_module_arg(self, mod)
        updated = mod.shallow_copy()
        rewriter = _BlockRewriter(self.pass_func, updated, ctx, self.info.name)
        changed = []
        for gvar, func in mod.functions.items():
            if not isinstance(func, Function):
                continue
            new_func = rewriter.visit_expr(func)
            if new_func is not func:
                changed.append((gvar, new_func))
        for gvar, new_func in changed:
            _update_function(updated, gvar, new_func)
        if rewriter.rewritten:
            record_stat("dataflow blocks changed", rewriter.rewritten)
        return updated


class _ThreeArgumentDataflowBlockPass(DataflowBlockPass):
    # wrap_pass_class hands (x, mod, ctx) to the user method only for kind "function"; this
    # base borrows that path, and the wrapped class is given its real kind afterwards.
    kind = "function"


def _create(pass_func, opt_level, name, required, traceable, contracts, base, method, what):
    if opt_level is None:
        raise ValueError(f"Please provide opt_level for the {what} pass.")
    required = required if required else []
    if not isinstance(required, list | tuple):
        raise TypeError("Required is expected to be the type of list/tuple.")

    def create(pass_arg):
        if not callable(pass_arg):
            label = "Function" if base is FunctionPass else "DataflowBlock"
            raise TypeError(f"pass_func must be a callable for {label} pass")
        info = make_info(pass_arg, opt_level, name, required, traceable, contracts)
        if inspect.isclass(pass_arg):
            if base is DataflowBlockPass:
                cls = wrap_pass_class(pass_arg, _ThreeArgumentDataflowBlockPass, info, method)
                cls.kind = DataflowBlockPass.kind
                return cls
            return wrap_pass_class(pass_arg, base, info, method)
        return base(pass_arg, info)

    if pass_func is not None:
        return create(pass_func)
    return create


def function_pass(pass_func=None, opt_level=None, name=None, required=None, traceable=False,
                  **contracts):
    """Decorate a Relax function pass: a function ``(func, mod, ctx) -> func`` or a class with
    ``transform_function``; ``@function_pass(opt_level=1)`` or ``function_pass(f,
    opt_level=1)``. ``opt_level`` is required (ValueError otherwise, as TVM); beyond TVM,
    IR-property contracts (``needs=[...]``, ``establishes=[...]``...) may be declared."""
    return _create(pass_func, opt_level, name, required, traceable, contracts, FunctionPass,
                   "transform_function", "function")


def dataflowblock_pass(pass_func=None, opt_level=None, name=None, required=None,
                       traceable=False, **contracts):
    """Decorate a Relax dataflow-block pass: a function ``(block, mod, ctx) -> block`` or a
    class with ``transform_dataflowblock``. ``opt_level`` is required, as in TVM."""
    return _create(pass_func, opt_level, name, required, traceable, contracts,
                   DataflowBlockPass, "transform_dataflowblock", "dataflowblock")

"""relay.transform.FunctionPass, the function_pass decorator and the deprecated build_config."""

from __future__ import annotations

import inspect
import warnings

from ...ir.attrs import nonzero_attr
from ...transform.decorators import make_info, wrap_pass_class
from ...transform.pass_base import Pass, check_module_arg
from ...transform.pass_info import PassInfo
from ...transform.stats import record_stat


def is_optimizable(func) -> bool:
    """TVM's AsOptimizableFunctionNode: a Relay Function without Compiler/Extern/SkipOptimization."""
    from ..expr import Function

    if not isinstance(func, Function):
        return False
    attrs = func.attrs
    if not attrs:
        return True
    if attrs.get("Compiler") is not None:
        return False
    return not (nonzero_attr(attrs.get("Extern")) or nonzero_attr(attrs.get("SkipOptimization")))


class FunctionPass(Pass):
    """A pass applied to each optimizable Relay function of a module, then InferType (as TVM).

    ``pass_func(func, mod, ctx) -> Function``; functions with a Compiler, Extern or
    SkipOptimization attribute are left alone.
    """

    kind = "function"
    runs_after = "InferType"  # function passes re-infer types, as in TVM

    def __init__(self, pass_func, info: PassInfo):
        super().__init__(info)
        self.pass_func = pass_func

    def _run(self, mod, ctx):
        from ..expr import Function

        check_module_arg(self, mod)
        updated = mod.shallow_copy()
        pass_func = self.pass_func
        changed = []
        for gvar, func in mod.functions.items():
            if not is_optimizable(func):
                continue
            new_func = pass_func(func, updated, ctx)
            if not isinstance(new_func, Function):
                raise TypeError(f"function pass {self.info.name!r} returned "
                                f"{type(new_func).__name__} for @{gvar.name_hint}, expected a "
                                "relay.Function")
            if new_func is not func:
                changed.append((gvar, new_func))
        for gvar, new_func in changed:
            updated.update_func(gvar, new_func)
        if changed:
            record_stat("functions changed", len(changed))
        return _infer_type_after(self, mod, updated, ctx)


def _infer_type_after(p, before, updated, ctx):
    """The InferType TVM runs after every function pass (visible to instruments)."""
    from ...transform.properties import _KNOWN, managed_pass, record_properties

    result = managed_pass("InferType")(updated, ctx)
    if p.info.has_contracts or _KNOWN.get(before):
        record_properties(p, before, result, ctx, extra=("typed",))
    return result


def function_pass(pass_func=None, opt_level=None, name=None, required=None, **contracts):
    """Decorate a function pass: a function ``(func, mod, ctx) -> func`` or a class with
    ``transform_function``. Usable bare or with arguments; opt_level defaults to 0.
    """

    def create(pass_arg):
        if not callable(pass_arg):
            raise TypeError("pass_func must be a callable for Module pass")
        info = make_info(pass_arg, opt_level, name, required, False, contracts)
        if inspect.isclass(pass_arg):
            return wrap_pass_class(pass_arg, FunctionPass, info, "transform_function")
        return FunctionPass(pass_arg, info)

    if pass_func is not None:
        return create(pass_func)
    return create


def build_config(opt_level=2, fallback_device=None, required_pass=None, disabled_pass=None,
                 trace=None):
    """Deprecated alias of ``tvm.transform.PassContext``."""
    from ...transform.context import PassContext

    warnings.warn("relay.transform.build_config is deprecated; use tvm.transform.PassContext",
                  DeprecationWarning, stacklevel=2)
    config = None
    if fallback_device is not None:
        dev_type = getattr(fallback_device, "device_type", fallback_device)
        if isinstance(dev_type, int):
            config = {"relay.fallback_device_type": dev_type}
    return PassContext(opt_level, required_pass, disabled_pass, config=config, trace=trace)

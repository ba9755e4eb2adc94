"""Pass and ModulePass, and the one path every pass invocation takes (TVM's Pass::operator())."""

from __future__ import annotations

import sys

from ..ir.gc_pause import paused
from .context import PassContext
from .pass_info import PassInfo


class Pass:
    """The base of all passes: ``pass(mod)`` or ``pass(mod, ctx)`` returns a new IRModule.

    A pass called directly always runs, whatever the context's opt_level; only an instrument's
    ``should_run`` can skip it. Sequential applies opt_level/required/disabled to its children.
    """

    kind = "pass"
    _text_args: dict | None = None  # the arguments a registered factory was called with
    _factory_name: str | None = None

    def __init__(self, info: PassInfo):
        self._info = info

    @property
    def info(self) -> PassInfo:
        return self._info

    def __call__(self, mod, ctx: PassContext | None = None):
        with paused():  # (IR is acyclic: the cyclic GC only rescans the nodes a pass makes)
            return self._call(mod, ctx)

    def _call(self, mod, ctx: PassContext | None):
        check_module_arg(self, mod)  # before properties, instruments or crash reports see it
        if ctx is None:
            ctx = PassContext.current()
        if not ctx.instruments and not ctx._debug:
            info = self._info
            if info.needs:
                from .properties import ensure_properties

                mod = ensure_properties(self, mod, ctx)
            try:
                result = self._run(mod, ctx)
                if info.has_contracts:
                    from .properties import record_properties

                    record_properties(self, mod, result, ctx)
            except Exception as err:
                from .debug.crash import on_pass_crash

                on_pass_crash(self, mod, ctx, err)
                raise
            return result
        from .instrumented import run_instrumented

        return run_instrumented(self, mod, ctx)

    def _run(self, mod, ctx):
        raise NotImplementedError(f"{type(self).__name__} does not implement _run(mod, ctx)")

    def __str__(self) -> str:
        return self.describe()

    def describe(self) -> str:
        """TVM's str() of the pass: its kind, name and optimization level."""
        return f"Run {self.kind.capitalize()} pass: {self.info.name} at the optimization level " \
               f"{self.info.opt_level}"

    def __repr__(self) -> str:
        return self.describe()


def check_module_arg(p: Pass, mod) -> None:
    from ..ir.module import IRModule

    if not isinstance(mod, IRModule):
        raise TypeError(f"pass {p.info.name!r} must be called on an IRModule, got "
                        f"{type(mod).__name__}")


def check_module_result(p: Pass, result, what: str = "IRModule"):
    from ..ir.module import IRModule

    if not isinstance(result, IRModule):
        raise TypeError(f"pass {p.info.name!r} returned {type(result).__name__}, expected an "
                        f"{what}")
    return result


class ModulePass(Pass):
    """A pass over a whole IRModule: ``pass_func(mod, ctx) -> IRModule``.

    The function receives a shallow copy of the module (a new function map, shared functions),
    so assigning ``mod["f"] = ...`` never changes the caller's module.
    """

    kind = "module"

    def __init__(self, pass_func, info: PassInfo):
        super().__init__(info)
        self.pass_func = pass_func

    def _run(self, mod, ctx):
        check_module_arg(self, mod)
        return check_module_result(self, self.pass_func(mod.shallow_copy(), ctx))


def _print_ir_func(mod, ctx, header: str, show_meta_data: bool):
    try:
        try:
            text = mod.astext(show_meta_data)
        except NotImplementedError:  # a dialect without a text format of its own
            text = str(mod)
    except Exception as err:  # printing must never break a pipeline
        text = f"<module could not be printed: {err}>"
    sys.stderr.write(f"PrintIR({header}):\n{text}\n")
    return mod


def PrintIR(header: str = "", show_meta_data: bool = False) -> ModulePass:
    """A module pass that prints the module to stderr (TVM logs it) and returns it unchanged."""
    p = ModulePass(lambda mod, ctx: _print_ir_func(mod, ctx, header, show_meta_data),
                   PassInfo(0, "PrintIR"))
    args = {}
    if header:
        args["header"] = header
    if show_meta_data:
        args["show_meta_data"] = True
    p._text_args = args
    p._factory_name = "PrintIR"
    return p

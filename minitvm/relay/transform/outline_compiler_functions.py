"""OutlineCompilerFunctionsWithExistingGlobalSymbols(compiler_filter): lift inline "Compiler"
functions to global functions named by their own ``global_symbol``.

In every optimizable function of the module, a call whose callee is a function literal with a
``Compiler`` attribute (passing ``compiler_filter``; "" accepts all) — written in place, or bound
by a ``let`` and called through the variable — becomes a call of the global function named by
the literal's ``global_symbol`` attribute. The function is added to the module under that name
once (structurally equal copies share it); a let that bound such a function disappears. This is
TVM v0.19's pass: the symbol must already be on the function, and a function without one is an
error here (TVM aborts on a check).
"""

from __future__ import annotations

from ...ir.expr import GlobalVar
from ...transform.stats import record_stat
from ..expr import Call, Function
from ..expr_functor import ExprMutator
from ._pass_helpers import is_optimizable, make_module_pass, register
from .mark_compiler_functions_as_extern import check_compiler_filter, compiler_function

__all__ = ["OutlineCompilerFunctionsWithExistingGlobalSymbols", "outline_compiler_functions"]


class _Outliner(ExprMutator):
    """Rewrites calls of matching inline compiler functions to calls of global functions."""

    def __init__(self, symbols: dict, compiler_filter: str, mod):
        super().__init__()
        self.symbols = symbols  # global_symbol -> GlobalVar, shared by the whole run
        self.compiler_filter = compiler_filter
        self.mod = mod
        self.count = 0

    def visit_let(self, let):
        chain = self._let_chain(let)
        parts = []
        for node in chain:
            var = self.visit(node.var)
            value = self.visit(node.value)
            inlined = compiler_function(value, self.compiler_filter) is not None
            if inlined:  # uses of the variable see the function itself
                self.memo_map[node.var] = value
            parts.append(None if inlined else (var, value))  # inlined: no longer needed
        return self._rebuild_let_chain(chain, parts, self.visit(chain[-1].body))

    def visit_call(self, call):
        new = super().visit_call(call)
        func = compiler_function(new.op, self.compiler_filter)
        if func is None:
            return new
        gv = self._global_symbol(func)
        if gv.name_hint in self.mod:  # lifted before (or already there): call that one
            gv = self.mod.get_global_var(gv.name_hint)
        else:
            self.mod.add(gv, func)
        self.count += 1
        return Call(gv, new.args, new.attrs, new.type_args, new.span)

    def _global_symbol(self, func: Function) -> GlobalVar:
        symbol = func.attrs.get("global_symbol")
        if symbol is None:
            raise ValueError(
                "OutlineCompilerFunctionsWithExistingGlobalSymbols: a function with Compiler="
                f"{func.attrs.get('Compiler')!r} has no 'global_symbol' attribute to name the "
                "global function it becomes")
        name = str(getattr(symbol, "value", symbol))
        gv = self.symbols.get(name)
        if gv is None:
            gv = GlobalVar(name, None, func.span)
            if func._checked_type is not None:  # keep the function's type on the global var
                gv._checked_type = func._checked_type
            self.symbols[name] = gv
        return gv


def outline_compiler_functions(mod, compiler_filter: str = "", symbols: dict | None = None):
    """A copy of ``mod`` with matching inline "Compiler" functions lifted to global functions."""
    out = mod.shallow_copy()
    symbols = {} if symbols is None else symbols
    count = 0
    for gv, func in list(mod.functions.items()):
        if not is_optimizable(func):
            continue
        outliner = _Outliner(symbols, compiler_filter, out)
        body = outliner.visit(func.body)
        count += outliner.count
        if body is not func.body:
            out.update_func(gv, Function(func.params, body, func.ret_type, func.type_params,
                                         func.attrs, func.span))
    record_stat("outlined calls", count)
    return out


@register("OutlineCompilerFunctionsWithExistingGlobalSymbols")
def OutlineCompilerFunctionsWithExistingGlobalSymbols(compiler_filter: str = ""):  # noqa: N802
    """Module pass (opt 0): lift inline "Compiler" functions to globals named by global_symbol.

    Parameters
    ----------
    compiler_filter : str
        Only functions whose ``Compiler`` attribute equals this; "" (default) for all.
    """
    check_compiler_filter("OutlineCompilerFunctionsWithExistingGlobalSymbols", compiler_filter)
    symbols: dict = {}  # as TVM's cache, shared by every run of this pass object

    def run(mod, ctx):
        return outline_compiler_functions(mod, compiler_filter, symbols)

    return make_module_pass(run, opt_level=0,
                            name="OutlineCompilerFunctionsWithExistingGlobalSymbols")

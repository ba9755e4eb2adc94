"""RemoveUnusedFunctions: drop global functions not reachable from the entry functions.

Reachability follows every reference to a GlobalVar (a call or a function used as a value),
starting from the entry functions (``["main"]`` by default). Type definitions are kept.
"""

from __future__ import annotations

from ...transform.stats import record_stat
from ..expr_functor import ExprVisitor
from ._pass_helpers import make_module_pass, register

__all__ = ["RemoveUnusedFunctions", "remove_unused_functions", "global_refs"]


def global_refs(func) -> list:
    """The GlobalVars referenced by ``func``, in first-use order (each once)."""
    found: dict = {}

    class _Refs(ExprVisitor):
        def visit_global_var(self, gv):
            found.setdefault(gv, None)

    _Refs().visit(func)
    return list(found)


def remove_unused_functions(mod, entry_functions=None):
    """A copy of ``mod`` holding only the functions reachable from ``entry_functions``."""
    entries = list(entry_functions) if entry_functions else ["main"]
    reached: dict = {}
    stack = []
    for name in entries:
        if name not in mod:
            raise ValueError(f"RemoveUnusedFunctions: entry function {name!r} is not in the "
                             f"module; it has {sorted(g.name_hint for g in mod.functions)}")
        stack.append(mod.get_global_var(name))
    while stack:
        gv = stack.pop()
        if gv in reached:
            continue
        reached[gv] = None
        func = mod.functions.get(gv)
        if func is None:
            continue
        for ref in global_refs(func):
            target = mod.get_global_var(ref.name_hint) if ref.name_hint in mod else ref
            if target not in reached:
                stack.append(target)
    new = mod.shallow_copy()
    for gv in list(mod.functions):
        if gv not in reached:
            new.remove(gv)
    return new


@register("RemoveUnusedFunctions")
def RemoveUnusedFunctions(entry_functions=None):  # noqa: N802 - TVM's name
    """Module pass (opt 1): remove global functions unreachable from the entry functions.

    Parameters
    ----------
    entry_functions : list of str
        The functions to start from; ``["main"]`` when None.
    """

    def run(mod, ctx):
        out = remove_unused_functions(mod, entry_functions)
        record_stat("removed functions", len(mod.functions) - len(out.functions))
        return out

    return make_module_pass(run, opt_level=1, name="RemoveUnusedFunctions")


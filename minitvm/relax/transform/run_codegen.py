"""RunCodegen (TVM's ``relax.transform.RunCodegen(target_options=None,
entry_functions=None)``): hand the functions marked ``{"Codegen": name}`` to their external
codegen and call the result instead.

For each codegen name the global function ``relax.ext.<name>`` (``tvm.register_func``) gets
``(functions, options, constant_names)`` and returns runtime modules (objects with
``get_function(symbol)``, or dicts symbol -> callable) that provide each function's
``global_symbol`` as a destination-passing packed function. Calls of the marked functions
become ``R.call_dps_packed(symbol, args, out_sinfo)``, the marked functions leave the module
and the modules join its ``external_mods`` attribute, from which ``relax.build`` links them.
A codegen that is not registered is an error naming it; the GPU libraries' codegens (cuBLAS,
cuDNN, CUTLASS, TensorRT...) are a deliberate difference of minitvm, which builds for the CPU.
"""

from __future__ import annotations

from ...ir.expr import GlobalVar
from ...runtime.error import differs
from ...runtime.registry import get_global_func
from ...runtime.relax_vm.executable import external_function
from ...transform.decorators import module_pass
from ...transform.registry import register_pass
from ...transform.stats import record_stat
from ..expr import Call, ExternFunc, Function
from ..expr_functor import ExprMutator
from ..op.base import call_dps_packed

__all__ = ["RunCodegen", "run_codegen"]

_GPU_CODEGENS = {"cublas", "cudnn", "cutlass", "tensorrt", "hipblas", "rocblas", "clml",
                 "nnapi", "coreml", "composable_kernel", "flashinfer"}


class _CallExternal(ExprMutator):
    """Calls of the offloaded global functions become call_dps_packed of their symbols."""

    def __init__(self, mod, symbols: dict):
        super().__init__(mod)
        self.symbols = symbols

    def visit_call_(self, op: Call):
        call = super().visit_call_(op)
        if isinstance(call.op, GlobalVar) and call.op in self.symbols:
            symbol, ret = self.symbols[call.op]
            return call_dps_packed(ExternFunc(symbol), list(call.args), ret)
        return call


def _codegen(name: str):
    ext = get_global_func(f"relax.ext.{name}", allow_missing=True)
    if ext is not None:
        return ext
    if name in _GPU_CODEGENS:
        raise differs(f"relax.transform.RunCodegen (codegen {name!r})",
                      f"minitvm builds for the host CPU and has no {name} codegen "
                      f"(relax.ext.{name})",
                      "relax.build with target 'llvm' on the module without the "
                      f"{name} partitioning (its GEMMs and convolutions are generated for the "
                      "CPU and call the process's BLAS), or register your own CPU codegen "
                      f"as 'relax.ext.{name}'")
    raise ValueError(f"RunCodegen: no codegen is registered for {name!r}; register one with "
                     f"tvm.register_func('relax.ext.{name}')")


def run_codegen(mod, target_options=None):
    """The pass body: ``mod`` with its ``Codegen`` functions offloaded, and how many."""
    by_codegen: dict[str, list] = {}
    for gv, func in mod.functions.items():
        if isinstance(func, Function) and func.attrs and "Codegen" in func.attrs:
            by_codegen.setdefault(str(func.attrs["Codegen"]), []).append((gv, func))
    if not by_codegen:
        return mod, 0
    externals = list(mod.get_attr("external_mods") or [])
    symbols: dict = {}
    for name, items in by_codegen.items():
        options = dict((target_options or {}).get(name, {}))
        made = _codegen(name)([f for _, f in items], options, {})
        made = list(made) if isinstance(made, list | tuple) else [made]
        for gv, func in items:
            symbol = str(func.attrs.get("global_symbol", gv.name_hint))
            if external_function(made, symbol) is None:
                raise ValueError(f"RunCodegen: codegen {name!r} returned no function "
                                 f"{symbol!r} for {gv.name_hint}")
            symbols[gv] = (symbol, func.ret_struct_info)
        externals.extend(made)
    out = mod.shallow_copy()
    for gv in symbols:
        out.remove(gv)
    rewriter = _CallExternal(out, symbols)
    for gv, func in list(out.functions.items()):
        if isinstance(func, Function):
            new = rewriter.visit_expr(func)
            if new is not func:
                out[gv] = new
    out.attrs["external_mods"] = externals
    return out, len(symbols)


@register_pass("RunCodegen")
def RunCodegen(target_options: dict | None = None,  # noqa: N802 - TVM's name
               entry_functions: list[str] | None = None):
    """Module pass (opt 0): offload the ``Codegen`` functions to ``relax.ext.<name>``.

    Parameters
    ----------
    target_options : dict, optional
        Per codegen name, the options its ``relax.ext`` function receives.
    entry_functions : list of str, optional
        Kept for TVM's signature: every function's calls are rewritten.
    """

    def run(mod, ctx):
        mod, made = run_codegen(mod, target_options)
        record_stat("offloaded functions", made)
        return mod

    return module_pass(run, opt_level=0, name="RunCodegen")

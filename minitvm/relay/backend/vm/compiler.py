"""``relay.vm.compile`` / ``VMCompiler``: a Relay module to a Relay VM ``Executable``.

The module goes through relay.build's pipeline in its VM form (``is_vm=True``: constructors are
eta-expanded, the homogeneous InferType before AlterOpLayout is skipped, as TVM does), then
LambdaLift turns closures into global functions and InferType types them; every global function
is compiled to bytecode (``codegen.FunctionCompiler``) and every primitive function to a kernel
(``kernels.KernelTable``: native code, per-shape specialization for dynamic shapes). A kernel over
symbolic sizes that an earlier build recorded on disk (``saved.RecordStore``) is loaded from its
record, not scheduled again: a warm build of a model seen before only optimizes and emits code.
"""

from __future__ import annotations

from ....backend.options import lowering_options
from ....backend.target_cpu import for_target
from ....ir.gc_pause import paused
from ....ir.module import IRModule
from ....runtime import blas
from ....runtime.vm import Executable
from ....target import Target
from ....target.host_only import check_host_target
from ....transform.context import PassContext
from ...expr import Function
from . import specialized  # noqa: F401  (registers the saved format of specializing kernels)
from .codegen import TAIL_CALL_LOOPS, FunctionCompiler
from .kernels import KernelTable
from .prefetch import prefetch_vm_kernels
from .saved import RecordStore

__all__ = ["VMCompiler", "compile"]


def _check_target(target) -> None:
    if target is None:
        return
    if isinstance(target, dict):
        for t in target.values():
            _check_target(t)
        return
    check_host_target("relay.vm.compile", target)


def _has_local_functions(mod: IRModule) -> bool:
    """Does any global function hold a non-primitive local function (work for LambdaLift)?"""
    from ...adt import Match
    from ...expr import Let
    from ...expr_functor import dataflow_children, dataflow_post_order, scope_children

    def children(e):
        if type(e) is Function and e.attrs is not None and e.attrs.get("Primitive", 0):
            return ()
        return scope_children(e) if type(e) in (Function, Let, Match) else dataflow_children(e)

    for func in mod.functions.values():
        if not isinstance(func, Function):
            continue
        for e in dataflow_post_order(func.body, children):
            if isinstance(e, Function) and not (e.attrs is not None and
                                                e.attrs.get("Primitive", 0)):
                return True
    return False


class VMCompiler:
    """TVM's VMCompiler: ``set_params``, ``lower``, ``codegen``, ``optimize``, ``get_exec``."""

    def __init__(self):
        self._params: dict = {}
        self._exec: Executable | None = None
        self.optimized_mod: IRModule | None = None

    def set_params(self, params: dict | None) -> None:
        """Bind these values to ``main``'s parameters of the same name (they become constants)."""
        self._params = dict(params or {})

    def get_params(self) -> dict:
        return dict(self._params)

    def optimize(self, mod, target=None, params=None):
        """The VM's optimization pipeline; returns ``(mod, params)``."""
        from ...transform import InferType, LambdaLift
        from ...transform.bind_params import bind_params_by_name
        from ...transform.pipeline import relay_build_pipeline
        from ...transform.plan_devices import host_program

        if isinstance(mod, Function):
            mod = IRModule.from_expr(mod)
        if not isinstance(mod, IRModule):
            raise TypeError(f"relay.vm.compile expects an IRModule, got {type(mod).__name__}")
        if "main" not in [gv.name_hint for gv in mod.functions]:
            raise ValueError("relay.vm.compile: the module has no 'main' function")
        _check_target(target)
        params = dict(params if params is not None else self._params)
        if params:
            mod = mod.shallow_copy()
            mod["main"] = bind_params_by_name(mod["main"], params)
        tgt = Target("llvm")
        seq = relay_build_pipeline(target=tgt, is_vm=True)
        with paused(), tgt:
            mod = InferType()(seq(mod))
            mod = host_program(mod, "relay.vm.compile")
            if _has_local_functions(mod):
                mod = InferType()(LambdaLift()(mod))
        return mod, params

    def lower(self, mod, target=None, target_host=None) -> None:
        """Optimize ``mod`` and compile it to bytecode and kernels (``get_exec`` returns it)."""
        # (as relay.build: the build's numpy work, constant folding and packing weights into
        # the kernels' layouts, is small products that OpenBLAS's threads only slow down)
        with blas.single_threaded():
            self._lower(mod, target)

    def _lower(self, mod, target) -> None:
        opt, _ = self.optimize(mod, target, None)
        self.optimized_mod = opt
        options = lowering_options(PassContext.current())
        store = RecordStore.open()  # (symbolic kernels recorded on disk: none scheduled again)
        kernels = KernelTable(options, store)
        prefetch_vm_kernels(opt, options, store)  # (in parallel: the codegen finds them ready)
        constants: list = []
        names = sorted((gv.name_hint for gv, f in opt.functions.items()
                        if isinstance(f, Function)), key=lambda n: (n != "main", n))
        index = {n: k for k, n in enumerate(names)}
        funcs = []
        loops = bool(PassContext.current().config.get(TAIL_CALL_LOOPS, True))
        for n in names:
            func = opt[n]
            funcs.append(FunctionCompiler(opt, index, kernels, constants, loops).compile(n, func))
        self._exec = Executable(funcs, constants, kernels.kernels)

    def codegen(self) -> None:
        """Kept for TVM's API: ``lower`` already generated the code."""

    def get_exec(self) -> Executable:
        if self._exec is None:
            raise ValueError("VMCompiler.get_exec: call lower() first")
        return self._exec


def compile(mod, target=None, target_host=None, params=None) -> Executable:  # noqa: A001
    """Compile ``mod`` for the Relay VM (``relay.vm.compile``).

    Parameters
    ----------
    mod : IRModule
        The program; ``main`` is the entry, other global functions are compiled too.
    target : str or Target
        ``"llvm"`` (the host CPU); None means llvm.
    params : dict of str to NDArray
        Values bound to ``main``'s parameters of the same name.

    Returns
    -------
    Executable
        Run it with ``tvm.runtime.vm.VirtualMachine(exe, device)``.
    """
    _check_target(target)
    with for_target(target):  # a -mcpu naming another x86 CPU: its code (backend.target_cpu)
        return _compile(mod, target, target_host, params)


def _compile(mod, target, target_host, params) -> Executable:
    """``compile`` of a module whose target was checked (through the executable cache)."""
    from . import exe_cache

    cached = exe_cache.exe_key(mod, params, target)  # (None: not cached, see exe_cache)
    if cached is not None:
        exe = exe_cache.load(*cached)
        if exe is not None:
            return exe
    compiler = VMCompiler()
    if params:
        compiler.set_params(params)
    compiler.lower(mod, target, target_host)
    compiler.codegen()
    exe = compiler.get_exec()
    if cached is not None:
        exe_cache.store(*cached, exe)
    return exe

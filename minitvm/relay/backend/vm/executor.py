"""``relay.create_executor("vm")`` (TVM's ``VMExecutor``): compile with ``relay.vm.compile`` and
run on ``tvm.runtime.vm.VirtualMachine``."""

from __future__ import annotations

from ....ir.expr import GlobalVar
from ....ir.module import IRModule
from ....runtime.vm import VirtualMachine
from ...expr import Constant, Function
from ..executor import Executor
from ..interpreter import Interpreter
from .codegen import VMCodegenError
from .compiler import compile as vm_compile

__all__ = ["VMExecutor"]


class VMExecutor(Executor):
    """Evaluates ``main`` (or a given function) on the Relay VM; results are NDArrays, ADTs
    and closures as ``VirtualMachine.invoke`` returns them."""

    def __init__(self, mod: IRModule | None, device=None, target="llvm"):
        self.mod = mod if mod is not None else IRModule()
        self.device = device
        self.target = target
        self.executable = None
        self.vm = None
        self.factory = None  # the built code (the Executable), as the compiled executors say
        self.build_error = None

    def _make_executor(self, expr=None):
        mod = self.mod
        name = "main"
        if isinstance(expr, GlobalVar):
            name = expr.name_hint
        elif isinstance(expr, Function):
            mod = self.mod.shallow_copy()
            mod["main"] = expr
        elif expr is not None:
            raise ValueError(f"the vm executor evaluates functions, got {type(expr).__name__}")
        if name != "main":
            mod = mod.shallow_copy()
            mod["main"] = mod[name]
        try:
            self.executable = vm_compile(mod, self.target)
        except VMCodegenError as err:
            if "references" not in str(err):
                raise
            # as the other compiled executors do for what their back end lacks: the
            # interpreter evaluates the program (the reason stays in build_error)
            self.build_error = err
            return Interpreter(self.mod, self.device, self.target)._make_executor(expr)
        self.vm = VirtualMachine(self.executable, self.device)
        self.factory = self.executable
        vm = self.vm

        def _vm_wrapper(*args, **kwargs):
            args = [a.data if isinstance(a, Constant) else a for a in args]
            kwargs = {k: v.data if isinstance(v, Constant) else v for k, v in kwargs.items()}
            return vm.run(*args, **kwargs)

        return _vm_wrapper

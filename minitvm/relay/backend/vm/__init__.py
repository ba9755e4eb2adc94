"""tvm.relay.vm (TVM's relay.backend.vm): compile Relay to the Relay VM's bytecode.

``compile(mod, target)`` returns a ``tvm.runtime.vm.Executable``; ``VirtualMachine(exe, dev)``
runs it. Programs with control flow, ADTs, closures and dynamic shapes compile here (the graph
executor takes dataflow programs only)."""

from ....runtime.vm import Executable, VirtualMachine  # noqa: F401
from .compiler import VMCompiler, compile  # noqa: F401,A004
from .executor import VMExecutor  # noqa: F401

__all__ = ["compile", "VMCompiler", "VMExecutor", "Executable", "VirtualMachine"]

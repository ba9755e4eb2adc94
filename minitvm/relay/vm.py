"""tvm.relay.vm: TVM's import path of the Relay VM compiler (``relay.backend.vm``)."""

from .backend.vm import Executable, VirtualMachine, VMCompiler, VMExecutor, compile  # noqa: F401,A004

__all__ = ["compile", "VMCompiler", "VMExecutor", "Executable", "VirtualMachine"]

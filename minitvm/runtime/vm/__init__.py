"""tvm.runtime.vm: the Relay virtual machine's runtime — bytecode, executable, interpreter loop.
Nothing here imports the compiler (``tvm.relay.vm.compile`` makes the executables)."""

from .bytecode import OPCODES, VMFunction  # noqa: F401
from .executable import Executable  # noqa: F401
from .vm import Storage, VirtualMachine, VMClosure  # noqa: F401

__all__ = ["Executable", "VirtualMachine", "VMClosure", "VMFunction", "Storage", "OPCODES"]

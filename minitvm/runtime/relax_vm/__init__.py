"""The Relax VM runtime: executables and the virtual machine that runs them. Imports nothing
of the compiler, so an exported executable loads and runs with the runtime alone."""

from .builtins import ShapeTuple, Storage, VMClosure  # noqa: F401
from .executable import Executable, VMFunction, load_executable  # noqa: F401
from .kernel import NativeKernel, kernel_spec  # noqa: F401
from .vm import ProfileReport, VirtualMachine  # noqa: F401

"""The Relax VM, compiler side: code generation to VM instructions and ``relax.build``. The
executable and the virtual machine that runs it live in ``minitvm.runtime.relax_vm``."""

from .codegen import VMCodeGenError, codegen  # noqa: F401
from .build import build, compile, compile_kernels  # noqa: F401,A004
from ...runtime.relax_vm import Executable, VirtualMachine  # noqa: F401

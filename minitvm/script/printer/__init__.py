"""tvm.script.printer: TVMScript text of Relax functions and expressions, struct info, and the
IRModules that hold them with their PrimFuncs (``mod.show()``)."""

from .config import PrinterConfig
from .relax_printer import script
from . import relax_hooks  # noqa: F401  registers the printing hooks

__all__ = ["PrinterConfig", "script"]

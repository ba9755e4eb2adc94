"""tvm.script.parser: TVMScript text (and Python functions written in it) back into IR.

``from_source(text)`` reads what the printers write: an ``@I.ir_module`` class gives an
IRModule, an ``@R.function`` a ``relax.Function``, a ``@T.prim_func`` a ``tir.PrimFunc``.
The namespaces ``ir``, ``relax`` and ``tir`` are the ``I``, ``R`` and ``T`` scripts use; their
decorators parse a Python function's source (``inspect`` + ``ast``) where it is defined.
Unsupported syntax raises ``ParserError`` (a ValueError) naming the line and column.
"""

from .error import ParserError
from .entry import from_source, parse
from . import ir, relax, tir

__all__ = ["ParserError", "from_source", "parse", "ir", "relax", "tir"]

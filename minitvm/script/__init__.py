"""tvm.script: TVMScript (the ``I`` / ``R`` / ``T`` Python text of IR), above the dialects.

``mod.show()`` prints through ``printer``; ``from_source(text)`` and the decorators of
``tvm.script.ir`` / ``relax`` / ``tir`` (``from tvm.script import relax as R``) read it back.
"""

import sys as _sys

from . import printer, parser
from .parser import ParserError, from_source, parse, ir, relax, tir
from ..ir.dialect import register_text_format as _register_text_format

# ``import tvm.script.relax`` names the parser's namespace modules themselves (the decorators
# are recognized by identity)
for _name, _mod in (("ir", ir), ("relax", relax), ("tir", tir)):
    _sys.modules.setdefault(f"{__name__}.{_name}", _mod)


def _is_tvmscript(text: str) -> bool:
    head = "\n".join(line for line in text.splitlines() if line.strip())[:400]
    return any(k in head for k in ("@I.ir_module", "@R.function", "@T.prim_func"))


_register_text_format("tvmscript", _is_tvmscript, from_source)
ir_module = ir.ir_module  # tvm.script.ir_module (the @I.ir_module decorator)

__all__ = ["printer", "parser", "ParserError", "from_source", "parse", "ir", "relax", "tir",
           "ir_module"]

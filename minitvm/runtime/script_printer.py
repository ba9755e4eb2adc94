"""``tvm.runtime.Scriptable``: the mixin that gives an object ``script()`` (its TVMScript text)
and ``show()`` (print it).

The printers live far above the runtime (``minitvm.script``); ``script()`` reaches them through
the global function ``node.TVMScriptPrinterScript`` that the script package registers, as TVM's
runtime reaches its C++ printer. Classes with a printer of their own (IRModule, Relax and Relay
expressions, PrimFunc) override ``script``; the mixin serves the rest, and user classes."""

from __future__ import annotations

from .registry import get_global_func

__all__ = ["Scriptable"]

_PRINTER = "node.TVMScriptPrinterScript"


class Scriptable:
    """Base class of objects that print as TVMScript (``obj.script()``, ``obj.show()``)."""

    __slots__ = ()

    def script(self, **kwargs) -> str:
        """The TVMScript text of this object; keyword arguments are TVM's printer options
        (``name``, ``show_meta``, ``ir_prefix``, ``tir_prefix``, ``relax_prefix``,
        ``module_alias``, ``indent_spaces``, ``verbose_expr``, ``show_all_struct_info``, ...)."""
        printer = get_global_func(_PRINTER, allow_missing=True)
        if printer is None:
            raise RuntimeError("the TVMScript printer is not loaded (import minitvm.script)")
        return printer(self, kwargs)

    def show(self, style: str | None = None, black_format: bool | None = None,
             **kwargs) -> None:
        """Print ``script(**kwargs)``; ``style`` and ``black_format`` (highlighting and
        reformatting in TVM) are accepted and leave the text as the printer wrote it."""
        print(self.script(**kwargs))

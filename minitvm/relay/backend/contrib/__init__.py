"""External codegens for partitioned functions (``Compiler`` attribute), by compiler name.

``lower_external(func, name)`` turns a function partitioned for an external compiler into a
runtime kernel; each codegen registers under its compiler name (TVM's ``relay.ext.<name>``).
"""

from __future__ import annotations

__all__ = ["register_external_codegen", "lower_external", "external_codegens"]

_CODEGENS: dict[str, object] = {}


def register_external_codegen(compiler: str, fn=None):
    """Register ``fn(func, name) -> runtime.Kernel`` as the codegen of ``compiler``."""

    def _register(f):
        _CODEGENS[compiler] = f
        return f

    return _register(fn) if fn is not None else _register


def external_codegens() -> list[str]:
    return sorted(_CODEGENS)


def lower_external(func, name: str):
    """The kernel of a function partitioned for an external compiler."""
    compiler = str(func.get_attr("Compiler"))
    if compiler == "dnnl" and compiler not in _CODEGENS:
        from . import dnnl_kernel  # noqa: F401  registers itself
    fn = _CODEGENS.get(compiler)
    if fn is None:
        raise ValueError(f"no external codegen is registered for Compiler={compiler!r} "
                         f"(function {name}); known: {external_codegens()}")
    return fn(func, name)

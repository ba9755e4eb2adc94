"""The registry of BYOC pattern tables: ``register_pattern_table`` / ``get_pattern_table``."""

from __future__ import annotations

__all__ = ["register_pattern_table", "get_pattern_table"]

_PATTERN_TABLES: dict[str, object] = {}


def register_pattern_table(compiler: str, table=None):
    """Register the pattern table of ``compiler``: a function returning a list of
    ``(name, pattern[, check])``. Usable as a decorator."""

    def _register(fn):
        if not callable(fn):
            raise TypeError(f"register_pattern_table({compiler!r}): expected a function "
                            f"returning the table, got {type(fn).__name__}")
        _PATTERN_TABLES[compiler] = fn
        return fn

    return _register(table) if table is not None else _register


def get_pattern_table(compiler: str):
    """The pattern table registered for ``compiler`` (None when there is none)."""
    fn = _PATTERN_TABLES.get(compiler)
    if fn is None and compiler == "dnnl":
        from . import dnnl  # noqa: F401  registers itself on import

        fn = _PATTERN_TABLES.get(compiler)
    return None if fn is None else fn()

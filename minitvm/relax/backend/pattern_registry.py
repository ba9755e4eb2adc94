"""The table of named fusion patterns that library dispatch uses (TVM's
``relax.backend.pattern_registry``): a library module registers ``"<codegen>.<what>"``
patterns on import; passes fetch them by name or prefix for ``FuseOpsByPattern``. Patterns
registered later take precedence over earlier ones in ``get_patterns_with_prefix``."""

from __future__ import annotations

from ..transform.fuse_ops_by_pattern import FusionPattern, _as_fusion_pattern

__all__ = ["register_patterns", "get_patterns_with_prefix", "get_pattern",
           "unregister_patterns"]

_TABLE: dict[str, FusionPattern] = {}


def register_patterns(patterns) -> None:
    """Register each of ``patterns`` (``FusionPattern`` or a tuple ``(name, pattern[,
    annotation_patterns[, check]])``) under its name; a name registered again is replaced
    and moves to the front of the precedence order."""
    for p in patterns:
        fp = _as_fusion_pattern(p)
        _TABLE.pop(fp.name, None)
        _TABLE[fp.name] = fp


def unregister_patterns(names) -> None:
    """Remove the patterns named ``names`` (unknown names are ignored)."""
    for name in names:
        _TABLE.pop(name, None)


def get_patterns_with_prefix(prefix: str) -> list[FusionPattern]:
    """The patterns whose name starts with ``prefix``, the last registered first."""
    return [fp for name, fp in reversed(_TABLE.items()) if name.startswith(prefix)]


def get_pattern(name: str) -> FusionPattern | None:
    """The pattern registered as ``name``, or None."""
    return _TABLE.get(name)

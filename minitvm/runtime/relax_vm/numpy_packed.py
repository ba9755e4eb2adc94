"""Packed functions a Relax VM program may call that compute tensor values in numpy, not in
native code (the Relax counterpart of a Relay kernel that falls back to numpy).

Whoever registers such a function names it here with the reason (``mark_numpy_packed``), so
that ``Executable.numpy_calls`` can list the ones a built program calls: a strict check (the
import-path sweep, a test) then refuses a model that would run part of its work in numpy.
VM builtins that only move shapes, allocate or check struct info are not marked."""

from __future__ import annotations

__all__ = ["mark_numpy_packed", "numpy_reason"]

#: packed function name -> why it runs in numpy
_NUMPY_PACKED: dict[str, str] = {}


def mark_numpy_packed(name: str, reason: str) -> None:
    """Record that packed function ``name`` computes in numpy, and why (non-empty)."""
    if not reason:
        raise ValueError(f"mark_numpy_packed({name!r}): give the reason it runs in numpy")
    _NUMPY_PACKED[name] = reason


def numpy_reason(name: str) -> str | None:
    """Why packed function ``name`` runs in numpy; None when it is not marked."""
    return _NUMPY_PACKED.get(name)

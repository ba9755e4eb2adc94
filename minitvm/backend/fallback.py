"""Reporting a kernel that native code generation could not take and that runs in numpy instead.

Such a kernel still gives correct results, but it is far slower than a native one, so it is
never silent: ``report_fallback`` warns (``NativeFallbackWarning``), or raises
(``NativeFallbackError``) in a strict build (``relay.backend.strict_native`` or
``MINITVM_STRICT_NATIVE=1``). Intended numpy kernels (native lowering switched off, dynamic
shapes compiled per call, external codegens) are not reported.
"""

from __future__ import annotations

import warnings

__all__ = ["NativeFallbackError", "NativeFallbackWarning", "report_fallback"]


class NativeFallbackWarning(RuntimeWarning):
    """A kernel fell back to numpy because native code generation failed for it."""


class NativeFallbackError(RuntimeError):
    """A strict build refused to fall back to numpy for a kernel (not a ``ValueError``, so the
    handlers that catch lowering errors to fall back do not swallow it)."""


def fallback_message(name: str, ops: list[str], error: str) -> str:
    """One line naming the kernel, its ops and the code generator's error."""
    first = (error.strip().splitlines() or ["(no message)"])[0]
    return (f"kernel {name} ({', '.join(ops) or 'no ops'}) runs in numpy: native lowering "
            f"failed: {first}")


def report_fallback(name: str, ops: list[str], error: str, strict: bool) -> None:
    """Warn that kernel ``name`` (calling ``ops``) fell back to numpy; raise when ``strict``."""
    msg = fallback_message(name, ops, error)
    if strict:
        raise NativeFallbackError(msg + " (strict build: relay.backend.strict_native / "
                                  "MINITVM_STRICT_NATIVE)")
    warnings.warn(msg, NativeFallbackWarning, stacklevel=3)

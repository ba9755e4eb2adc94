"""``torch.compile(model, backend="minitvm")``: the TorchDynamo backend.

Dynamo hands each FX graph to :func:`minitvm_backend`, which compiles it with minitvm (ATen FX
graph -> Relay -> ``relay.build``; the compiler is supplied by ``minitvm.relay.frontend``,
which registers it here on import) and falls back to eager for graphs it cannot compile (an
unsupported op, a training graph, ...), with one warning per distinct reason. The name
"minitvm" is found through the package's ``torch_dynamo_backends`` entry point, or registered by
:func:`register`.
"""

from __future__ import annotations

import collections
import sys
import threading
import warnings

__all__ = ["minitvm_backend", "register", "set_compiler", "fallback_reasons"]

# the reasons already warned about, least recently seen first; bounded like ``fallback_reasons``
# (a reason pushed out by FALLBACK_REASONS_KEPT newer ones warns again when it recurs)
_WARNED: collections.OrderedDict[str, None] = collections.OrderedDict()
_LOCK = threading.Lock()
_COMPILER = None  # compile_graph(gm, example_inputs, opt_level, fallback), set by the relay layer
# How many reasons ``fallback_reasons`` keeps: a process compiling graphs for hours (a serving
# loop, a fuzzer) must not grow by one string per graph that ran eagerly.
FALLBACK_REASONS_KEPT = 1000


class _RecentReasons(collections.deque):
    """A deque of the last ``maxlen`` reasons that compares equal to a list (or tuple) of the
    same items, as the list it replaces did: ``fallback_reasons == []``."""

    def __eq__(self, other):
        if isinstance(other, (list, tuple)):
            return list(self) == list(other)
        return super().__eq__(other)

    def __ne__(self, other):
        return not self == other

    __hash__ = None


# the reasons graphs ran eagerly, oldest first: the last FALLBACK_REASONS_KEPT (for tests/users)
fallback_reasons: _RecentReasons = _RecentReasons(maxlen=FALLBACK_REASONS_KEPT)


def set_compiler(fn) -> None:
    """Install the graph compiler (``minitvm.relay.frontend`` does this on import)."""
    global _COMPILER
    _COMPILER = fn


def _fallback(gm, reason: str):
    fallback_reasons.append(reason)
    with _LOCK:
        first = reason not in _WARNED
        _WARNED[reason] = None
        _WARNED.move_to_end(reason)
        if len(_WARNED) > FALLBACK_REASONS_KEPT:
            _WARNED.popitem(last=False)
    if first:
        warnings.warn(f"minitvm torch.compile backend: running this graph eagerly: {reason}",
                      RuntimeWarning, stacklevel=3)
    return gm.forward


def minitvm_backend(gm, example_inputs, opt_level: int = 3):
    """The Dynamo backend: a compiled callable for ``gm``, or ``gm.forward`` on failure."""
    import minitvm  # noqa: F401  (importing the package installs the compiler)

    if _COMPILER is None:
        return _fallback(gm, "minitvm's Relay frontend is not loaded")
    try:
        return _COMPILER(gm, example_inputs, opt_level, _fallback)
    except Exception as e:  # noqa: BLE001 - any failure means eager, said once per reason
        text = str(e).splitlines()[0] if str(e) else ""
        return _fallback(gm, f"{type(e).__name__}: {text}")


def register() -> bool:
    """Register "minitvm" with torch._dynamo (the entry point also makes it findable)."""
    try:
        from torch._dynamo import list_backends, register_backend
    except ImportError:
        return False
    if "minitvm" not in list_backends(exclude_tags=()):
        register_backend(name="minitvm")(minitvm_backend)
    return True


if "torch" in sys.modules:  # torch is already loaded: registering costs nothing extra
    register()

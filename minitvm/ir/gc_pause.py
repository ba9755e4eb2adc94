"""The compiler's name for ``runtime.gc_pause``: pausing Python's cyclic collector around work
that builds or reads big IR (the mechanism lives in the runtime, the lowest layer, so that the
VMs can pause it too)."""

from ..runtime.gc_pause import frozen, gc_paused, paused

__all__ = ["frozen", "gc_paused", "paused"]

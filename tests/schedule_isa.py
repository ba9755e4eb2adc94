"""Schedules made as on another vector ISA: ``force_isa`` makes every schedule size its tiles
and pick its switches as on AVX2 or AVX-512 while the code generator keeps the host's
features, so a test checks both kinds of schedule on any host (AVX-512-sized vectors run on an
AVX2 host as two halves)."""

from __future__ import annotations

import sys


def force_isa(mp, isa: str, cpu: str | None = None) -> None:
    """With ``mp`` (a ``pytest.MonkeyPatch``): every schedule module's ``vector_isa`` says
    ``isa`` and per-host settings (``common.host_switch``) read ``cpu``'s entry, or ``isa``'s
    where ``cpu`` has none; kernels built before are forgotten (their cache keys cannot see
    the patch)."""
    from minitvm.backend import kernel_cache
    from minitvm.schedule import common, gemm_tb

    mp.setattr(common, "host_key", lambda switch: cpu if cpu in switch else isa)
    host = common.vector_isa
    for mod in list(sys.modules.values()):
        if getattr(mod, "__name__", "").startswith("minitvm.") and \
                getattr(mod, "vector_isa", None) is host:
            mp.setattr(mod, "vector_isa", lambda: isa)
    mp.setattr(gemm_tb, "vector_isa", lambda: isa)
    kernel_cache.clear_cache()

"""glibc's malloc kept from handing kernel scratch back to the OS after every call.

Native kernels ``malloc`` the temporaries their schedule does not take from the workspace (those
over the code generator's stack limit: a direct conv's per-band phased rows, any temporary of a
kernel lowered without a workspace) and ``free`` them before returning. glibc serves a block above its mmap threshold (128 KB at start) with ``mmap``
and unmaps it on ``free``; the first such free raises the threshold to the block's size and the
trim threshold to twice that, after which the blocks come from the heap, but freeing them leaves
more than the trim threshold free at the heap's top, which is given back (``sbrk``). Either way
the next call faults every page in again: ResNet's 64->64 3x3 conv at 56x56 (one thread) took
785 page faults and 0.83 ms of system time a call, 1.5 ms instead of 0.67. Whether it happened
depended on what the process had freed before (a fresh build's LLVM work, or reading an exported
archive, raised the thresholds high enough; a build served from the disk cache did not), so the
same kernel ran 2.3x slower in one process than in another. (Those numbers were a Winograd
conv's per-band scratch, 0.2-1 MB each; it now comes from the workspace, ``conv_winograd``'s
``SCRATCH_SLOTS``, and Winograd convs no longer need this: 128->128 at 28x28 untuned took 530
page faults and 1.12 ms a call with the scratch malloc'd, none and 0.58 ms from the workspace.)

``apply()`` (called once when the JIT starts) fixes both thresholds at the top of glibc's own
dynamic range: blocks up to ``MMAP_THRESHOLD`` come from the heap, and up to ``TRIM_THRESHOLD`` of
free memory stays at its top. A process keeps up to that much more memory mapped in exchange.
Nothing is changed where the user tuned malloc already (``MALLOC_MMAP_THRESHOLD_``,
``MALLOC_TRIM_THRESHOLD_``, or ``malloc.`` tunables in ``GLIBC_TUNABLES``), with
``MINITVM_NO_MALLOC_TUNING=1``, or on a C library other than glibc.
"""

from __future__ import annotations

import ctypes
import os
import threading

# glibc's mallopt parameters (malloc.h)
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
# glibc's ceiling for its dynamic mmap threshold on 64-bit (DEFAULT_MMAP_THRESHOLD_MAX), and the
# trim threshold its dynamic rule pairs with it
MMAP_THRESHOLD = 32 << 20
TRIM_THRESHOLD = 2 * MMAP_THRESHOLD
ENV_OFF = "MINITVM_NO_MALLOC_TUNING"
USER_ENV = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_")

_LOCK = threading.Lock()
_STATE: list[str] = []  # the outcome of the one apply(), once it ran


def _skip_reason() -> str | None:
    """Why malloc is left as it is, or None to tune it."""
    if os.environ.get(ENV_OFF, "").strip() not in ("", "0"):
        return f"{ENV_OFF} is set"
    if any(os.environ.get(k) for k in USER_ENV) or \
            "malloc." in os.environ.get("GLIBC_TUNABLES", ""):
        return "the user tuned malloc in the environment"
    return None


def _glibc():
    """The process's C library when it is glibc (has ``mallopt``), else None."""
    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version  # noqa: B018 - present in glibc only
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return None
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return mallopt


def apply() -> str:
    """Set the thresholds once per process; returns what was done: ``"tuned"`` or
    ``"skipped: <why>"`` (the same answer on later calls)."""
    with _LOCK:
        if _STATE:
            return _STATE[0]
        why = _skip_reason()
        mallopt = _glibc() if why is None else None
        if why is None and mallopt is None:
            why = "the C library is not glibc"
        if why is None:
            ok = mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1
            ok = mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD) == 1 and ok
            why = None if ok else "mallopt refused the thresholds"
        _STATE.append("tuned" if why is None else f"skipped: {why}")
        return _STATE[0]


def state() -> str | None:
    """The outcome of ``apply()`` in this process, or None before it ran."""
    with _LOCK:
        return _STATE[0] if _STATE else None

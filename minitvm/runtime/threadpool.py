"""The thread pool behind ``parallel`` loops: libgomp's, found at run time.

Compiled kernels call ``GOMP_parallel`` with the thread count passed at each call. The count is
``TVM_NUM_THREADS`` (or ``OMP_NUM_THREADS``) when set, else the number of usable CPUs; change it
with ``set_num_threads``. When libgomp cannot be loaded (or ``MINITVM_NO_GOMP`` is set), parallel
loops compile as serial loops. Unless the user set ``OMP_WAIT_POLICY`` or ``GOMP_SPINCOUNT``,
idle pool threads spin only briefly (``GOMP_SPINCOUNT=10000``) before sleeping: libgomp's default
long spin makes kernels several times slower when the machine is shared with other processes.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os

_GOMP = None
_LOADED = False
_NUM_THREADS: int | None = None
GOMP_SYMBOLS = ("GOMP_parallel", "omp_get_thread_num", "omp_get_num_threads")


def _default_threads() -> int:
    for key in ("TVM_NUM_THREADS", "OMP_NUM_THREADS"):
        val = os.environ.get(key, "").split(",")[0].strip()
        if val.isdigit() and int(val) > 0:
            return int(val)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - non-Linux
        return max(1, os.cpu_count() or 1)


def get_num_threads() -> int:
    """Threads used by parallel loops of compiled kernels."""
    global _NUM_THREADS
    if _NUM_THREADS is None:
        _NUM_THREADS = _default_threads()
    return _NUM_THREADS


def set_num_threads(n: int) -> None:
    """Set the number of threads for later kernel calls (1 runs parallel loops serially)."""
    global _NUM_THREADS
    if int(n) < 1:
        raise ValueError("the number of threads must be at least 1")
    _NUM_THREADS = int(n)


def gomp_library():
    """The loaded libgomp (``ctypes.CDLL``) or None when it is not available."""
    global _GOMP, _LOADED
    if not _LOADED:
        _LOADED = True
        if os.environ.get("MINITVM_NO_GOMP"):
            return None
        if "OMP_WAIT_POLICY" not in os.environ and "GOMP_SPINCOUNT" not in os.environ:
            os.environ["GOMP_SPINCOUNT"] = "10000"  # read by libgomp when it is first loaded
        for name in (ctypes.util.find_library("gomp"), "libgomp.so.1", "libgomp.dylib"):
            if not name:
                continue
            try:
                _GOMP = ctypes.CDLL(name, mode=ctypes.RTLD_GLOBAL)
                break
            except OSError:
                continue
    return _GOMP


def gomp_symbol_addresses() -> dict[str, int]:
    """Addresses of the libgomp entry points kernels call (empty without libgomp)."""
    lib = gomp_library()
    if lib is None:
        return {}
    return {s: ctypes.cast(getattr(lib, s), ctypes.c_void_p).value for s in GOMP_SYMBOLS}

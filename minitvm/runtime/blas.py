"""The BLAS already in the process (numpy's OpenBLAS), callable from generated kernels.

Like TVM's ``-libs=cblas``: kernels call ``mtvm_sgemm(transa, transb, m, n, k, A, offset_a, lda,
B, offset_b, ldb, C, offset_c, ldc, beta)`` (all integers i64, offsets in elements), a small LLVM
shim compiled here that offsets the pointers and calls the library's row-major ``cblas_sgemm``.
Set ``MINITVM_NO_BLAS=1`` to lower GEMMs to generated code only. Whether a build may use it is
a lowering option (``relay.backend.use_blas``), not state here: this module only finds the
library once per process.
"""

from __future__ import annotations

import ctypes
import glob
import os
import threading

from . import jit

SHIM_SYMBOL = "mtvm_sgemm"
# the JIT's own lock: ``available`` runs inside the JIT when a kernel calling the shim loads
# first (``jit.provide_symbol``), so one lock, never two taken in either order
_LOCK = jit._LOCK
_STATE: dict = {}

# (library glob relative to a package dir, cblas symbol, set-threads symbol, integer bits);
# the get-threads symbol is the set-threads one with ``set`` replaced by ``get``
_CANDIDATES = (
    ("numpy", "../numpy.libs/libscipy_openblas64_*.so*", "scipy_cblas_sgemm64_",
     "scipy_openblas_set_num_threads64_", 64),
    ("numpy", "../numpy.libs/libopenblas64_*.so*", "cblas_sgemm64_",
     "openblas_set_num_threads64_", 64),
    ("scipy", "../scipy.libs/libscipy_openblas*.so*", "scipy_cblas_sgemm",
     "scipy_openblas_set_num_threads", 32),
    ("numpy", "../numpy.libs/libopenblas*.so*", "cblas_sgemm", "openblas_set_num_threads", 32),
)


def _find():
    import importlib.util

    if os.environ.get("MINITVM_NO_BLAS"):
        return None
    for pkg, pattern, sym, threads_sym, bits in _CANDIDATES:
        spec = importlib.util.find_spec(pkg)
        if spec is None or not spec.submodule_search_locations:
            continue
        base = list(spec.submodule_search_locations)[0]
        for path in sorted(glob.glob(os.path.join(base, pattern))):
            try:
                lib = ctypes.CDLL(path)
                fn = getattr(lib, sym)
            except (OSError, AttributeError):
                continue
            setter = getattr(lib, threads_sym, None)
            getter = getattr(lib, threads_sym.replace("_set_", "_get_"), None)
            if getter is not None:
                getter.restype = ctypes.c_int
            return {"path": path, "lib": lib, "symbol": sym, "address":
                    ctypes.cast(fn, ctypes.c_void_p).value, "set_threads": setter,
                    "get_threads": getter, "bits": bits}
    return None


def _shim_ir(sym: str, bits: int) -> str:
    it = f"i{bits}"

    def conv(v):
        return f"%{v}" if bits == 64 else f"%{v}.t"

    truncs = "" if bits == 64 else "".join(
        f"  %{v}.t = trunc i64 %{v} to i32\n" for v in ("m", "n", "k", "lda", "ldb", "ldc"))
    return f"""
declare void @{sym}(i32, i32, i32, {it}, {it}, {it}, float, ptr, {it}, ptr, {it}, float, ptr, {it})

define i32 @{SHIM_SYMBOL}(i64 %ta, i64 %tb, i64 %m, i64 %n, i64 %k, ptr %a, i64 %oa, i64 %lda,
                          ptr %b, i64 %ob, i64 %ldb, ptr %c, i64 %oc, i64 %ldc, float %beta) {{
entry:
  %ta32 = trunc i64 %ta to i32
  %tb32 = trunc i64 %tb to i32
{truncs}  %pa = getelementptr float, ptr %a, i64 %oa
  %pb = getelementptr float, ptr %b, i64 %ob
  %pc = getelementptr float, ptr %c, i64 %oc
  call void @{sym}(i32 101, i32 %ta32, i32 %tb32, {it} {conv('m')}, {it} {conv('n')},
                   {it} {conv('k')}, float 1.0, ptr %pa, {it} {conv('lda')}, ptr %pb,
                   {it} {conv('ldb')}, float %beta, ptr %pc, {it} {conv('ldc')})
  ret i32 0
}}
"""


def available() -> bool:
    """Whether a BLAS was found and the shim is registered with LLVM (idempotent)."""
    with _LOCK:
        if "ok" in _STATE:
            return _STATE["ok"]
        info = _find()
        ok = False
        if info is not None:
            try:
                import llvmlite.binding as llvm

                jit.init()
                llvm.add_symbol(info["symbol"], info["address"])
                shim = jit.compile_ir(_shim_ir(info["symbol"], info["bits"]), SHIM_SYMBOL)
                llvm.add_symbol(SHIM_SYMBOL, shim.address)
                _STATE["shim"] = shim
                _STATE["info"] = info
                ok = True
            except Exception:  # pragma: no cover - a broken BLAS install: generated code only
                ok = False
        _STATE["ok"] = ok
        return ok


def get_num_threads() -> int | None:
    """Threads OpenBLAS currently uses (None when unknown)."""
    if not available():
        return None
    getter = _STATE["info"].get("get_threads")
    return int(getter()) if getter is not None else _STATE.get("threads")


def set_num_threads(n: int) -> None:
    """Threads OpenBLAS uses inside GEMM calls (process-wide: numpy's BLAS too)."""
    if not available():
        return
    setter = _STATE["info"]["set_threads"]
    if setter is not None:
        setter(ctypes.c_int(int(n)))
        _STATE["threads"] = n


class single_threaded:
    """``with single_threaded():`` BLAS on one thread inside, the caller's setting restored after.

    Kernels split BLAS GEMMs over minitvm's own thread pool, so BLAS itself must not fork: two
    pool threads each starting OpenBLAS's threads would oversubscribe the CPUs. Nesting and use
    from several threads at once are safe: the setting is saved by the first section to enter
    and restored when the last one leaves.
    """

    __slots__ = ("prev",)
    _lock = threading.Lock()
    _depth = 0
    _saved: int | None = None

    def __enter__(self):
        cls = single_threaded
        with cls._lock:
            if cls._depth == 0:
                cls._saved = get_num_threads()
                if cls._saved is not None and cls._saved != 1:
                    set_num_threads(1)
            cls._depth += 1
            self.prev = cls._saved
        return self

    def __exit__(self, *exc):
        cls = single_threaded
        with cls._lock:
            cls._depth -= 1
            if cls._depth == 0 and cls._saved is not None and cls._saved != 1:
                set_num_threads(cls._saved)
        return False


jit.provide_symbol(SHIM_SYMBOL, available)  # (a kernel loaded before anything asked for BLAS)


def describe() -> str:
    if not available():
        return "none (generated GEMM code)"
    info = _STATE["info"]
    return f"{info['symbol']} from {os.path.basename(info['path'])}"

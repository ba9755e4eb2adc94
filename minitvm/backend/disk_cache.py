"""The on-disk kernel cache: compiled object code that outlives the process.

A warm ``relay.build`` of a model seen before loads each kernel's machine code from here instead
of generating LLVM IR and running LLVM's optimizer and code generator again.

Where: ``$MINITVM_CACHE_DIR``, else ``$XDG_CACHE_HOME/minitvm``, else ``~/.cache/minitvm``.
Whole builds (``relay.build``'s result: graph, weights and every kernel's object code, keyed by
the input program, parameters, options and compiler sources; see
``relay.backend.graph_build``) live in its ``builds/`` folder, one file each, behind a
CRC-32 of the payload. Kernel entries live in its ``kernels/`` folder, one file per kernel, named by a hash of the kernel's
source text, the code generator's version and sources, and the host CPU / LLVM it was compiled
for (see ``codegen.build.compile_prim_func``). Each file holds the object code and the LLVM IR
(kept for exporting libraries) behind a checksum: a corrupt or truncated entry is ignored,
removed, and rebuilt. Writes go to a temporary file renamed into place, so concurrent processes
never see a partial entry. The folder is kept under a size limit (``$MINITVM_CACHE_MAX_BYTES``,
default 512 MiB) by removing the least recently used entries (by file mtime; a hit touches it).

Off switches: ``MINITVM_DISABLE_DISK_CACHE=1`` or
``PassContext(config={"relay.backend.use_disk_cache": False})``. ``minitvm cache info`` and
``minitvm cache clear`` inspect and empty it.
"""

from __future__ import annotations

import hashlib
import mmap
import os
import struct
import threading
import time
import uuid
import warnings
import zlib
from pathlib import Path

from ..transform.config import config_default, register_pass_config
from ..transform.context import PassContext

CONFIG_KEY = "relay.backend.use_disk_cache"
ENV_DIR = "MINITVM_CACHE_DIR"
ENV_DISABLE = "MINITVM_DISABLE_DISK_CACHE"
ENV_MAX_BYTES = "MINITVM_CACHE_MAX_BYTES"
DEFAULT_MAX_BYTES = 512 << 20
SUFFIX = ".mtk"
_MAGIC = b"MTVMKC01"
_HEADER = struct.Struct("<QQ32s")  # object length, compressed IR length, sha256 of both
BUILD_SUFFIX = ".mtb"
_BUILD_MAGIC = b"MTVMBD01"
_BUILD_HEADER = struct.Struct("<QI")  # payload length, CRC-32 of the payload
_BUILD_HEAD = 64  # magic + header, padded: the payload starts 64-byte aligned
STALE_TMP_SECONDS = 3600
# a store rescans the directory after this many of its own writes (else it counts them)
RESCAN_WRITES = 256

register_pass_config(CONFIG_KEY, bool, True,
                     "Keep compiled kernels in the on-disk cache ($MINITVM_CACHE_DIR, else "
                     "~/.cache/minitvm) and load them from there on later builds.")


def default_dir() -> Path:
    """The cache directory the environment names (it need not exist yet)."""
    root = os.environ.get(ENV_DIR)
    if root:
        return Path(root).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "minitvm"


def _env_max_bytes() -> int:
    text = os.environ.get(ENV_MAX_BYTES)
    if not text:
        return DEFAULT_MAX_BYTES
    try:
        return max(0, int(float(text)))
    except ValueError:
        raise ValueError(f"{ENV_MAX_BYTES}={text!r} is not a number of bytes") from None


def disabled_by_env() -> bool:
    return os.environ.get(ENV_DISABLE, "").strip().lower() not in ("", "0", "false", "no", "off")


class DiskCache:
    """Kernel object code in ``root/kernels``: ``get`` / ``put`` by key, LRU size limit."""

    def __init__(self, root: str | os.PathLike, max_bytes: int = DEFAULT_MAX_BYTES):
        self.root = Path(root)
        self.dir = self.root / "kernels"
        self.max_bytes = int(max_bytes)
        self.stats = {"hits": 0, "misses": 0, "writes": 0, "corrupt": 0, "evicted": 0,
                      "build_hits": 0, "build_misses": 0, "build_writes": 0}
        self._warned = False
        # bytes in the cache as of the last directory scan plus this process's writes since:
        # listing the directory on every store made a cold build spend seconds in stat calls
        self._approx_bytes: int | None = None
        self._writes_since_scan = 0

    def _path(self, key: str) -> Path:
        return self.dir / (hashlib.sha256(key.encode()).hexdigest()[:40] + SUFFIX)

    # ------------------------------------------------------------------ entries
    def get(self, key: str) -> tuple[bytes, str] | None:
        """(object code, LLVM IR) stored under ``key``, or None (absent or corrupt)."""
        path = self._path(key)
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            self.stats["misses"] += 1
            return None
        entry = _decode(data)
        if entry is None:
            self.stats["corrupt"] += 1
            self.stats["misses"] += 1
            _unlink(path)
            return None
        try:
            os.utime(path)  # least recently used is judged by mtime
        except OSError:
            pass
        self.stats["hits"] += 1
        return entry

    def put(self, key: str, obj: bytes, ir_text: str) -> None:
        """Store an entry atomically (temporary file + rename); never raises for I/O errors."""
        path = self._path(key)
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f"{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
            data = _encode(obj, ir_text)
            with open(tmp, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
            self.stats["writes"] += 1
        except OSError as err:
            _unlink(locals().get("tmp"))
            if not self._warned:
                self._warned = True
                warnings.warn(f"minitvm: cannot write the kernel cache in {self.dir}: {err}; "
                              f"set {ENV_DIR} or {ENV_DISABLE}=1", RuntimeWarning, stacklevel=2)
            return
        self._writes_since_scan += 1
        if self._approx_bytes is None or self._writes_since_scan >= RESCAN_WRITES:
            self.evict()  # rescans: other processes may have written meanwhile
        else:
            self._approx_bytes += len(data)
            if self._approx_bytes > self.max_bytes:
                self.evict()

    # ------------------------------------------------------------------ whole builds
    def _build_path(self, key: str) -> Path:
        return self.root / "builds" / (hashlib.sha256(key.encode()).hexdigest()[:40] +
                                       BUILD_SUFFIX)

    def get_build(self, key: str) -> memoryview | None:
        """The payload of a whole build stored under ``key`` (writable, 64-byte aligned), or
        None (absent or corrupt). The file is mapped copy-on-write, not read: its pages come
        from the OS's file cache as they are touched (the checksum touches each once), and a
        write to the weights stays private to this process. (Reading ResNet-50's 100 MB into
        fresh memory took 0.19 s of a 0.4 s warm build.)"""
        self._wait_for(key)  # (a write of this key still in progress)
        path = self._build_path(key)
        try:
            with open(path, "rb") as f:
                size = os.fstat(f.fileno()).st_size
                # (the mapping outlives the file object; the payload's views keep it alive;
                # a file too short to hold a header is corrupt, and mmap refuses an empty one)
                view = memoryview(mmap.mmap(f.fileno(), size, access=mmap.ACCESS_COPY)) \
                    if size >= _BUILD_HEAD else memoryview(b"")
        except OSError:
            self.stats["build_misses"] += 1
            return None
        ok = len(view) >= _BUILD_HEAD and view[:len(_BUILD_MAGIC)] == _BUILD_MAGIC
        if ok:
            n, crc = _BUILD_HEADER.unpack_from(view, len(_BUILD_MAGIC))
            payload = view[_BUILD_HEAD:]
            ok = len(payload) == n and zlib.crc32(payload) == crc
        if not ok:
            self.stats["corrupt"] += 1
            self.stats["build_misses"] += 1
            _unlink(path)
            return None
        try:
            os.utime(path)
        except OSError:
            pass
        self.stats["build_hits"] += 1
        return payload

    def put_build(self, key: str, chunks, wait: bool = True, trim: bool = True) -> None:
        """Store a whole build's payload (bytes-like ``chunks``, written back to back)
        atomically; never raises for I/O errors. ``trim=False`` for a small entry (a kernel's
        record): written at once, the size limit checked against a running count, as ``put``
        does, instead of rescanning the folder after the write. ``wait=False`` writes on a thread (checksum
        and file writes release the GIL): ``chunks`` must not change until it is done, which
        ``get_build`` of the same key, ``flush`` and the interpreter's exit wait for; there
        ``chunks`` may also be a function that makes them (None: nothing to write), called on
        the thread."""
        if not trim:  # (a small entry: written here)
            self._write_build_file(key, chunks() if callable(chunks) else chunks, trim=False)
            return
        if wait:
            self._write_build(key, chunks)
            return
        t = threading.Thread(target=self._write_build, args=(key, chunks),
                             name="minitvm-build-cache-write")
        with _WRITERS_LOCK:
            _WRITERS[(id(self), key)] = t
        t.start()

    def flush(self) -> None:
        """Wait for this cache's writes in progress (``put_build(wait=False)``)."""
        with _WRITERS_LOCK:
            pending = [t for (owner, _), t in _WRITERS.items() if owner == id(self)]
        for t in pending:
            t.join()

    def _wait_for(self, key: str) -> None:
        with _WRITERS_LOCK:
            t = _WRITERS.get((id(self), key))
        if t is not None:
            t.join()

    def _write_build(self, key: str, chunks) -> None:
        try:
            if callable(chunks):
                chunks = chunks()
            if chunks is not None:
                self._write_build_file(key, chunks)
        finally:
            with _WRITERS_LOCK:
                if _WRITERS.get((id(self), key)) is threading.current_thread():
                    del _WRITERS[(id(self), key)]

    def _write_build_file(self, key: str, chunks, trim: bool = True) -> None:
        path = self._build_path(key)
        tmp = None
        n, crc = 0, 0
        for c in chunks:
            n += memoryview(c).nbytes
            crc = zlib.crc32(c, crc)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f"{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
            with open(tmp, "wb") as f:
                head = _BUILD_MAGIC + _BUILD_HEADER.pack(n, crc)
                f.write(head + bytes(_BUILD_HEAD - len(head)))
                for c in chunks:
                    f.write(c)
            os.replace(tmp, path)
            self.stats["build_writes"] += 1
        except OSError as err:
            _unlink(tmp)
            if not self._warned:
                self._warned = True
                warnings.warn(f"minitvm: cannot write the build cache in {path.parent}: {err}; "
                              f"set {ENV_DIR} or {ENV_DISABLE}=1", RuntimeWarning, stacklevel=2)
            return
        if trim or self._approx_bytes is None:
            self.evict()  # a build entry is large (it holds the weights): rescan and trim now
        else:
            self._approx_bytes += _BUILD_HEAD + n
            if self._approx_bytes > self.max_bytes:
                self.evict()

    # ------------------------------------------------------------------ maintenance
    def _files(self) -> list[tuple[float, int, Path]]:
        """(mtime, size, path) of every entry, stale temporaries removed on the way."""
        out = []
        now = time.time()
        builds = self.root / "builds"
        for folder, pattern in ((self.dir, "*" + SUFFIX), (self.dir, "*.tmp"),
                                (builds, "*" + BUILD_SUFFIX), (builds, "*.tmp"),
                                (self.root, "*.o")):  # *.o: runtime.jit's IR-keyed objects
            if not folder.is_dir():
                continue
            for p in folder.glob(pattern):
                try:
                    st = p.stat()
                except OSError:
                    continue
                if p.suffix == ".tmp":
                    if now - st.st_mtime > STALE_TMP_SECONDS:
                        _unlink(p)
                    continue
                out.append((st.st_mtime, st.st_size, p))
        return out

    def evict(self) -> int:
        """Remove least recently used entries until the cache fits ``max_bytes``; the count."""
        files = self._files()
        total = sum(size for _, size, _ in files)
        self._writes_since_scan = 0
        self._approx_bytes = total
        if total <= self.max_bytes:
            return 0
        removed = 0
        for _, size, p in sorted(files, key=lambda x: x[0]):
            if total <= self.max_bytes:
                break
            if _unlink(p):
                removed += 1
            total -= size
        self.stats["evicted"] += removed
        self._approx_bytes = total
        return removed

    def info(self) -> dict:
        """Location, entry count, bytes used, the limit and this process's counters."""
        self.flush()
        files = self._files()
        return {"path": str(self.root), "entries": len(files),
                "bytes": sum(size for _, size, _ in files), "max_bytes": self.max_bytes,
                **self.stats}

    def clear(self) -> int:
        """Remove every entry (and temporary file); return how many entries were removed."""
        self.flush()
        removed = sum(1 for _, _, p in self._files() if _unlink(p))
        for folder in (self.dir, self.root / "builds"):
            if folder.is_dir():
                for p in folder.glob("*.tmp"):
                    _unlink(p)
        return removed


def _encode(obj: bytes, ir_text: str) -> bytes:
    irz = zlib.compress(ir_text.encode(), 1)
    digest = hashlib.sha256(obj + irz).digest()
    return _MAGIC + _HEADER.pack(len(obj), len(irz), digest) + obj + irz


def _decode(data: bytes) -> tuple[bytes, str] | None:
    head = len(_MAGIC) + _HEADER.size
    if len(data) < head or not data.startswith(_MAGIC):
        return None
    n_obj, n_ir, digest = _HEADER.unpack_from(data, len(_MAGIC))
    if len(data) != head + n_obj + n_ir:
        return None
    body = data[head:]
    if hashlib.sha256(body).digest() != digest:
        return None
    try:
        ir_text = zlib.decompress(body[n_obj:]).decode()
    except (zlib.error, UnicodeDecodeError):
        return None
    return body[:n_obj], ir_text


def _unlink(path) -> bool:
    if path is None:
        return False
    try:
        os.unlink(path)
        return True
    except OSError:
        return False


_CACHES: dict[tuple[str, int], DiskCache] = {}
_LOCK = threading.Lock()
# whole-build writes in progress: (id(cache), key) -> writer thread (not daemonic: the
# interpreter's exit waits for them)
_WRITERS: dict[tuple[int, str], threading.Thread] = {}
_WRITERS_LOCK = threading.Lock()


def flush_all() -> None:
    """Wait for every whole-build write in progress, in every cache."""
    with _WRITERS_LOCK:
        pending = list(_WRITERS.values())
    for t in pending:
        t.join()


def get_cache(root: str | os.PathLike | None = None, max_bytes: int | None = None) -> DiskCache:
    """The cache object for ``root`` (default: the environment's directory), one per process."""
    root = Path(root) if root is not None else default_dir()
    max_bytes = _env_max_bytes() if max_bytes is None else int(max_bytes)
    with _LOCK:
        key = (str(root), max_bytes)
        cache = _CACHES.get(key)
        if cache is None:
            cache = _CACHES[key] = DiskCache(root, max_bytes)
        return cache


def active_cache(ctx: PassContext | None = None) -> DiskCache | None:
    """The disk cache a build in ``ctx`` (default: the current PassContext) uses, or None when
    it is switched off there or by ``MINITVM_DISABLE_DISK_CACHE``."""
    if disabled_by_env():
        return None
    ctx = ctx if ctx is not None else PassContext.current()
    cfg = getattr(ctx, "config", None) or {}
    if not bool(cfg.get(CONFIG_KEY, config_default(CONFIG_KEY))):
        return None
    return get_cache()

"""Whole-build cache for ``relay.build``: a build seen before is loaded, not compiled again.

A warm ``relay.build`` through the per-kernel disk cache still optimizes the program and lowers
and schedules every fused function to find each kernel's cache key (most of a second for
ResNet-50). This cache keys the whole result instead, before any pass runs, on everything that
decides it:

- the input module (``ir.fingerprint``: every field of every node, variables' names and
  constants' bytes included) and every parameter's name, dtype, shape and bytes;
- the PassContext (opt level, required and disabled passes, config), the lowering options
  (BLAS, generated kernels, the tuned knob table in effect), the target kind, the
  ``relay.qnn.op.requantize_config`` in effect (its rounding and compute dtype decide how
  QnnCanonicalize writes requantizations);
- the compiler itself: every file of the ``minitvm`` package, the code generator's version,
  the host CPU and LLVM (``runtime.jit.object_fingerprint``), and the registered op attributes
  (a build is not cached when one of them comes from outside the package, e.g. a user's
  ``register_op_attr`` override, whose code this key cannot see);
- ``MINITVM_*`` / ``TVM_*`` environment variables, except the cache's own settings.

An entry holds the graph JSON, the parameters, each kernel's constants and workspace size, each
distinct kernel's object code and LLVM IR, and the whole-graph entry's IR (if the graph has one:
not over ``aot.MAX_ENTRY_STEPS`` steps). A hit loads the object code into a fresh code arena (``jit.load_objects``).
What an entry does not carry (the optimized module ``ir_mod``, kernels' PrimFuncs, Relay sources
and callables) is rebuilt on first access by a normal build (through the per-kernel cache), so
a cached factory behaves like a fresh one.

Builds are not cached when the disk cache is off, with ``relay.backend.use_build_cache`` false
or ``MINITVM_DISABLE_BUILD_CACHE=1``, under pass instruments or a tracing knob table, or when a
kernel is not native (numpy fallback, external codegen) or lacks its object code.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import struct
import threading
import zlib
from collections.abc import Callable

import numpy as np

from ...backend.disk_cache import DiskCache, active_cache
from ...codegen.build import CODEGEN_VERSION, declared_externals, object_code
from ...ir.fingerprint import Unfingerprintable, array_token, fingerprint, ndarray_token
from ...ir.op import Op
from ...runtime import jit
from ...runtime.graph_executor import GraphExecutorFactoryModule
from ...runtime.module import GraphLib, Kernel
from ...runtime.ndarray import NDArray, contiguous
from ...transform.config import config_default, register_pass_config
from ...transform.context import PassContext

CONFIG_KEY = "relay.backend.use_build_cache"
ENV_DISABLE = "MINITVM_DISABLE_BUILD_CACHE"
FORMAT_VERSION = "3"  # 2: JSON header, no pickle; 3: the module keyed by its fingerprint
# environment variables that never change what a build produces
_ENV_IGNORED = frozenset({"MINITVM_CACHE_DIR", "MINITVM_CACHE_MAX_BYTES", "MINITVM_COMPILE_JOBS",
                          ENV_DISABLE})

register_pass_config(CONFIG_KEY, bool, True,
                     "Keep whole relay.build results in the on-disk cache and load a build seen "
                     "before instead of compiling it (needs the disk cache).")


def enabled(ctx: PassContext | None = None) -> DiskCache | None:
    """The disk cache whole builds go to in ``ctx`` (default: current), or None when off."""
    if os.environ.get(ENV_DISABLE, "").strip().lower() not in ("", "0", "false", "no", "off"):
        return None
    ctx = ctx if ctx is not None else PassContext.current()
    cfg = getattr(ctx, "config", None) or {}
    if not bool(cfg.get(CONFIG_KEY, config_default(CONFIG_KEY))):
        return None
    if getattr(ctx, "instruments", None):
        return None  # instruments expect the passes to run
    return active_cache(ctx)


# ------------------------------------------------------------------ the key
_PACKAGE: list[str] = []


def package_fingerprint(root: str | None = None) -> str:
    """SHA-256 of the path, size and modification time (ns) of every file of the installed
    ``minitvm`` package (or under ``root``): an edited, reinstalled or replaced file changes
    it. (Hashing the contents of its 700-odd files took 0.07 s of every warm build.)"""
    if root is not None:
        return _tree_fingerprint(root)
    if not _PACKAGE:
        _PACKAGE.append(_tree_fingerprint(
            os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
    return _PACKAGE[0]


def _tree_fingerprint(root: str) -> str:
    h = hashlib.sha256()
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        rel = folder[len(root):]
        for f in sorted(files):
            if f.endswith((".pyc", ".pyo")):
                continue
            try:
                st = os.stat(os.path.join(folder, f))
            except OSError:
                continue
            h.update(f"{rel}/{f}|{st.st_size}|{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def _op_registry_digest() -> str | None:
    """A digest of the registered op attributes; None when one comes from outside minitvm."""
    return op_attrs_digest(Op.list_op_names())


def op_attrs_digest(names) -> str | None:
    """A digest of the registered attributes of the ops ``names``; None when one of them comes
    from outside minitvm (its code no digest can see)."""
    h = hashlib.sha256()
    for name in sorted(set(names)):
        op = Op.get(name)
        for attr, (level, value) in sorted(getattr(op, "_attrs", {}).items()):
            what = _attr_text(value)
            if what is None:
                return None
            h.update(f"{name}|{attr}|{level}|{what}\n".encode())
    return h.hexdigest()


def foreign_op_attrs() -> list[tuple[str, str]]:
    """``(op name, attribute)`` of each registered op attribute from outside minitvm."""
    return [(name, attr) for name in Op.list_op_names()
            for attr, (_, value) in getattr(Op.get(name), "_attrs", {}).items()
            if _attr_text(value) is None]


def _attr_text(value) -> str | None:
    """How an op attribute enters a digest: its code's qualified name, or its repr; None when
    it comes from outside minitvm (or has no stable text)."""
    if callable(value) or hasattr(value, "__module__"):
        module = getattr(value, "__module__", None) or type(value).__module__ or ""
        if not module.startswith("minitvm"):
            return None
        return f"{module}.{getattr(value, '__qualname__', type(value).__qualname__)}"
    what = repr(value)
    return None if " at 0x" in what else what


def _array(v) -> np.ndarray:
    data = getattr(v, "_data", None)
    if isinstance(data, np.ndarray):
        return data
    return np.asarray(v.numpy() if hasattr(v, "numpy") else v)


def _in_thread(fn, *args) -> Callable[[], object]:
    """Start ``fn(*args)`` on a thread; the returned callable waits for its result (or raises
    its exception). Used for work that releases the GIL: it overlaps with this thread's."""
    out: list = []

    def run():
        try:
            out.append((True, fn(*args)))
        except BaseException as err:  # handed to the caller
            out.append((False, err))

    t = threading.Thread(target=run, daemon=True)
    t.start()

    def result():
        t.join()
        ok, value = out[0]
        if not ok:
            raise value
        return value

    return result


def _params_digest(params: dict | None) -> str:
    """A digest of every parameter's name, dtype, shape and bytes. An NDArray's bytes are
    digested once and the digest kept on it (``ir.fingerprint``'s token, which also sets the
    content hash ``structural_hash`` reads): a weight left as it is by the passes is not read
    again where LabelOps hashes ``main``, nor are the weights of a second build of the same
    params (ResNet-50's 100 MB: 0.08 s each time)."""
    h = hashlib.sha256()
    for name in sorted(params or {}):
        v = params[name]
        token = ndarray_token(v) if isinstance(v, NDArray) else array_token(_array(v))
        h.update(f"{name}|{token}\n".encode())
    return h.hexdigest()


def _plain(value) -> str | None:
    """A process-independent text of a config value, or None when it has none."""
    text = repr(value)
    return None if " at 0x" in text else text


def build_key(mod, params, target_kind: str, options, ctx: PassContext | None = None
              ) -> str | None:
    """The whole-build cache key of ``relay.build(mod, target, params)`` in ``ctx``, or None
    when this build must not be cached (see the module docstring)."""
    ctx = ctx if ctx is not None else PassContext.current()
    knobs = getattr(options, "knobs", None)
    if knobs is not None and getattr(knobs, "trace", False):
        return None
    params_digest = _in_thread(_params_digest, params)  # (hashing releases the GIL)
    ops = _op_registry_digest()
    if ops is None:
        return None
    cfg = []
    for k in sorted(getattr(ctx, "config", None) or {}):
        text = _plain(ctx.config[k])
        if text is None:
            return None
        cfg.append((k, text))
    opts = {f: getattr(options, f) for f in ("native", "blas", "generated_conv",
                                            "generated_dense", "generated_batch_matmul")}
    env = sorted((k, v) for k, v in os.environ.items()
                 if k.startswith(("MINITVM_", "TVM_")) and k not in _ENV_IGNORED)
    try:
        # every field of every node, names and constants' bytes included, inferred types left
        # out (InferType fills them in place: a module built once would key differently after)
        digest = fingerprint(mod)
    except Unfingerprintable:  # it holds code or a handle: build it normally
        return None
    from ...runtime import blas
    from ..qnn.op.qnn import current_requantize_config

    requantize = current_requantize_config()
    head = json.dumps({
        "format": FORMAT_VERSION, "codegen": CODEGEN_VERSION,
        "package": package_fingerprint(), "host": jit.object_fingerprint(), "ops": ops,
        "target": target_kind, "opt_level": ctx.opt_level,
        "required": list(ctx.required_pass), "disabled": list(ctx.disabled_pass),
        "config": cfg, "options": opts, "blas": blas.describe() if options.blas else "",
        "knobs": sorted((k, sorted(v.items())) for k, v in knobs.entries.items())
        if knobs is not None else None,
        "env": env, "module": digest,
        "requantize": [requantize.rounding, requantize.compute_dtype],
    }, sort_keys=True, default=repr)
    h = hashlib.sha256(head.encode())
    h.update(params_digest().encode())
    return "relay.build|" + h.hexdigest()


# ------------------------------------------------------------------ entries
# non-internal definitions of an LLVM module (kernels loaded into one engine must not clash)
_GLOBAL_DEFS = re.compile(r'^(?:define (?!internal|private)[^@\n]*@"?([\w.$]+)'
                          r'|@"?([\w.$]+)"? = (?!internal|private))', re.M)
_LAYOUT = struct.Struct("<QQ")  # JSON header length, number of out-of-band buffers
ALIGN = 64


def _pad(n: int) -> int:
    return (-n) % ALIGN


def store(cache: DiskCache, key: str, factory: GraphExecutorFactoryModule,
          wait: bool = True) -> bool:
    """Write ``factory`` under ``key``; False (nothing written) when it cannot be cached.
    ``wait=False``: the entry is encoded and written on a thread (``DiskCache.put_build``)
    while the caller goes on (compressing ResNet-50's kernel IR and finding its definitions took
    0.08 s of the build); the factory's weights must not be changed in place meanwhile."""
    lib = factory.get_lib()
    codes = {}  # (no entry: a graph too large for one runs through runtime.step_loop)
    for k in lib.kernels.values():
        if k.kind != "native" or k.compiled is None:
            return False
        if k.symbol not in codes:
            code = object_code(k.symbol)
            if code is None:
                return False
            codes[k.symbol] = code
    if wait:
        chunks = _chunks(factory, codes)
        if chunks is None:
            return False
        cache.put_build(key, chunks)
        return True
    cache.put_build(key, lambda: _chunks(factory, codes), wait=False)
    return True


def _chunks(factory: GraphExecutorFactoryModule, codes: dict) -> list | None:
    """The entry of ``factory`` as bytes-like chunks written back to back (``codes``: symbol
    -> (object code, pipeline level) of its kernels); None when it cannot be encoded."""
    lib = factory.get_lib()
    kernels, objects = [], {}
    for name, k in lib.kernels.items():
        if k.symbol not in objects:
            obj, pipeline = codes[k.symbol]
            defs = [a or b for a, b in _GLOBAL_DEFS.findall(k.ir)]
            objects[k.symbol] = (obj, pipeline, zlib.compress(k.ir.encode(), 1),
                                 declared_externals(k.ir), defs)
        kernels.append((name, k.symbol, int(k.ws_bytes),
                        [contiguous(c) for c in k.consts]))
    payload = {"graph_json": factory.get_graph_json(), "blas": lib.blas,
               "params": {n: contiguous(_array(v))
                          for n, v in factory.get_params().items()},
               "kernels": kernels, "objects": objects, "entry": lib.entry[:2] if lib.entry is not None else None}
    return payload_chunks(payload)


def payload_chunks(value) -> list | None:
    """``value`` (data as ``_encode`` takes it) as bytes-like chunks of a cache entry written
    back to back, or None when it cannot be encoded; ``read_payload`` reads it back."""
    raws: list = []
    try:  # a JSON header; arrays and bytes go out of band, so a load maps them in place
        head_json = json.dumps(_encode(value, raws)).encode()
    except (TypeError, ValueError):
        return None
    head = _LAYOUT.pack(len(head_json), len(raws)) + b"".join(
        struct.pack("<Q", r.nbytes) for r in raws)
    chunks = [head, bytes(_pad(len(head))), head_json, bytes(_pad(len(head_json)))]
    for r in raws:
        chunks += [r, bytes(_pad(r.nbytes))]
    return chunks


def _encode(value, raws: list):
    """``value`` (str/int/float/bool/None, bytes, numeric arrays, lists/tuples, str-keyed dicts)
    as JSON data, its arrays and bytes appended to ``raws`` and referred to by index. Data only:
    a load never runs code (no pickle)."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, bytes):
        raws.append(memoryview(value))
        return {"$bytes": len(raws) - 1}
    if isinstance(value, np.ndarray):
        if value.dtype.hasobject:
            raise TypeError("an object array cannot be stored")
        a = contiguous(value)
        raws.append(memoryview(a.reshape(-1).view(np.uint8)))
        return {"$array": len(raws) - 1, "dtype": a.dtype.str, "shape": list(a.shape)}
    if isinstance(value, list | tuple):
        return [_encode(v, raws) for v in value]
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {"$dict": {k: _encode(v, raws) for k, v in value.items()}}
    raise TypeError(f"cannot store a {type(value).__name__} in a build entry")


def _decode(value, bufs: list):
    """The inverse of ``_encode``; arrays are read-only views of the entry's buffers."""
    if isinstance(value, list):
        return [_decode(v, bufs) for v in value]
    if isinstance(value, dict):
        if "$bytes" in value:
            return bytes(bufs[value["$bytes"]])
        if "$array" in value:
            a = np.frombuffer(bufs[value["$array"]], dtype=np.dtype(value["dtype"]))
            return a.reshape(value["shape"])
        return {k: _decode(v, bufs) for k, v in value["$dict"].items()}
    return value


def read_payload(data: memoryview):
    """The value ``payload_chunks`` wrote (a stored build's payload); arrays are views of
    ``data``. Raises ValueError (or a KeyError / struct.error) for a damaged entry."""
    return _unpack(data)


def _unpack(data: memoryview) -> dict:
    """The payload of a stored build; arrays are views of ``data``."""
    n_head, n_bufs = _LAYOUT.unpack_from(data, 0)
    sizes = struct.unpack_from(f"<{n_bufs}Q", data, _LAYOUT.size)
    pos = _LAYOUT.size + 8 * n_bufs
    pos += _pad(pos)
    head = bytes(data[pos:pos + n_head])
    pos += n_head + _pad(n_head)
    bufs = []
    for n in sizes:
        if pos + n > len(data):
            raise ValueError("truncated build entry")
        bufs.append(data[pos:pos + n])
        pos += n + _pad(n)
    return _decode(json.loads(head), bufs)


def _load_objects(objects: dict) -> dict:
    """symbol -> CompiledObject for every stored kernel object (one engine when possible)."""
    items, irs, seen, clash = [], {}, set(), False
    for sym, (obj, pipeline, irz, externals, defs) in objects.items():
        irs[sym] = zlib.decompress(irz).decode()
        items.append((obj, sym, irs[sym], pipeline, externals))
        clash = clash or not seen.isdisjoint(defs)
        seen.update(defs)
    if not clash:
        return {it[1]: c for it, c in zip(items, jit.load_objects(items))}
    return {it[1]: jit.load_object(*it) for it in items}


class _Rebuild:
    """The full build behind a cached factory, made once on first need."""

    def __init__(self, make: Callable[[], GraphExecutorFactoryModule]):
        self._make = make
        self._lock = threading.Lock()
        self._factory: GraphExecutorFactoryModule | None = None

    def get(self) -> GraphExecutorFactoryModule:
        with self._lock:
            if self._factory is None:
                self._factory = self._make()
            return self._factory


def _lazy_slot(slot: str) -> property:
    base = Kernel.__dict__[slot]  # the slot's member descriptor

    def get(self):
        value = base.__get__(self)
        rebuild = getattr(self, "_rebuild", None)
        if value is None and rebuild is not None:
            real = rebuild.get().get_lib().kernels.get(self.name)
            for s in ("kernel", "prim_func", "source", "source_format", "input_packs"):
                base_s = Kernel.__dict__[s]
                if real is not None and not base_s.__get__(self):
                    base_s.__set__(self, getattr(real, s))
            self._rebuild = None
            value = base.__get__(self)
        return value

    return property(get, base.__set__, doc=f"``{slot}``, rebuilt on first use")


class CachedKernel(Kernel):
    """A kernel loaded from the build cache: its callable, PrimFunc and Relay source are
    rebuilt on first access."""

    __slots__ = ("_rebuild",)
    kernel = _lazy_slot("kernel")
    prim_func = _lazy_slot("prim_func")
    source = _lazy_slot("source")


class CachedFactory(GraphExecutorFactoryModule):
    """A factory loaded from the build cache; ``ir_mod`` is rebuilt on first access."""

    def __init__(self, *args, rebuild: _Rebuild, **kwargs):
        self._rebuild = rebuild
        self._ir_mod = None
        super().__init__(*args, **kwargs)

    @property
    def ir_mod(self):
        if self._ir_mod is None and self._rebuild is not None:
            self._ir_mod = self._rebuild.get().ir_mod
        return self._ir_mod

    @ir_mod.setter
    def ir_mod(self, value) -> None:
        self._ir_mod = value


def load(cache: DiskCache, key: str, mod_name: str,
         rebuild: Callable[[], GraphExecutorFactoryModule]) -> GraphExecutorFactoryModule | None:
    """The factory stored under ``key``, or None (absent, damaged or not loadable here)."""
    data = cache.get_build(key)
    if data is None:
        return None
    try:
        payload = _unpack(data)
        compiled = _load_objects(payload["objects"])
        lazy = _Rebuild(rebuild)
        kernels = {}
        for name, sym, ws, consts in payload["kernels"]:
            c = compiled[sym]
            k = CachedKernel(name, "native", symbol=sym, address=c.address, ir=c.source_ir,
                             ws_bytes=ws, consts=consts, compiled=c)
            k._rebuild = lazy
            kernels[name] = k
        entry = None
        if payload["entry"] is not None:
            ir, symbol = payload["entry"]
            entry = (ir, symbol, jit.link_entry(ir, symbol, {s: c.address
                                                             for s, c in compiled.items()}))
        lib = GraphLib(kernels, entry, payload["blas"])
        return CachedFactory(payload["graph_json"], lib, payload["params"], mod_name, None,
                             0.0, rebuild=lazy)
    except Exception:  # a damaged or foreign entry: build from scratch instead
        return None

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
  the host CPU and LLVM (``runtime.jit.object_fingerprint``), and what code outside the package
  registered that the build may read (``whole_build.op_registry_digest``: a user's
  ``register_op_attr`` override of a built-in op, a user's op the module calls; a build is not
  cached when such an attribute is code, which this key cannot see);
- ``MINITVM_*`` / ``TVM_*`` environment variables, except the cache's own settings.

An entry holds the graph JSON, the parameters, each kernel's constants and workspace size, each
distinct kernel's object code and LLVM IR, and the whole-graph entry's IR (if the graph has one:
not over ``aot.MAX_ENTRY_STEPS`` steps). A hit loads the object code into a fresh code arena (``jit.load_objects``).
What an entry does not carry (the optimized module ``ir_mod``, kernels' PrimFuncs, Relay sources
and callables) is rebuilt on first access by a normal build (through the per-kernel cache), so
a cached factory behaves like a fresh one.

The key, the switch and the entry format are ``backend.whole_build``'s, shared with
``relay.vm.compile``'s and ``relax.build``'s caches. Builds are not cached when the disk cache is off, with ``relay.backend.use_build_cache`` false
or ``MINITVM_DISABLE_BUILD_CACHE=1``, under pass instruments or a tracing knob table, or when a
kernel is not native (numpy fallback, external codegen) or lacks its object code.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from ...backend.disk_cache import DiskCache
from ...backend.whole_build import (  # noqa: F401 - the shared parts, by their old names too
    _ENV_IGNORED,
    _GLOBAL_DEFS,
    _PACKAGE,
    CONFIG_KEY,
    ENV_DISABLE,
    FORMAT_VERSION,
    _array,
    _attr_text,
    _decode,
    _encode,
    _in_thread,
    _params_digest,
    _plain,
    _unpack,
    enabled,
    foreign_op_attrs,
    kernel_objects,
    load_objects,
    object_entries,
    op_registry_digest,
    package_fingerprint,
    payload_chunks,
    read_payload,
)
from ...backend.whole_build import build_key as _build_key
from ...runtime import jit
from ...runtime.graph_executor import GraphExecutorFactoryModule
from ...runtime.module import GraphLib, Kernel
from ...runtime.ndarray import contiguous
from ...transform.context import PassContext

_load_objects = load_objects


def build_key(mod, params, target_kind: str, options, ctx: PassContext | None = None
              ) -> str | None:
    """The whole-build cache key of ``relay.build(mod, target, params)`` in ``ctx``, or None
    when this build must not be cached (see the module docstring)."""
    from ..qnn.op.qnn import current_requantize_config

    requantize = current_requantize_config()
    key = _build_key(mod, params, target_kind, options, ctx,
                     {"requantize": [requantize.rounding, requantize.compute_dtype]})
    return None if key is None else "relay.build|" + key


def store(cache: DiskCache, key: str, factory: GraphExecutorFactoryModule,
          wait: bool = True) -> bool:
    """Write ``factory`` under ``key``; False (nothing written) when it cannot be cached.
    ``wait=False``: the entry is encoded and written on a thread (``DiskCache.put_build``)
    while the caller goes on (compressing ResNet-50's kernel IR and finding its definitions took
    0.08 s of the build); the factory's weights must not be changed in place meanwhile."""
    codes = kernel_objects(factory.get_lib().kernels.values())
    if codes is None:
        return False
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
    objects = object_entries(lib.kernels.values(), codes)
    kernels = [(name, k.symbol, int(k.ws_bytes), [contiguous(c) for c in k.consts])
               for name, k in lib.kernels.items()]
    payload = {"graph_json": factory.get_graph_json(), "blas": lib.blas,
               "params": {n: contiguous(_array(v))
                          for n, v in factory.get_params().items()},
               "kernels": kernels, "objects": objects, "entry": lib.entry[:2] if lib.entry is not None else None}
    return payload_chunks(payload)


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
        compiled = load_objects(payload["objects"])
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

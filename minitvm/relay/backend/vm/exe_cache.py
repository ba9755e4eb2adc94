"""Whole-executable cache for ``relay.vm.compile``: a compile seen before loads the executable
it saved, running no pass, prefetch or lowering.

A warm compile through the per-kernel disk cache and the symbolic kernels' records still runs
every pass and the prefetch to find each kernel's key (0.37-0.87 s for the detection models of
benchmarks/bench_relay_vm_new_sizes.py). The key is ``build_cache.build_key``'s (the module's
every field, the parameters' bytes, the PassContext, the lowering options, the package's files,
the host, the registered op attributes, ``MINITVM_*`` / ``TVM_*`` environment variables) for
target "relay.vm", plus what only the VM's compile reads: the executable format and the op
tags the symbolic kernels lower through their rules (``symbolic.SYMBOLIC_RULE_TAGS``). So it
is off with ``relay.vm.use_exe_cache`` false and where ``build_cache`` is off (no disk cache, ``relay.backend.use_build_cache`` false,
``MINITVM_DISABLE_BUILD_CACHE=1``, pass instruments, a tracing knob table) and where the key
cannot see everything (an op attribute or a schedule rule registered from outside minitvm,
a module holding code or a handle). Module constants changed at run time (a schedule's switch
a test monkeypatches) are not seen either: such code turns the cache off, as the test suite
does (``MINITVM_DISABLE_BUILD_CACHE``).

An entry is ``Executable.save()``'s bytecode and its kernels' exported library; a hit is
``Executable.load_exec`` of them (the symbolic kernels read back from their records). A compile
whose kernel fell back to numpy after a failed native lowering is not stored (loading it would
skip the warning a compile gives).
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
import tempfile

from ....backend.options import lowering_options
from ....backend.whole_build import schedule_rules_digest
from ....runtime.vm import Executable
from ....transform.config import config_default, register_pass_config
from ....transform.context import PassContext
from .. import build_cache

__all__ = ["CONFIG_KEY", "STATS", "exe_key", "load", "store"]

CONFIG_KEY = "relay.vm.use_exe_cache"
register_pass_config(CONFIG_KEY, bool, True,
                     "Keep whole relay.vm.compile executables in the on-disk cache and load one "
                     "seen before instead of compiling it (also needs the build cache on).")
FORMAT = "1"
_HEAD = struct.Struct("<Q")  # the bytecode's length; the library follows it
# hits (executables loaded) and stores in this process
STATS = {"hits": 0, "stores": 0}


def exe_key(mod, params, target=None, ctx: PassContext | None = None) -> tuple | None:
    """``(disk cache, key)`` of ``relay.vm.compile(mod, target, params=params)`` in ``ctx``
    (default: current), or None when this compile must not be cached (see the module)."""
    from . import symbolic

    ctx = ctx if ctx is not None else PassContext.current()
    if not bool((getattr(ctx, "config", None) or {}).get(CONFIG_KEY,
                                                          config_default(CONFIG_KEY))):
        return None
    cache = build_cache.enabled(ctx)
    if cache is None:
        return None
    rules = schedule_rules_digest()
    if rules is None:
        return None
    kind = "relay.vm " + ("llvm" if target is None else str(target))
    key = build_cache.build_key(mod, params, kind, lowering_options(ctx), ctx)
    if key is None:
        return None
    extra = json.dumps({"format": FORMAT, "exe": Executable.__module__, "rules": rules,
                        "symbolic_rules": sorted(symbolic.SYMBOLIC_RULE_TAGS)}, sort_keys=True)
    return cache, "relay.vm|" + hashlib.sha256((key + "\0" + extra).encode()).hexdigest()


def load(cache, key: str) -> Executable | None:
    """The executable stored under ``key``, or None (absent, or unreadable: compiled anew)."""
    from ....runtime.module import load_module

    data = cache.get_build(key)
    if data is None or len(data) < _HEAD.size:
        return None
    (n,) = _HEAD.unpack_from(data, 0)
    code, lib = bytes(data[_HEAD.size:_HEAD.size + n]), data[_HEAD.size + n:]
    fd, path = tempfile.mkstemp(suffix=".so", prefix="minitvm-vm-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(lib)
        exe = Executable.load_exec(code, load_module(path))
    except (ValueError, OSError):
        return None
    finally:
        os.unlink(path)
    STATS["hits"] += 1
    return exe


def storable(exe: Executable) -> bool:
    """May ``exe`` be stored: no kernel fell back to numpy after a failed native lowering?"""
    return not any(getattr(k, "error", "") for k in exe.kernels)


def store(cache, key: str, exe: Executable) -> None:
    """Store ``exe`` under ``key`` (never raises for a compile that cannot be saved)."""
    if not storable(exe):
        return
    try:
        code, lib = exe.save()
        fd, path = tempfile.mkstemp(suffix=".so", prefix="minitvm-vm-")
        os.close(fd)
        try:
            lib.export_library(path)
            with open(path, "rb") as f:
                lib_bytes = f.read()
        finally:
            os.unlink(path)
    except (ValueError, TypeError, OSError):
        return
    cache.put_build(key, [_HEAD.pack(len(code)), code, lib_bytes])
    STATS["stores"] += 1

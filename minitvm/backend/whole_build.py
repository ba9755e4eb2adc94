"""Whole-build caches' shared machinery (``relay.build``, ``relay.vm.compile``, ``relax.build``):
the switch, the key, and entries as data.

A build's key is taken before any pass runs, from everything that decides its result: the
input module (``ir.fingerprint``: every field of every node, variables' names and constants'
bytes included) and every parameter's name, dtype, shape and bytes; the PassContext (opt
level, required and disabled passes, config); the lowering options (BLAS, generated kernels,
the knob table in effect); the target; the compiler itself (every file of the ``minitvm``
package, the code generator's version, the host CPU and LLVM, and what code outside the
package did to the op registry, below); ``MINITVM_*`` / ``TVM_*`` environment variables
except the cache's own settings; and what only the caller's build reads (``extra``). An entry
is a JSON header and out-of-band buffers (arrays, object code): a load maps them in place and
never runs code (no pickle).

The op registry's part. A build reads the attributes of the ops its module calls and of the
ops its passes introduce (legalization, canonicalization, layout rewrites: any built-in op).
What minitvm's own code registers is decided by the package's files, which the key already
covers (``package_fingerprint``: each file's path, size and modification time); the op
registry records at each registration whose code made it (``ir.op``: the call chain up to the
module body being imported stays in the package, or it does not). So the key holds:

- every attribute of a built-in op that other code set, overrode or removed (a user's
  ``FTVMLegalize`` / ``FTVMCompute`` / ``TOpPattern`` override), whichever ops the module
  calls, since a pass may introduce any built-in op;
- every attribute of each op created by other code that the module refers to, anywhere in it
  (fused, composite and partitioned functions included: ``fingerprint`` collects them as it
  walks). A pass introduces such an op only through other code, which is refused or keyed;
  the exception, ops the compiler looks up by name (a ``tir.*`` intrinsic's lowering rule,
  applied to the calls the lowering generates), counts as a built-in op does;
- nothing of a foreign op the module does not call: a user's op registered before building a
  model that never calls it leaves the key as it is.

Such an attribute enters the key by a stable text (a plain value; a minitvm function by its
name): code outside the package has none, so a build seeing one is not cached. Ops a process
happens to have imported (minitvm modules registering lazily, another module's own ops) do
not change the key: two processes make the same key for the same build. (Only
``FTVMFakeQuantizationToInteger`` is registered lazily by minitvm, by its pass's import.)

Whole builds are not cached when the disk cache is off, with ``relay.backend.use_build_cache``
false or ``MINITVM_DISABLE_BUILD_CACHE=1``, or under pass instruments (they expect the passes
to run).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import struct
import sys
import threading
import types
import zlib
from collections.abc import Callable

import numpy as np

from ..codegen.build import CODEGEN_VERSION, declared_externals, object_code
from ..ir.fingerprint import Unfingerprintable, array_token, fingerprint, ndarray_token
from ..ir.op import Op
from ..runtime import jit
from ..runtime.ndarray import NDArray, contiguous
from ..transform.config import config_default, register_pass_config
from ..transform.context import PassContext
from .disk_cache import DiskCache, active_cache

FORMAT_VERSION = "3"  # 2: JSON header, no pickle; 3: the module keyed by its fingerprint
CONFIG_KEY = "relay.backend.use_build_cache"
ENV_DISABLE = "MINITVM_DISABLE_BUILD_CACHE"
# environment variables that never change what a build produces
_ENV_IGNORED = frozenset({"MINITVM_CACHE_DIR", "MINITVM_CACHE_MAX_BYTES", "MINITVM_COMPILE_JOBS",
                          ENV_DISABLE})

register_pass_config(CONFIG_KEY, bool, True,
                     "Keep whole relay.build / relay.vm.compile / relax.build results in the "
                     "on-disk cache and load a build seen before instead of compiling it (needs "
                     "the disk cache).")


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


# ops the compiler consults by name whether or not a module calls them: LowerIntrin hands the
# calls of every registered ``tir.*`` op that the lowering generates to its lowering rule
_READ_BY_NAME = ("tir.",)


def _always_read(name: str, op: Op) -> bool:
    """Whether a build may read ``op`` whichever ops its module calls: a built-in op (a pass
    may introduce any), or one of the names the compiler looks up (``_READ_BY_NAME``)."""
    return not op.foreign or name.startswith(_READ_BY_NAME)


def op_registry_digest(called, everywhere: bool = True) -> str | None:
    """The op registry's part of a key (see the module docstring): the attributes that code
    outside minitvm set, overrode or removed of the ops any build may read (``_always_read``;
    of those ``called`` only unless ``everywhere``) and every attribute of each foreign op
    ``called``. None when one of them has no stable text (code from outside minitvm)."""
    lines: list = []
    registry = Op._registry
    for name, op in list(registry.items()) if everywhere else ():  # (another thread may add)
        if (op._attrs != op._builtin or op.foreign) and _always_read(name, op):
            lines += _changed_lines(name, op)
            if lines and lines[-1] is None:
                return None
    for name in called:
        op = registry.get(name)
        if op is not None and (not everywhere or not _always_read(name, op)):
            lines += _changed_lines(name, op)
            if lines and lines[-1] is None:
                return None
    if not lines:
        return ""
    return hashlib.sha256("\n".join(sorted(set(lines))).encode()).hexdigest()


def _changed_lines(name: str, op: Op) -> list:
    """One line per attribute of ``op`` not as minitvm registered it; a trailing None when one
    has no stable text."""
    lines: list = []
    for attr in op.changed_attrs():
        entry = op._attrs.get(attr)
        if entry is None:
            lines.append(f"{name}|{attr}|removed")
            continue
        text = _value_text(entry[1])
        if text is None:
            lines.append(None)
            return lines
        lines.append(f"{name}|{attr}|{entry[0]}|{text}")
    return lines


def foreign_op_attrs() -> list[tuple[str, str]]:
    """``(op name, attribute)`` of each attribute that code outside minitvm set, overrode or
    removed of an op any build may read (a built-in op, an intrinsic: ``_always_read``)."""
    return [(name, attr) for name, op in list(Op._registry.items()) if _always_read(name, op)
            for attr in op.changed_attrs()]


_PLAIN = (bool, int, float, str, type(None))


def _value_text(value) -> str | None:
    """A stable text of an op attribute set by code outside minitvm, or None: a plain value
    (or a tuple of them), a minitvm function or class by its module-level name (its code is
    the package's; a closure, a nested function or a rebound name is refused)."""
    if type(value) in _PLAIN:
        return f"{type(value).__name__}:{value!r}"
    if type(value) is tuple:
        parts = [_value_text(v) for v in value]
        return None if None in parts else "(" + ",".join(parts) + ")"
    if not isinstance(value, types.FunctionType | types.BuiltinFunctionType | type):
        return None
    module = getattr(value, "__module__", None) or ""
    qualname = getattr(value, "__qualname__", "")
    if (module != "minitvm" and not module.startswith("minitvm.")) or "<" in qualname \
            or getattr(value, "__closure__", None):
        return None
    found = sys.modules.get(module)
    for part in qualname.split("."):
        found = getattr(found, part, None)
    return f"{module}.{qualname}" if found is value else None


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


def build_key(mod, params, target_kind: str, options, ctx: PassContext | None = None,
              extra: dict | None = None) -> str | None:
    """The whole-build cache key of building ``mod`` with ``params`` for ``target_kind`` under
    the lowering ``options`` in ``ctx`` (default: current); ``extra`` (JSON-able) holds what
    else only the caller's build reads. None when this build must not be cached: a tracing
    knob table, a config value without a stable text, an op attribute set by code outside
    minitvm that the build may read (see the module docstring), a module holding code."""
    ctx = ctx if ctx is not None else PassContext.current()
    knobs = getattr(options, "knobs", None)
    if knobs is not None and getattr(knobs, "trace", False):
        return None
    params_digest = _in_thread(_params_digest, params)  # (hashing releases the GIL)
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
    called: set[str] = set()
    try:
        # every field of every node, names and constants' bytes included, inferred types left
        # out (InferType fills them in place: a module built once would key differently after)
        digest = fingerprint(mod, called)
    except Unfingerprintable:  # it holds code or a handle: build it normally
        return None
    ops = op_registry_digest(called)
    if ops is None:
        return None
    from ..runtime import blas

    head = json.dumps({
        "format": FORMAT_VERSION, "codegen": CODEGEN_VERSION,
        "package": package_fingerprint(), "host": jit.object_fingerprint(), "ops": ops,
        "target": target_kind, "opt_level": ctx.opt_level,
        "required": list(ctx.required_pass), "disabled": list(ctx.disabled_pass),
        "config": cfg, "options": opts, "blas": blas.describe() if options.blas else "",
        "knobs": sorted((k, sorted(v.items())) for k, v in knobs.entries.items())
        if knobs is not None else None,
        "env": env, "module": digest, "extra": extra,
    }, sort_keys=True, default=repr)
    h = hashlib.sha256(head.encode())
    h.update(params_digest().encode())
    return target_kind + "|" + h.hexdigest()


def schedule_rules_digest() -> str | None:
    """A digest of the schedule rule table (``schedule.RULES``: each tag's rules in order, by
    their code's names); None when a rule comes from outside minitvm (its code no digest can
    see: a user's ``register_rule``)."""
    from ..schedule import RULES

    h = hashlib.sha256()
    for tag in sorted(RULES):
        for rule in RULES[tag]:
            parts = [_attr_text(f) for f in (rule.supported, rule.emit)]
            if None in parts:
                return None
            h.update(f"{tag}|{rule.name}|{rule.kind}|{rule.symbolic}|{rule.epilogue}|"
                     f"{rule.materialize}|{'|'.join(parts)}\n".encode())
    return h.hexdigest()


# ------------------------------------------------------------------ entries
# non-internal definitions of an LLVM module (kernels loaded into one engine must not clash)
_GLOBAL_DEFS = re.compile(r'^(?:define (?!internal|private)[^@\n]*@"?([\w.$]+)'
                          r'|@"?([\w.$]+)"? = (?!internal|private))', re.M)
_LAYOUT = struct.Struct("<QQ")  # JSON header length, number of out-of-band buffers
ALIGN = 64


def _pad(n: int) -> int:
    return (-n) % ALIGN


def kernel_objects(kernels) -> dict | None:
    """symbol -> (object code, pipeline level) of the native ``Kernel`` records ``kernels``;
    None when one is not native or its object code is not at hand (compiled without the
    on-disk cache): such a build is not stored."""
    codes = {}
    for k in kernels:
        if k.kind != "native" or k.compiled is None:
            return None
        if k.symbol not in codes:
            code = object_code(k.symbol)
            if code is None:
                return None
            codes[k.symbol] = code
    return codes


def object_entries(kernels, codes: dict) -> dict:
    """symbol -> what ``load_objects`` reads back of each distinct kernel of ``kernels`` (its
    object code and pipeline level from ``codes``, its compressed IR, the externals it
    declares and the globals it defines)."""
    objects = {}
    for k in kernels:
        if k.symbol not in objects:
            obj, pipeline = codes[k.symbol]
            defs = [a or b for a, b in _GLOBAL_DEFS.findall(k.ir)]
            objects[k.symbol] = (obj, pipeline, zlib.compress(k.ir.encode(), 1),
                                 declared_externals(k.ir), defs)
    return objects


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


def load_objects(objects: dict) -> dict:
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

"""Symbolic kernels saved as data, so a warm ``relay.vm.compile`` and a loaded executable run
them without lowering or scheduling anything again.

Besides its machine code a symbolic kernel (``symbolic.SymbolicKernel``) needs only plain data:
its size variables, its inputs' and outputs' shapes as expressions of them, the input axes its
entry reads each variable from, its constants, and the layout transforms of the weights it
takes packed (``schedule.weight_packs``). ``kernel_record`` writes that as a JSON-able dict and
``restore`` reads it back.

Two places keep records:

- the on-disk cache (``RecordStore``): a record and the kernel's object code, under a key made
  before anything is scheduled: a digest of the primitive function (``ir.fingerprint``: every
  field, names and constants included), the lowering options, the constant input positions and
  the compiler (``build_cache``'s parts: package files, code generator, host CPU / LLVM, op
  registry, PassContext, ``MINITVM_*`` environment). A function the symbolic path refuses is
  recorded with its error. Off where ``relay.build``'s whole-build cache is off;
- an exported executable (the ``relay_symbolic`` kernel format of ``symbolic``): the record,
  the constants, the LLVM IR and the build's object code beside the Relay function. A load on
  a host of the same CPU / LLVM (``jit.object_fingerprint``) loads that object code (the build's
  own machine code: the same numerics); elsewhere it compiles the IR as a library's native
  kernel is. The function is parsed only if a shape breaks the symbolic typing and the
  per-shape specialization needs it.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import zlib

import numpy as np

from ....codegen.build import (
    CODEGEN_VERSION,
    declared_externals,
    object_code,
    remember_object,
)
from ....ir.fingerprint import Unfingerprintable, fingerprint
from ....runtime import jit
from ....schedule.weight_packs import pack_from_record, pack_record
from ....tir import expr as E
from ....transform.context import PassContext

__all__ = ["RecordStore", "STATS", "consts_from_text", "consts_text", "kernel_record",
           "restore"]

RECORD_VERSION = 1
_MISS = object()  # (``RecordStore``: a key looked up and not usable)
# this process's record traffic (tests and benchmarks read it)
STATS = {"hits": 0, "misses": 0, "writes": 0}

_BINARY = {"Add": E.Add, "Sub": E.Sub, "Mul": E.Mul, "FloorDiv": E.FloorDiv, "Div": E.Div,
           "FloorMod": E.FloorMod, "Mod": E.Mod, "Min": E.Min, "Max": E.Max}


# ------------------------------------------------------------------------------ dimensions
def _dim_data(e, index: dict):
    """Dimension expression ``e`` as data: an int, ``["var", k]`` (the k-th size variable),
    ``[op, a, b]`` or ``["Cast", dtype, a]``. (Expressions of a few sizes: shallow.)"""
    if isinstance(e, int | np.integer):
        return int(e)
    if isinstance(e, E.IntImm):
        return int(e.value)
    if isinstance(e, E.Var):
        k = index.get(id(e))
        if k is None:
            raise ValueError(f"dimension variable {e.name} is not a size of the kernel")
        return ["var", k]
    if isinstance(e, E.Cast):
        return ["Cast", e.dtype, _dim_data(e.value, index)]
    kind = type(e).__name__
    if kind not in _BINARY:
        raise ValueError(f"dimension expression {e!r} cannot be saved")
    return [kind, _dim_data(e.a, index), _dim_data(e.b, index)]


def _dim_expr(d, variables: list):
    """The expression ``_dim_data`` wrote, over ``variables``."""
    if isinstance(d, int) and not isinstance(d, bool):
        return d
    if not isinstance(d, list) or not d:
        raise ValueError(f"bad dimension record {d!r}")
    if d[0] == "var" and len(d) == 2 and isinstance(d[1], int) and 0 <= d[1] < len(variables):
        return variables[d[1]]
    if d[0] == "Cast" and len(d) == 3 and isinstance(d[1], str):
        return E.Cast(d[1], _operand(d[2], variables))
    if d[0] in _BINARY and len(d) == 3:
        return _BINARY[d[0]](_operand(d[1], variables), _operand(d[2], variables))
    raise ValueError(f"bad dimension record {d!r}")


def _operand(d, variables: list):
    e = _dim_expr(d, variables)
    return E.IntImm("int64", e) if isinstance(e, int) else e


# ------------------------------------------------------------------------------ records
def kernel_record(native, variables: list, in_shapes: list, out_shapes: list,
                  kvars: list) -> dict:
    """The record of a symbolic kernel: its native ``Kernel``, size ``variables``, input shapes,
    output (shape, dtype)s and the (input, axis) its entry reads each of its vars from;
    ValueError when part of it cannot be written as data."""
    unique = list({id(v): v for v in variables}.values())  # (an Any resolved to another's
    index = {id(v): k for k, v in enumerate(unique)}  # variable lists it twice)
    packs = [[int(pos), pack_record(fn)] for pos, fn in sorted(native.input_packs.items())]
    return {"version": RECORD_VERSION, "symbol": native.symbol,
            "pipeline": getattr(native.compiled, "opt", 3),
            "vars": [v.name for v in unique],
            "in": [[_dim_data(d, index) for d in s] for s in in_shapes],
            "out": [[[_dim_data(d, index) for d in s], str(dt)] for s, dt in out_shapes],
            "kvars": [[int(k), int(d)] for k, d in kvars],
            "packs": packs}


def restore(meta: dict) -> tuple:
    """``(variables, input shapes, output (shape, dtype)s, kernel var places, input packs)``
    of a record; ValueError when it is damaged or of another version."""
    if not isinstance(meta, dict) or meta.get("version") != RECORD_VERSION:
        raise ValueError(f"not a version {RECORD_VERSION} symbolic kernel record")
    try:
        variables = [E.Var(str(n), "int64") for n in meta["vars"]]
        in_shapes = [tuple(_dim_expr(d, variables) for d in s) for s in meta["in"]]
        out_shapes = [(tuple(_dim_expr(d, variables) for d in s), str(dt))
                      for s, dt in meta["out"]]
        kvars = [(int(k), int(d)) for k, d in meta["kvars"]]
        packs = {int(pos): pack_from_record(rec) for pos, rec in meta["packs"]}
    except (KeyError, TypeError) as err:
        raise ValueError(f"damaged symbolic kernel record: {type(err).__name__}: {err}") \
            from None
    for k, d in kvars:
        if not (0 <= k < len(in_shapes) and 0 <= d < len(in_shapes[k])):
            raise ValueError(f"symbolic kernel record: size place ({k}, {d}) is no input axis")
    return variables, in_shapes, out_shapes, kvars, packs


def consts_text(consts: list) -> str:
    """A kernel's constants as one line of text (base64 of an ``.npz``) for a saved kernel."""
    buf = io.BytesIO()
    np.savez(buf, *[np.asarray(c) for c in consts])
    return base64.b64encode(buf.getvalue()).decode()


def consts_from_text(text: str) -> list:
    """The constants ``consts_text`` wrote (never unpickled)."""
    with np.load(io.BytesIO(base64.b64decode(text)), allow_pickle=False) as npz:
        return [npz[f"arr_{k}"] for k in range(len(npz.files))]


# ------------------------------------------------------------------------------ disk cache
class RecordStore:
    """The on-disk records of symbolic kernels that one ``relay.vm.compile`` reads and writes
    (see the module doc); ``open()`` is None where the cache is off."""

    def __init__(self, cache, compiler: str):
        self.cache = cache
        self.compiler = compiler
        self._loaded: dict = {}  # key -> what ``load_many`` read (``_MISS``: nothing usable)
        self._keys: dict = {}  # (id(func), options, const inputs) -> (func, its key)

    @staticmethod
    def open(ctx: PassContext | None = None) -> RecordStore | None:
        """The store of a build in ``ctx`` (default: current), or None: the disk cache or the
        whole-build cache switched off, pass instruments, or op attributes registered from
        outside minitvm (whose code no key can see)."""
        from .. import build_cache

        ctx = ctx if ctx is not None else PassContext.current()
        cache = build_cache.enabled(ctx)
        if cache is None:
            return None
        ops = build_cache._op_registry_digest()
        if ops is None:
            return None
        cfg = []
        for k in sorted(getattr(ctx, "config", None) or {}):
            text = build_cache._plain(ctx.config[k])
            if text is None:
                return None
            cfg.append((k, text))
        env = sorted((k, v) for k, v in os.environ.items()
                     if k.startswith(("MINITVM_", "TVM_")) and k not in build_cache._ENV_IGNORED)
        head = json.dumps({"format": RECORD_VERSION, "codegen": CODEGEN_VERSION,
                           "package": build_cache.package_fingerprint(),
                           "host": jit.object_fingerprint(), "ops": ops, "config": cfg,
                           "opt_level": ctx.opt_level, "env": env}, sort_keys=True)
        return RecordStore(cache, hashlib.sha256(head.encode()).hexdigest())

    def key(self, func, options, const_inputs: frozenset) -> str | None:
        """The key of ``func``'s symbolic kernel, or None when it cannot have one (a tracing
        knob table, a function holding code)."""
        memo = (id(func), options, const_inputs)
        held = self._keys.get(memo)
        if held is not None and held[0] is func:
            return held[1]
        knobs = getattr(options, "knobs", None)
        if knobs is not None and getattr(knobs, "trace", False):
            return None
        try:
            digest = fingerprint(func)
        except Unfingerprintable:
            return None
        opts = {f: getattr(options, f) for f in ("native", "blas", "generated_conv",
                                                "generated_dense", "generated_batch_matmul")}
        head = json.dumps({"compiler": self.compiler, "func": digest, "options": opts,
                           "knobs": sorted((k, sorted(v.items()))
                                           for k, v in knobs.entries.items())
                           if knobs is not None else None,
                           "const_inputs": sorted(const_inputs)}, sort_keys=True, default=repr)
        key = "relay.vm.symbolic|" + hashlib.sha256(head.encode()).hexdigest()
        self._keys[memo] = (func, key)
        return key

    def load(self, key: str):
        """``(record, constants, compiled object, IR)``, or ``(error type, message)`` for a
        function the symbolic path refused, or None (absent, damaged, or its code does not
        load here)."""
        hit = self._loaded.pop(key, None)
        if hit is None:
            hit = self.load_many([key]).pop(key, None)
            self._loaded.pop(key, None)
        if hit is None or hit is _MISS:
            return None
        return hit

    def load_many(self, keys) -> dict:
        """Read the records of ``keys`` at once, their object code loaded into one engine
        (much cheaper than one each); ``load`` then returns them. Returns key -> hit."""
        from ..build_cache import _load_objects, read_payload

        values, objects = {}, {}
        for key in dict.fromkeys(keys):
            if key is None or key in self._loaded:
                continue
            data = self.cache.get_build(key)
            try:
                value = read_payload(data) if data is not None else None
                if value is not None and "error" not in value:
                    m = value["meta"]
                    objects[m["symbol"]] = (value["object"], int(m["pipeline"]), value["ir"],
                                            list(value["externals"]), list(value["defs"]))
            except Exception:  # noqa: BLE001  a damaged or foreign entry: lowered as usual
                value = None
            values[key] = value
        try:
            compiled = _load_objects(objects) if objects else {}
        except Exception:  # noqa: BLE001  (code that does not load here: lowered as usual)
            compiled = {}
        for key, value in values.items():
            hit = _MISS
            if value is not None and "error" in value:
                hit = (str(value["error"][0]), str(value["error"][1]))
            elif value is not None and value["meta"]["symbol"] in compiled:
                c = compiled[value["meta"]["symbol"]]
                hit = (value["meta"], list(value["consts"]), c, c.source_ir)
                remember_object(c.symbol, bytes(value["object"]), int(value["meta"]["pipeline"]))
            STATS["misses" if hit is _MISS else "hits"] += 1
            self._loaded[key] = hit
        return {k: self._loaded[k] for k in values}

    def store(self, key: str, made) -> bool:
        """Write the record of symbolic kernel ``made``; False when it cannot be saved (its
        object code was not kept, a part that is not data)."""
        from ..build_cache import payload_chunks

        native = made.native
        code = object_code(native.symbol)
        if code is None:
            return False
        try:
            meta = kernel_record(native, made.variables, made.in_shapes, made.out_shapes,
                                 made.kvars)
        except ValueError:
            return False
        from ..build_cache import _GLOBAL_DEFS

        obj, pipeline = code
        meta["pipeline"] = pipeline
        ir = native.ir
        chunks = payload_chunks({"meta": meta, "object": obj,
                                 "ir": zlib.compress(ir.encode(), 1),
                                 "externals": declared_externals(ir),
                                 "defs": [a or b for a, b in _GLOBAL_DEFS.findall(ir)],
                                 "consts": [np.ascontiguousarray(c) for c in native.consts]})
        return self._put(key, chunks)

    def store_error(self, key: str, err: Exception) -> bool:
        """Record that the symbolic path refused the function (``err``)."""
        from ..build_cache import payload_chunks

        return self._put(key, payload_chunks({"error": [type(err).__name__, str(err)]}))

    def _put(self, key: str, chunks) -> bool:
        if chunks is None:
            return False
        self.cache.put_build(key, chunks, trim=False)
        STATS["writes"] += 1
        return True

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
- an exported executable (the ``relay_symbolic`` kernel format, read and written here): the record,
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
import logging
import os
import threading
import zlib

import numpy as np

from ....backend.compile import made_for
from ....backend.target_cpu import loaded_cpu, saved_cpu
from ....codegen.build import (
    CODEGEN_VERSION,
    declared_externals,
    object_code,
    remember_object,
)
from ....ir.attrs import DictAttrs
from ....ir.fingerprint import Unfingerprintable, fingerprint
from ....runtime import jit
from ....runtime.module import Kernel, register_kernel_format
from ....schedule import LoweringOptions
from ....schedule.weight_packs import pack_from_record, pack_record
from ....tir import expr as E
from ....transform.context import PassContext
from ...expr import Function
from . import symbolic

__all__ = ["RecordStore", "STATS", "SavedFunction", "consts_from_text", "consts_text",
           "kernel_record", "read_saved", "restore", "saved_text"]

LOG = logging.getLogger(__name__)

RECORD_VERSION = 2  # (2: the shape rules' conditions, ``conds``)
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
                  kvars: list, conditions: list = ()) -> dict:
    """The record of a symbolic kernel: its native ``Kernel``, size ``variables``, input shapes,
    output (shape, dtype)s, the (input, axis) its entry reads each of its vars from and the
    conditions its shape rules assumed (``topi.shape_conditions``); ValueError when part of it
    cannot be written as data."""
    unique = list({id(v): v for v in variables}.values())  # (an Any resolved to another's
    index = {id(v): k for k, v in enumerate(unique)}  # variable lists it twice)
    packs = [[int(pos), pack_record(fn)] for pos, fn in sorted(native.input_packs.items())]
    return {"version": RECORD_VERSION, "symbol": native.symbol,
            "pipeline": getattr(native.compiled, "opt", 3),
            "vars": [v.name for v in unique],
            "in": [[_dim_data(d, index) for d in s] for s in in_shapes],
            "out": [[[_dim_data(d, index) for d in s], str(dt)] for s, dt in out_shapes],
            "kvars": [[int(k), int(d)] for k, d in kvars],
            "conds": [[str(kind), _dim_data(a, index), _dim_data(b, index)]
                      for kind, a, b in conditions],
            "packs": packs}


def restore(meta: dict) -> tuple:
    """``(variables, input shapes, output (shape, dtype)s, kernel var places, input packs,
    shape conditions)`` of a record; ValueError when it is damaged or of another version."""
    if not isinstance(meta, dict) or meta.get("version") != RECORD_VERSION:
        raise ValueError(f"not a version {RECORD_VERSION} symbolic kernel record")
    try:
        variables = [E.Var(str(n), "int64") for n in meta["vars"]]
        in_shapes = [tuple(_dim_expr(d, variables) for d in s) for s in meta["in"]]
        out_shapes = [(tuple(_dim_expr(d, variables) for d in s), str(dt))
                      for s, dt in meta["out"]]
        kvars = [(int(k), int(d)) for k, d in meta["kvars"]]
        packs = {int(pos): pack_from_record(rec) for pos, rec in meta["packs"]}
        conditions = [(_condition_kind(kind), _dim_expr(a, variables), _dim_expr(b, variables))
                      for kind, a, b in meta["conds"]]
    except (KeyError, TypeError) as err:
        raise ValueError(f"damaged symbolic kernel record: {type(err).__name__}: {err}") \
            from None
    for k, d in kvars:
        if not (0 <= k < len(in_shapes) and 0 <= d < len(in_shapes[k])):
            raise ValueError(f"symbolic kernel record: size place ({k}, {d}) is no input axis")
    return variables, in_shapes, out_shapes, kvars, packs, conditions


def _condition_kind(kind) -> str:
    if kind not in ("divisible", "equal", "greater"):
        raise ValueError(f"symbolic kernel record: unknown shape condition {kind!r}")
    return kind


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
# Relay op attributes consulted only for the ops a program calls (typing, computes, strategies,
# patterns, the passes' rewrites; ``target.<codegen>``: BYOC's annotations): one registered
# from outside minitvm leaves the records of functions not calling its op valid
PER_OP_ATTRS = frozenset({
    "FTypeRelation", "TOpPattern", "FNumpy", "FTECompute", "FTVMStrategy", "TNonComputational",
    "TNumpyOnly", "TOpIsStateful", "FInferArgTypes", "FInferCorrectLayout", "FTVMLegalize",
    "FTVMAlterOpLayout", "FTVMConvertOpLayout", "FTVMQnnCanonicalize", "FTVMQnnLegalize",
    "FTVMMixedPrecisionConversionType", "FPrimalGradient"})


class RecordStore:
    """The on-disk records of symbolic kernels that one ``relay.vm.compile`` reads and writes
    (see the module doc); ``open()`` is None where the cache is off."""

    def __init__(self, cache, compiler: str, per_function_ops: bool = False):
        self.cache = cache
        self.compiler = compiler
        # a built-in op's attribute set from outside minitvm: the compiler's digest leaves the
        # op registry out, and each key holds the changed attributes of the ops its function
        # calls (a function calling an op with such code gets no record)
        self.per_function_ops = per_function_ops
        self._loaded: dict = {}  # key -> what ``load_many`` read (``_MISS``: nothing usable)
        self._keys: dict = {}  # (id(func), options, const inputs) -> (func, its key)

    @staticmethod
    def open(ctx: PassContext | None = None) -> RecordStore | None:
        """The store of a build in ``ctx`` (default: current), or None: the disk cache or the
        whole-build cache switched off, pass instruments, or an op attribute from outside
        minitvm (whose code no key can see) that lowering may consult for ops the function
        does not call (an intrinsic's lowering, an unknown attribute). Where each such
        attribute is one of ``PER_OP_ATTRS`` (``relay.build``'s whole-build cache is off then)
        the records stay on, each key holding the attributes of the ops its function calls: a
        kernel depends on those only, the passes that made the function run at each build."""
        from .. import build_cache

        ctx = ctx if ctx is not None else PassContext.current()
        cache = build_cache.enabled(ctx)
        if cache is None:
            return None
        ops = build_cache.op_registry_digest(())  # (foreign ops: in each function's key)
        if ops is None and not all(attr in PER_OP_ATTRS or attr.startswith("target.")
                                   for _, attr in build_cache.foreign_op_attrs()):
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
        return RecordStore(cache, hashlib.sha256(head.encode()).hexdigest(),
                           per_function_ops=ops is None)

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
        from .. import build_cache

        called: set[str] = set()
        try:
            digest = fingerprint(func, called)
        except Unfingerprintable:
            return None
        # the changed attributes of the ops the function calls (foreign ops; built-in ones the
        # compiler's digest also holds unless ``per_function_ops``): never the whole registry
        # again, which ``open`` digested once for the store
        ops = build_cache.op_registry_digest(called, everywhere=False)
        if ops is None:
            return None
        opts = {f: getattr(options, f) for f in ("native", "blas", "generated_conv",
                                                "generated_dense", "generated_batch_matmul")}
        head = json.dumps({"compiler": self.compiler, "func": digest, "options": opts,
                           "ops": ops,
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
                remember_object(c, bytes(value["object"]), int(value["meta"]["pipeline"]))
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
                                 made.kvars, made.conditions)
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


# ------------------------------------------------------------------------------ exported files
SAVED_HEADER = "// minitvm relay_symbolic "


def saved_text(kernel: Kernel) -> str:
    """A symbolic kernel as saved: a header line (its name, the input positions fed by
    constants, and, for a native one, its record, constants and the length of its LLVM IR:
    ``saved``), the IR, then its Relay function (``te_compiler``'s text), which a load parses
    only for a shape the kernel cannot take."""
    from ..te_compiler import _kernel_text

    run = kernel.run
    head = {"name": kernel.name,
            "const_inputs": sorted(run._spec_args[3]) if isinstance(run, symbolic.SymbolicKernel) else []}
    cpu = saved_cpu(run._spec_args[2]) if isinstance(run, symbolic.SymbolicKernel) else None
    if cpu:
        head["cpu"] = cpu
    ir = ""
    if isinstance(run, symbolic.SymbolicKernel) and run.kernel.kind == "native" and run.kernel.ir:
        try:
            head["record"] = kernel_record(run.kernel, run.variables, run.in_shapes,
                                           run.out_shapes, run._kvars, run.conditions)
            head["consts"] = consts_text(run.kernel.consts)
            ir = run.kernel.ir
            head["ir_chars"] = len(ir)
            code = object_code(run.kernel.symbol)
            if code is not None and code[1] == head["record"]["pipeline"]:
                # the build's machine code, for a load on this host (elsewhere: the IR)
                head["object"] = base64.b64encode(code[0]).decode()
                head["host"] = jit.object_fingerprint()
        except ValueError as err:  # (a part that is not data: the load lowers it again)
            LOG.debug("%s saved without its native code: %s", kernel.name, err)
            head.pop("record", None)
    source = kernel.source
    text = source.text if isinstance(source, SavedFunction) else _kernel_text(source)
    return f"{SAVED_HEADER}{json.dumps(head)}\n{ir}{text}"


class SavedFunction:
    """The Relay function of a loaded symbolic kernel, kept as its saved text and parsed on
    first need (``function()``: the per-shape specialization of a shape the kernel cannot
    take), so a load does not parse every kernel's function."""

    __slots__ = ("text", "_func", "_lock")

    def __init__(self, text: str):
        self.text = text
        self._func = None
        self._lock = threading.Lock()

    def function(self) -> Function:
        from ..te_compiler import _read_kernel

        with self._lock:
            if self._func is None:
                func, _ = _read_kernel(self.text)
                self._func = Function(func.params, func.body, func.ret_type,
                                      attrs=DictAttrs({"Primitive": 1}))
            return self._func


def _read_native(meta: dict, ir: str, source: SavedFunction) -> symbolic.SymbolicKernel:
    """The native symbolic kernel a saved record describes: its IR compiled (through the
    IR-keyed object cache) as a native kernel of a library is, nothing lowered or scheduled."""
    from ....runtime.module import _compile_ir, recorded_pipeline
    from ....runtime.ndarray import aligned

    record = meta["record"]
    name = str(meta["name"])
    variables, in_shapes, out_shapes, kvars, packs, conditions = restore(record)
    where = f"saved symbolic kernel {name!r}"
    pipeline = recorded_pipeline(record, where)
    options = LoweringOptions(cpu=loaded_cpu(meta.get("cpu")))
    compiled = None
    with made_for(options):  # (the CPU the build made code for, where this host runs it)
        if "object" in meta and meta.get("host") == jit.object_fingerprint():
            try:  # the build's own machine code (the same numerics, no LLVM run)
                compiled = jit.load_object(base64.b64decode(meta["object"]), record["symbol"],
                                           ir, pipeline, declared_externals(ir))
            except ValueError as err:
                LOG.debug("%s: saved object code does not load here: %s", name, err)
        if compiled is None:
            compiled = _compile_ir(ir, record["symbol"], where, pipeline)
    consts = [aligned(c) for c in consts_from_text(meta["consts"])]
    native = Kernel(name, "native", symbol=compiled.symbol, address=compiled.address, ir=ir,
                    consts=consts, compiled=compiled, input_packs=packs)
    return symbolic.SymbolicKernel(native, variables, in_shapes, out_shapes, source, options,
                          frozenset(int(k) for k in meta["const_inputs"]), kvars, conditions)


def read_saved(text: str):
    """``(function, run)`` of a saved symbolic kernel: its native code and record read back
    (``_read_native``; the function a ``SavedFunction``); a kernel saved without them (or
    whose IR does not compile here) lowered again to one native kernel, or, where that fails
    here, the ops' numpy references with a warning."""
    from ..te_compiler import _read_kernel

    head, _, body = text.partition("\n")
    if not head.startswith(SAVED_HEADER):
        raise ValueError("not a relay_symbolic kernel (no header line)")
    meta = json.loads(head[len(SAVED_HEADER):])
    n = meta.get("ir_chars") if "record" in meta else None
    if isinstance(n, int) and 0 < n <= len(body):
        source = SavedFunction(body[n:])
        try:
            return source, _read_native(meta, body[:n], source)
        except (ValueError, KeyError, TypeError) as err:
            LOG.warning("saved symbolic kernel %s is lowered again: %s: %s", meta.get("name"),
                        type(err).__name__, err)
        body = body[n:]
    func, numpy_run = _read_kernel(body)
    func = Function(func.params, func.body, func.ret_type, attrs=DictAttrs({"Primitive": 1}))
    try:
        options = LoweringOptions(cpu=loaded_cpu(meta.get("cpu")))
        return func, symbolic.lower_symbolic(func, str(meta["name"]), options,
                                    frozenset(int(k) for k in meta["const_inputs"])).run
    except symbolic.LOWERING_ERRORS as err:
        LOG.warning("saved symbolic kernel %s runs in numpy: %s: %s", meta["name"],
                    type(err).__name__, err)
        return func, numpy_run


register_kernel_format(symbolic.SAVED_FORMAT, saved_text, read_saved, whole_kernel=True)

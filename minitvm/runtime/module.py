"""Runtime modules: the compiled kernels of a graph, ``export_library`` and ``load_module``.

An exported library is a zip archive (never a pickle) holding ``minitvm_lib.json`` (format tag,
kernel table), ``graph.json``, ``params.npz`` (read with ``allow_pickle=False``), the LLVM IR of
every native kernel and of the whole-graph entry, and the source of numpy-fallback kernels in the
text format of the dialect that made them. Loading JIT-compiles the IR for the host (the on-disk
object cache ``MINITVM_CACHE_DIR`` makes that fast); nothing of the compiler is needed for a
library of native kernels. A fallback kernel is read back by the kernel format registered under
its name (``register_kernel_format``; Relay registers ``"relay"``). A file that is not such an
archive is a ValueError naming the file and what is wrong.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import threading
import time
import zipfile

import numpy as np

from .bounded_cache import BoundedCache
from .gc_pause import gc_paused
from .ndarray import aligned

FORMAT = "minitvm-graph-lib"
VERSION = 2  # 2: members carry SHA-256 digests
# IR pass pipeline levels a native kernel may record (``jit.MINIMAL_PIPELINE`` is -1,
# ``jit.NO_SLP_PIPELINE`` -2)
PIPELINE_LEVELS = (-2, -1, 0, 1, 2, 3)
# (symbol, IR, pipeline, CPU) -> compiled kernel of loaded libraries: the most recent
# ``IR_CACHE_SIZE``, and any older one a live module still holds (weakly), so loading the same
# library again compiles nothing while a loop loading many distinct ones keeps a bounded number
# of dead kernels (their code, and the IR text each keeps: ``runtime.jit`` code arenas)
IR_CACHE_SIZE = 256
_IR_CACHE = BoundedCache("runtime.loaded_kernels", IR_CACHE_SIZE, weak=True)
_LOCK = threading.Lock()


class ProfileResult:
    """Seconds per call for each repeat; ``mean``, ``median``, ``min`` like TVM's."""

    def __init__(self, results):
        self.results = tuple(results)
        self.mean = float(np.mean(results))
        self.median = float(np.median(results))
        self.min = float(np.min(results))
        self.max = float(np.max(results))
        self.std = float(np.std(results))

    def __repr__(self):
        return f"ProfileResult(mean={self.mean:.6g} s, results={self.results})"

    def __str__(self):
        # TVM's BenchmarkResult table: five centred 12-wide columns in milliseconds
        names = ("mean (ms)", "median (ms)", "max (ms)", "min (ms)", "std (ms)")
        values = (self.mean, self.median, self.max, self.min, self.std)
        head = " ".join(f"{n:^12}" for n in names)
        row = " ".join(f"{v * 1000:^12.4f}" for v in values)
        return f"Execution time summary:\n{head}\n{row}" + " " * 15


BenchmarkResult = ProfileResult  # TVM's name (tvm.runtime.module.BenchmarkResult)


def time_calls(call, number: int, repeat: int, min_repeat_ms: int | None = 0) -> ProfileResult:
    """``repeat`` timings of ``number`` calls of ``call()`` each, as TVM's time_evaluator takes
    them: a round shorter than ``min_repeat_ms`` is taken again with twice the calls (and later
    rounds keep that count); seconds per call."""
    results, n = [], max(1, int(number))
    for _ in range(repeat):
        while True:
            t0 = time.perf_counter()
            for _ in range(n):
                call()
            dt = time.perf_counter() - t0
            if not min_repeat_ms or min_repeat_ms <= 0 or dt * 1000 >= min_repeat_ms:
                break
            n *= 2
        results.append(dt / n)
    return ProfileResult(results)


class Module:
    """Base of runtime modules (``tvm.runtime.Module``): ``mod[name]`` gets a function."""

    type_key = "module"

    def get_function(self, name: str, query_imports: bool = False):
        raise AttributeError(f"{type(self).__name__} has no function {name!r}")

    def __getitem__(self, name: str):
        return self.get_function(name)

    @property
    def imported_modules(self) -> list:
        return []


class Kernel:
    """One compiled kernel of a graph — the only record of it, from lowering to the executor.

    ``kind`` is ``"native"`` (machine code: ``symbol``/``address``, its LLVM ``ir``, the
    ``prim_func`` it came from, ``kernel`` a checked callable) or ``"fallback"`` (run by numpy:
    ``run(list of arrays) -> list of arrays``; ``reason`` says why it is not native, ``error``
    is set when that is a failure of native lowering rather than a choice). ``source``
    is the dialect function it was lowered from, written to exported files in ``source_format``.
    Native kernels take ``(*inputs, *consts, *outputs[, workspace])``; ``input_packs`` maps an
    input position fed by a constant to the numpy transform (layout) the kernel wants it in.
    """

    __slots__ = ("name", "kind", "symbol", "address", "ir", "ws_bytes", "consts", "reason",
                 "compiled", "kernel", "prim_func", "input_packs", "source", "source_format",
                 "run", "error")

    def __init__(self, name: str, kind: str, *, symbol: str = "", address: int = 0, ir: str = "",
                 ws_bytes: int = 0, consts=(), reason: str = "", compiled=None, kernel=None,
                 prim_func=None, input_packs=None, source=None, source_format: str = "",
                 run=None, error: str = ""):
        self.name = name
        self.kind = kind
        self.symbol = symbol
        self.address = address
        self.ir = ir
        self.ws_bytes = ws_bytes
        self.consts = list(consts)
        self.reason = reason
        self.compiled = compiled
        self.kernel = kernel
        self.prim_func = prim_func
        self.input_packs = dict(input_packs or {})
        self.source = source
        self.source_format = source_format
        self.run = run
        self.error = error

    def renamed(self, name: str, source=None) -> Kernel:
        """The same compiled code under another name (and source), e.g. from a kernel cache."""
        return Kernel(name, self.kind, symbol=self.symbol, address=self.address, ir=self.ir,
                      ws_bytes=self.ws_bytes, consts=self.consts, reason=self.reason,
                      compiled=self.compiled, kernel=self.kernel, prim_func=self.prim_func,
                      input_packs=self.input_packs,
                      source=self.source if source is None else source,
                      source_format=self.source_format, run=self.run, error=self.error)

    def __repr__(self):
        return f"Kernel({self.name!r}, {self.kind})"


# kernel source format name -> (write(source) -> text, read(text) -> (source, run), whether
# write takes the whole Kernel)
_KERNEL_FORMATS: dict[str, tuple] = {}


def register_kernel_format(name: str, write, read, whole_kernel: bool = False) -> None:
    """How fallback kernels of one dialect are saved: ``write(source) -> str`` (with
    ``whole_kernel``: ``write(kernel)``, for a format that records more than the source) and
    ``read(text) -> (source, run)``, ``run`` mapping a list of input arrays to the outputs."""
    _KERNEL_FORMATS[name] = (write, read, whole_kernel)


class GraphLib(Module):
    """The compiled code of a graph (``factory.get_lib()``): kernels and the whole-graph entry."""

    type_key = "llvm"

    def __init__(self, kernels: dict[str, Kernel], entry=None, blas: str = ""):
        self.kernels = kernels
        self.entry = entry  # (ir, symbol, compiled) or None
        self.blas = blas

    def export_library(self, path: str, *args, **kwargs) -> None:
        """Write the kernels alone; ``load_module(path)`` returns them as a GraphLib (TVM's
        ``code, lib = vm_exec.save(); lib.export_library(path)``)."""
        export_library(self, path)

    def get_function(self, name: str, query_imports: bool = False):
        k = self.kernels.get(name)
        if k is None:
            raise AttributeError(f"library has no function {name!r}; it has "
                                 f"{sorted(self.kernels)}")
        if k.kernel is not None:
            return k.kernel
        if k.kind == "fallback" and k.run is not None:
            return lambda *args: k.run([np.asarray(a) for a in args])
        raise AttributeError(f"kernel {name!r} was loaded from a file; call it through the "
                             "graph executor")

    @property
    def native_functions(self) -> list[str]:
        return [n for n, k in self.kernels.items() if k.kind == "native"]

    @property
    def fallback_functions(self) -> dict[str, str]:
        """Kernels run by numpy, with the reason they are not native."""
        return {n: k.reason for n, k in self.kernels.items() if k.kind != "native"}

    def summary(self) -> str:
        """One line per kernel: native or numpy fallback (and why)."""
        lines = []
        for n, k in self.kernels.items():
            tail = "" if k.kind == "native" else f"  ({k.reason})"
            lines.append(f"{k.kind:8s} {n}{tail}")
        if self.entry is not None:
            entry = "yes"
        elif self.fallback_functions:
            entry = "no (some kernels run in numpy)"
        else:  # (too many steps to compile one: the executor runs runtime.step_loop)
            entry = "no (a large graph: the native step loop runs its kernels)"
        lines.append(f"whole-graph native entry: {entry}; GEMM via {self.blas or 'generated code'}")
        return "\n".join(lines)

    def get_source(self, fmt: str = "ll") -> str:
        parts = [k.ir for k in self.kernels.values() if k.kind == "native"]
        if self.entry is not None:
            parts.append(self.entry[0])
        return "\n".join(parts)

    def __repr__(self):
        return (f"GraphLib(native={len(self.native_functions)}, "
                f"fallback={len(self.fallback_functions)})")


# ------------------------------------------------------------------------------ export / load
def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# Members written uncompressed: trained or random float weights barely deflate (MobileNet's
# 13 MB of params by 8%) and compressing them was 80% of export_library's 0.43 s
_STORED = {"params.npz": zipfile.ZIP_STORED}


def export_library(factory, path: str) -> None:
    """Write ``factory`` (graph json, params, kernels) to ``path`` as a minitvm archive.

    Every member's SHA-256 is recorded, so a loaded file is exactly what was written. The
    archive is written to a temporary file renamed into place; a failure removes it.
    """
    # a GraphLib alone (the kernels a Relay VM executable's save() returns) has no graph
    kernels_only = isinstance(factory, GraphLib)
    lib: GraphLib = factory if kernels_only else factory.get_lib()
    table = {}
    arrays = {f"param:{k}": np.asarray(v.numpy() if hasattr(v, "numpy") else v)
              for k, v in ({} if kernels_only else factory.get_params()).items()}
    files = {}
    for name, k in lib.kernels.items():
        info = {"kind": k.kind, "symbol": k.symbol, "ws_bytes": k.ws_bytes,
                "num_consts": len(k.consts), "reason": k.reason}
        for j, c in enumerate(k.consts):
            arrays[f"kconst:{name}:{j}"] = c
        if k.kind == "native":
            files[f"kernels/{name}.ll"] = k.ir
            info.update(pipeline_record(k))
        else:
            fmt = _KERNEL_FORMATS.get(k.source_format)
            if fmt is None:
                raise ValueError(f"export_library: fallback kernel {name!r} has no saveable "
                                 f"source (format {k.source_format!r} is not registered)")
            info["format"] = k.source_format
            files[f"kernels/{name}.{k.source_format}"] = fmt[0](k if fmt[2] else k.source)
        table[name] = info
    if lib.entry is not None:
        files["entry.ll"] = lib.entry[0]
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    graph_json = "{}" if kernels_only else factory.get_graph_json()
    members = {"graph.json": graph_json.encode(), "params.npz": buf.getvalue()}
    members.update((f, t.encode()) for f, t in files.items())
    meta = {"format": FORMAT, "version": VERSION, "kernels": table, "blas": lib.blas,
            "entry_symbol": lib.entry[1] if lib.entry is not None else None,
            "sha256": {f: _sha256(b) for f, b in members.items()}}
    if kernels_only:
        meta["kernels_only"] = True
    meta["meta_sha256"] = _meta_digest(meta)
    tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
    try:
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr("minitvm_lib.json", json.dumps(meta, indent=1))
            for fname, data in members.items():
                z.writestr(fname, data, compress_type=_STORED.get(fname, zipfile.ZIP_DEFLATED))
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


def _read_fallback(fmt_name: str, text: str, where: str):
    fmt = _KERNEL_FORMATS.get(fmt_name)
    if fmt is None:
        raise ValueError(f"{where}: a fallback kernel in format {fmt_name!r}, which no imported "
                         f"dialect reads (import the dialect that wrote it, e.g. minitvm.relay)")
    try:
        return fmt[1](text)
    except Exception as err:  # a damaged kernel text
        raise ValueError(f"{where}: cannot read the fallback kernel: {err}") from err


_SYMBOL = re.compile(r"[A-Za-z_.$][A-Za-z0-9_.$]{0,200}")


def _check_symbol(ir: str, symbol, where: str) -> None:
    """A symbol must be a plain identifier that the IR defines (LLVM aborts the process on
    some malformed names, e.g. an empty one)."""
    if not isinstance(symbol, str) or not _SYMBOL.fullmatch(symbol):
        raise ValueError(f"{where}: symbol {symbol!r} is not a valid function name")
    if not re.search(r"define [^\n]*@\"?" + re.escape(symbol) + r"\"?\(", ir):
        raise ValueError(f"{where}: symbol {symbol!r} is not defined by its LLVM IR")


def pipeline_record(k: Kernel) -> dict:
    """The archive's record of the IR pipeline level native kernel ``k`` was compiled at
    (loaded, its IR goes through the same pipeline), or nothing when it is not known."""
    level = getattr(k.compiled, "opt", None)
    return {"pipeline": level} if level in PIPELINE_LEVELS else {}


def recorded_pipeline(info: dict, where: str) -> int:
    """The IR pipeline level a kernel's archive entry records (3, LLVM's full pipeline, for
    archives written before it was recorded)."""
    level = info.get("pipeline", 3)
    if isinstance(level, bool) or level not in PIPELINE_LEVELS:
        raise ValueError(f"{where}: field 'pipeline' must be one of {list(PIPELINE_LEVELS)}, "
                         f"got {level!r}")
    return level


def _compile_ir(ir: str, symbol: str, where: str, pipeline: int = 3):
    """``ir`` compiled through LLVM's IR pass pipeline of level ``pipeline`` (the one the build
    chose for the kernel: ``codegen.build.ir_pipeline_level``), machine code at O3 (O0 for a
    kernel built at pipeline 0), as ``codegen.build.compile_prim_func`` compiles it."""
    from . import jit

    _check_symbol(ir, symbol, where)
    key = (symbol, ir, pipeline, jit.host_cpu())  # (the CPU made for: a build's -mcpu)
    with _LOCK:
        hit = _IR_CACHE.get(key)
    if hit is not None:
        return hit
    try:
        compiled = jit.compile_ir(ir, symbol, pipeline, 3 if pipeline else 0)
    except Exception as err:
        raise ValueError(f"{where}: the LLVM IR does not compile: {err}") from err
    if not compiled.address:
        raise ValueError(f"{where}: symbol {symbol!r} is missing from the LLVM IR")
    with _LOCK:
        _IR_CACHE[key] = compiled
    return compiled


def _read_members(path: str) -> tuple[dict, dict[str, bytes]]:
    """The archive's ``minitvm_lib.json`` (checked) and its members, each digest-verified."""
    try:
        with zipfile.ZipFile(path) as z:
            names = z.namelist()
            if "minitvm_lib.json" not in names:
                raise ValueError(f"load_module: {path!r} is not a minitvm library "
                                 "(minitvm_lib.json is missing)")
            raw = {}
            for n in names:
                try:
                    raw[n] = z.read(n)
                except Exception as err:  # CRC, zlib, truncation
                    raise ValueError(f"load_module: {path!r} member {n!r} is damaged: "
                                     f"{type(err).__name__}: {err}") from None
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, NotImplementedError,
            RuntimeError) as err:
        raise ValueError(f"load_module: {path!r} is damaged: {type(err).__name__}: "
                         f"{err}") from None
    for n in ("graph.json", "params.npz"):
        if n not in raw:
            raise ValueError(f"load_module: {path!r} is damaged: member {n!r} is missing")
    return read_meta(raw, path, "minitvm_lib.json", FORMAT, VERSION), raw


def read_meta(raw: dict[str, bytes], path: str, member: str, fmt: str, version) -> dict:
    """The JSON object in archive member ``member``, refused with a ValueError naming the file
    and the member unless it is valid JSON of format ``fmt`` and version ``version``."""
    where = f"load_module: {path!r} member {member!r}"
    try:
        meta = json.loads(raw[member])
    except (ValueError, RecursionError) as err:
        raise ValueError(f"{where} is not valid JSON: {str(err)[:200]}") from None
    if not isinstance(meta, dict):
        raise ValueError(f"{where} must be a JSON object")
    if meta.get("format") != fmt or meta.get("version") != version:
        raise ValueError(f"load_module: {path!r} has format {meta.get('format')!r} version "
                         f"{meta.get('version')!r}; expected {fmt!r} version {version} "
                         "(re-export it with this minitvm)")
    return meta


def _meta_digest(meta: dict) -> str:
    body = {k: v for k, v in meta.items() if k != "meta_sha256"}
    return _sha256(json.dumps(body, sort_keys=True).encode())


def _verify_digests(meta: dict, raw: dict[str, bytes], path: str) -> None:
    """Every member (and the kernel table itself) must be byte-identical to what
    export_library wrote: fields such as a kernel's workspace size cannot be checked against
    the machine code, so an edited file is refused instead of corrupting memory."""
    where = f"load_module: {path!r} member 'minitvm_lib.json'"
    digests = meta.get("sha256")
    if not isinstance(digests, dict):
        raise ValueError(f"{where}: field 'sha256' must map member names to digests")
    if meta.get("meta_sha256") != _meta_digest(meta):
        raise ValueError(f"{where} was modified or damaged (its SHA-256 differs from the one "
                         "recorded at export)")
    for n in ("graph.json", "params.npz"):
        if n not in digests:
            raise ValueError(f"{where}: field 'sha256' lacks the required member {n!r}")
    check_member_digests(raw, digests, path, "minitvm_lib.json")


def check_member_digests(raw: dict[str, bytes], digests: dict, path: str, meta: str) -> None:
    """Every archive member but ``meta`` is listed in ``digests`` and hashes to its entry."""
    for n in raw:
        if n != meta and n not in digests:
            raise ValueError(f"load_module: {path!r} member {n!r} was not written by "
                             "export_library")
    for n, digest in digests.items():
        if n not in raw:
            raise ValueError(f"load_module: {path!r} member {n!r} is missing")
        if not isinstance(digest, str) or _sha256(raw[n]) != digest:
            raise ValueError(f"load_module: {path!r} member {n!r} was modified or damaged "
                             "(its SHA-256 differs from the one recorded at export)")


def _field(info: dict, key: str, kind, where: str, default=None):
    v = info.get(key, default)
    ok = isinstance(v, kind) and not (kind is int and isinstance(v, bool))
    if not ok or (kind is int and v < 0):
        raise ValueError(f"{where}: field {key!r} must be a "
                         f"{'non-negative integer' if kind is int else kind.__name__}, got {v!r}")
    return v


def _load_arrays(data: bytes, path: str) -> dict:
    where = f"load_module: {path!r} member 'params.npz'"
    if not zipfile.is_zipfile(io.BytesIO(data)):
        raise ValueError(f"{where} is not an .npz archive")
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as npz:
            arrays = {k: npz[k] for k in npz.files}
    except Exception as err:
        raise ValueError(f"{where} is damaged: {type(err).__name__}: {err}") from None
    for k, a in arrays.items():
        if a.dtype.hasobject or a.dtype.kind not in "biuf":
            raise ValueError(f"{where}: array {k!r} has the unsupported dtype {a.dtype}")
    return arrays


@gc_paused  # (a 100k-step graph: its JSON, plan and kernels are millions of objects)
def load_module(path: str, fmt: str = ""):
    """Load a library written by ``export_library``: the graph executor factory (or the
    kernels alone, for a library exported from a GraphLib)."""
    from . import blas, jit
    from .graph_check import check_graph, parse_graph_json
    from .graph_executor import GraphExecutorFactoryModule

    if not isinstance(path, str | os.PathLike):
        raise ValueError(f"load_module: expected a file path, got {type(path).__name__}")
    path = os.fspath(path)
    if not os.path.exists(path):
        raise ValueError(f"load_module: no such file {path!r}")
    if not zipfile.is_zipfile(path):
        raise ValueError(f"load_module: {path!r} is not a minitvm library (not a zip archive)")
    from .relax_vm.executable import load_relax_executable  # a Relax VM executable?

    relax_exec = load_relax_executable(path)
    if relax_exec is not None:
        return relax_exec
    meta, raw = _read_members(path)
    try:
        graph_json = raw["graph.json"].decode()
    except UnicodeDecodeError as err:
        raise ValueError(f"load_module: {path!r} member 'graph.json' is not text: {err}") from None
    arrays = _load_arrays(raw["params.npz"], path)
    where_meta = f"load_module: {path!r} member 'minitvm_lib.json'"
    table = meta.get("kernels")
    if not isinstance(table, dict):
        raise ValueError(f"{where_meta}: field 'kernels' must be an object")
    if not isinstance(meta.get("blas", ""), str):
        raise ValueError(f"{where_meta}: field 'blas' must be a string")
    infos = {}
    for name, info in table.items():
        where = f"{where_meta} kernel {name!r}"
        if not isinstance(info, dict):
            raise ValueError(f"{where}: must be an object")
        kind = _field(info, "kind", str, where)
        if kind not in ("native", "fallback"):
            raise ValueError(f"{where}: field 'kind' must be 'native' or 'fallback', got {kind!r}")
        _field(info, "ws_bytes", int, where, 0)
        _field(info, "num_consts", int, where, 0)
        _field(info, "reason", str, where, "")
        if kind == "native":
            _field(info, "symbol", str, where)
            recorded_pipeline(info, where)
        else:
            _field(info, "format", str, where, "relay")
        infos[name] = info

    def text(member: str, where: str) -> str | None:
        data = raw.get(member)
        if data is None:
            return None
        try:
            return data.decode()
        except UnicodeDecodeError as err:
            raise ValueError(f"{where}: member {member!r} is not text: {err}") from None

    if any(info["kind"] == "native" for info in infos.values()):
        blas.available()  # kernels may call the BLAS shim
    kernels = {}
    for name, info in infos.items():
        where = f"load_module({path!r}) kernel {name!r}"
        consts = []
        for j in range(info.get("num_consts", 0)):
            c = arrays.get(f"kconst:{name}:{j}")
            if c is None:
                raise ValueError(f"{where}: constant {j} is missing from member 'params.npz'")
            consts.append(aligned(c))  # (as read from the archive, at any address)
        if info["kind"] == "native":
            ir = text(f"kernels/{name}.ll", where)
            if ir is None:
                raise ValueError(f"{where}: its LLVM IR (member 'kernels/{name}.ll') is missing")
            compiled = _compile_ir(ir, info["symbol"], where, recorded_pipeline(info, where))
            kernels[name] = Kernel(name, "native", symbol=info["symbol"],
                                   address=compiled.address, ir=ir,
                                   ws_bytes=info.get("ws_bytes", 0), consts=consts,
                                   compiled=compiled)
        else:
            kfmt = info.get("format", "relay")
            src_text = text(f"kernels/{name}.{kfmt}", where)
            if src_text is None:
                raise ValueError(f"{where}: its {kfmt} source is missing")
            source, run = _read_fallback(kfmt, src_text, where)
            kernels[name] = Kernel(name, "fallback", consts=consts, reason=info.get("reason", ""),
                                   source=source, source_format=kfmt, run=run)
    kernels_only = meta.get("kernels_only", False)
    if kernels_only is not True and kernels_only is not False:
        raise ValueError(f"{where_meta}: field 'kernels_only' must be a boolean")
    where_graph = f"load_module: {path!r} member 'graph.json'"
    graph = None if kernels_only else parse_graph_json(graph_json, where_graph)
    plan = None if kernels_only else check_graph(graph, kernels, where_graph)
    entry = None
    symbol = meta.get("entry_symbol")
    if symbol is not None:
        if not isinstance(symbol, str):
            raise ValueError(f"{where_meta}: field 'entry_symbol' must be a string or null")
        ir = text("entry.ll", where_meta)
        if ir is None:
            raise ValueError(f"load_module: {path!r} is damaged: entry.ll is missing")
        _check_symbol(ir, symbol, f"load_module: {path!r} member 'entry.ll'")
        addrs = {k.symbol: k.address for k in kernels.values() if k.kind == "native"}
        try:
            compiled = jit.link_entry(ir, symbol, addrs)
        except Exception as err:
            raise ValueError(f"load_module: {path!r} member 'entry.ll' does not compile: "
                             f"{err}") from None
        entry = (ir, symbol, compiled)
    lib = GraphLib(kernels, entry, meta.get("blas", ""))
    if kernels_only:  # the kernels alone (e.g. for Executable.load_exec)
        _verify_digests(meta, raw, path)
        return lib
    params = {k[len("param:"):]: v for k, v in arrays.items() if k.startswith("param:")}
    for name, value in params.items():
        e = plan["inputs"].get(name)
        if e is not None and (plan["entries"][e][2] != value.shape
                              or plan["entries"][e][1] != value.dtype):
            raise ValueError(f"load_module: {path!r} member 'params.npz': parameter {name!r} "
                             f"has shape {value.shape} {value.dtype}, the graph expects "
                             f"{plan['entries'][e][2]} {plan['entries'][e][1]}")
    _verify_digests(meta, raw, path)
    factory = GraphExecutorFactoryModule(graph_json, lib, params, "default")
    factory._set_checked(graph, plan)
    return factory

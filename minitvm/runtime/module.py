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

import io
import json
import os
import threading
import zipfile

import numpy as np

FORMAT = "minitvm-graph-lib"
VERSION = 1
_IR_CACHE: dict[tuple[str, str], object] = {}
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
    ``run(list of arrays) -> list of arrays``; ``reason`` says why it is not native). ``source``
    is the dialect function it was lowered from, written to exported files in ``source_format``.
    Native kernels take ``(*inputs, *consts, *outputs[, workspace])``; ``input_packs`` maps an
    input position fed by a constant to the numpy transform (layout) the kernel wants it in.
    """

    __slots__ = ("name", "kind", "symbol", "address", "ir", "ws_bytes", "consts", "reason",
                 "compiled", "kernel", "prim_func", "input_packs", "source", "source_format",
                 "run")

    def __init__(self, name: str, kind: str, *, symbol: str = "", address: int = 0, ir: str = "",
                 ws_bytes: int = 0, consts=(), reason: str = "", compiled=None, kernel=None,
                 prim_func=None, input_packs=None, source=None, source_format: str = "",
                 run=None):
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

    def renamed(self, name: str, source=None) -> Kernel:
        """The same compiled code under another name (and source), e.g. from a kernel cache."""
        return Kernel(name, self.kind, symbol=self.symbol, address=self.address, ir=self.ir,
                      ws_bytes=self.ws_bytes, consts=self.consts, reason=self.reason,
                      compiled=self.compiled, kernel=self.kernel, prim_func=self.prim_func,
                      input_packs=self.input_packs,
                      source=self.source if source is None else source,
                      source_format=self.source_format, run=self.run)

    def __repr__(self):
        return f"Kernel({self.name!r}, {self.kind})"


# kernel source format name -> (write(source) -> text, read(text) -> (source, run))
_KERNEL_FORMATS: dict[str, tuple] = {}


def register_kernel_format(name: str, write, read) -> None:
    """How fallback kernels of one dialect are saved: ``write(source) -> str`` and
    ``read(text) -> (source, run)``, ``run`` mapping a list of input arrays to the outputs."""
    _KERNEL_FORMATS[name] = (write, read)


class GraphLib(Module):
    """The compiled code of a graph (``factory.get_lib()``): kernels and the whole-graph entry."""

    type_key = "llvm"

    def __init__(self, kernels: dict[str, Kernel], entry=None, blas: str = ""):
        self.kernels = kernels
        self.entry = entry  # (ir, symbol, compiled) or None
        self.blas = blas

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
        entry = "yes" if self.entry is not None else "no (some kernels run in numpy)"
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
def export_library(factory, path: str) -> None:
    """Write ``factory`` (graph json, params, kernels) to ``path`` as a minitvm archive."""
    lib: GraphLib = factory.get_lib()
    table = {}
    arrays = {f"param:{k}": np.asarray(v.numpy() if hasattr(v, "numpy") else v)
              for k, v in factory.get_params().items()}
    files = {}
    for name, k in lib.kernels.items():
        info = {"kind": k.kind, "symbol": k.symbol, "ws_bytes": k.ws_bytes,
                "num_consts": len(k.consts), "reason": k.reason}
        for j, c in enumerate(k.consts):
            arrays[f"kconst:{name}:{j}"] = c
        if k.kind == "native":
            files[f"kernels/{name}.ll"] = k.ir
        else:
            fmt = _KERNEL_FORMATS.get(k.source_format)
            if fmt is None:
                raise ValueError(f"export_library: fallback kernel {name!r} has no saveable "
                                 f"source (format {k.source_format!r} is not registered)")
            info["format"] = k.source_format
            files[f"kernels/{name}.{k.source_format}"] = fmt[0](k.source)
        table[name] = info
    meta = {"format": FORMAT, "version": VERSION, "kernels": table, "blas": lib.blas,
            "entry_symbol": lib.entry[1] if lib.entry is not None else None}
    if lib.entry is not None:
        files["entry.ll"] = lib.entry[0]
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    tmp = f"{path}.{os.getpid()}.tmp"
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("minitvm_lib.json", json.dumps(meta, indent=1))
        z.writestr("graph.json", factory.get_graph_json())
        z.writestr("params.npz", buf.getvalue())
        for fname, text in files.items():
            z.writestr(fname, text)
    os.replace(tmp, path)


def _read_fallback(fmt_name: str, text: str, where: str):
    fmt = _KERNEL_FORMATS.get(fmt_name)
    if fmt is None:
        raise ValueError(f"{where}: a fallback kernel in format {fmt_name!r}, which no imported "
                         f"dialect reads (import the dialect that wrote it, e.g. minitvm.relay)")
    try:
        return fmt[1](text)
    except Exception as err:  # a damaged kernel text
        raise ValueError(f"{where}: cannot read the fallback kernel: {err}") from err


def _compile_ir(ir: str, symbol: str, where: str):
    from . import jit

    key = (symbol, ir)
    with _LOCK:
        hit = _IR_CACHE.get(key)
    if hit is not None:
        return hit
    try:
        compiled = jit.compile_ir(ir, symbol)
    except Exception as err:
        raise ValueError(f"{where}: the LLVM IR does not compile: {err}") from err
    if not compiled.address:
        raise ValueError(f"{where}: symbol {symbol!r} is missing from the LLVM IR")
    with _LOCK:
        _IR_CACHE[key] = compiled
    return compiled


def load_module(path: str, fmt: str = ""):
    """Load a library written by ``export_library``; returns the graph executor factory."""
    from . import blas, jit
    from .graph_executor import GraphExecutorFactoryModule

    if not os.path.exists(path):
        raise ValueError(f"load_module: no such file {path!r}")
    if not zipfile.is_zipfile(path):
        raise ValueError(f"load_module: {path!r} is not a minitvm library (not a zip archive)")
    try:
        with zipfile.ZipFile(path) as z:
            names = set(z.namelist())
            if "minitvm_lib.json" not in names:
                raise ValueError(f"load_module: {path!r} is not a minitvm library "
                                 "(minitvm_lib.json is missing)")
            meta = json.loads(z.read("minitvm_lib.json"))
            if meta.get("format") != FORMAT or meta.get("version") != VERSION:
                raise ValueError(f"load_module: {path!r} has format {meta.get('format')!r} "
                                 f"version {meta.get('version')!r}; expected {FORMAT!r} "
                                 f"version {VERSION}")
            graph_json = z.read("graph.json").decode()
            json.loads(graph_json)
            npz = np.load(io.BytesIO(z.read("params.npz")), allow_pickle=False)
            arrays = {k: npz[k] for k in npz.files}
            texts = {n: z.read(n).decode() for n in names if n.startswith("kernels/")
                     or n == "entry.ll"}
    except (zipfile.BadZipFile, KeyError, UnicodeDecodeError, json.JSONDecodeError,
            OSError, EOFError) as err:
        raise ValueError(f"load_module: {path!r} is damaged: {err}") from err
    if any(info["kind"] == "native" for info in meta["kernels"].values()):
        blas.available()  # kernels may call the BLAS shim
    kernels = {}
    for name, info in meta["kernels"].items():
        consts = [arrays[f"kconst:{name}:{j}"] for j in range(info["num_consts"])]
        where = f"load_module({path!r}) kernel {name!r}"
        if info["kind"] == "native":
            ir = texts.get(f"kernels/{name}.ll")
            if ir is None:
                raise ValueError(f"{where}: its LLVM IR is missing")
            compiled = _compile_ir(ir, info["symbol"], where)
            kernels[name] = Kernel(name, "native", symbol=info["symbol"],
                                   address=compiled.address, ir=ir, ws_bytes=info["ws_bytes"],
                                   consts=consts, compiled=compiled)
        else:
            fmt = info.get("format", "relay")
            text = texts.get(f"kernels/{name}.{fmt}")
            if text is None:
                raise ValueError(f"{where}: its {fmt} source is missing")
            source, run = _read_fallback(fmt, text, where)
            kernels[name] = Kernel(name, "fallback", consts=consts, reason=info.get("reason", ""),
                                   source=source, source_format=fmt, run=run)
    entry = None
    if meta.get("entry_symbol"):
        ir = texts.get("entry.ll")
        if ir is None:
            raise ValueError(f"load_module: {path!r} is damaged: entry.ll is missing")
        addrs = {k.symbol: k.address for k in kernels.values() if k.kind == "native"}
        compiled = jit.link_entry(ir, meta["entry_symbol"], addrs)
        entry = (ir, meta["entry_symbol"], compiled)
    lib = GraphLib(kernels, entry, meta.get("blas", ""))
    params = {k[len("param:"):]: v for k, v in arrays.items() if k.startswith("param:")}
    return GraphExecutorFactoryModule(graph_json, lib, params, "default")

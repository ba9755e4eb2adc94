"""The JIT loader: LLVM IR to machine code in this process (host target, O3 pipeline, MCJIT), the
on-disk object cache, and linking a whole-graph entry against kernels already loaded.

It lives in the runtime because loading an exported library needs it and nothing of the compiler:
the code generator (``minitvm.codegen``) produces the IR and calls ``compile_ir`` too.

``MINITVM_CACHE_DIR`` names a directory of object files keyed by a hash of the LLVM IR and the
host CPU; a cached object is loaded into MCJIT without running LLVM's optimizer or codegen.
"""

from __future__ import annotations

import hashlib
import os
import threading

import llvmlite
import llvmlite.binding as llvm

from . import threadpool

_LOCK = threading.RLock()
_READY = False


def init() -> None:
    """Initialize LLVM's native target once; make the thread pool's symbols known to the JIT."""
    global _READY
    if _READY:
        return
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    for name, addr in threadpool.gomp_symbol_addresses().items():
        llvm.add_symbol(name, addr)
    _READY = True


def host_cpu() -> tuple[str, str]:
    """(cpu name, feature string) of the machine we run on."""
    init()
    return llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten()


def target_machine(opt: int = 3):
    cpu, features = host_cpu()
    target = llvm.Target.from_triple(llvm.get_process_triple())
    return target.create_target_machine(cpu=cpu, features=features, opt=opt, jit=True)


def optimize(mod, tm, opt: int = 3) -> None:
    """Run LLVM's standard O``opt`` module pipeline (with loop and SLP vectorization)."""
    pto = llvm.create_pipeline_tuning_options(speed_level=opt)
    pto.loop_vectorization = opt >= 2
    pto.slp_vectorization = opt >= 2
    pto.loop_unrolling = opt >= 2
    pb = llvm.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(mod, pb)


class CompiledObject:
    """A finalized MCJIT engine holding one kernel; keeps the engine alive."""

    __slots__ = ("engine", "address", "py_address", "symbol", "optimized_ir", "from_disk")

    def __init__(self, engine, address: int, symbol: str, optimized_ir: str | None, from_disk):
        self.engine = engine
        self.address = address
        # the tuple-of-ndarrays entry (0 when the kernel has scalar or shape variables)
        self.py_address = engine.get_function_address(symbol + "_py") if address else 0
        self.symbol = symbol
        self.optimized_ir = optimized_ir
        self.from_disk = from_disk


def _cache_path(ir_text: str) -> str | None:
    root = os.environ.get("MINITVM_CACHE_DIR")
    if not root:
        return None
    cpu, features = host_cpu()
    key = hashlib.sha256("\0".join([ir_text, cpu, features, llvmlite.__version__]).encode())
    return os.path.join(root, key.hexdigest()[:40] + ".o")


def compile_ir(ir_text: str, symbol: str, opt: int = 3) -> CompiledObject:
    """Optimize and JIT-compile ``ir_text``; return the address of ``symbol``."""
    with _LOCK:
        init()
        tm = target_machine(opt)
        path = _cache_path(ir_text)
        if path and os.path.exists(path):
            with open(path, "rb") as f:
                data = f.read()
            engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), tm)
            engine.add_object_file(llvm.ObjectFileRef.from_data(data))
            engine.finalize_object()
            addr = engine.get_function_address(symbol)
            if addr:
                return CompiledObject(engine, addr, symbol, None, True)
        mod = llvm.parse_assembly(ir_text)
        mod.verify()
        mod.triple = tm.triple
        mod.data_layout = str(tm.target_data)
        optimize(mod, tm, opt)
        engine = llvm.create_mcjit_compiler(mod, tm)
        saved: list[bytes] = []
        if path:
            engine.set_object_cache(lambda _m, buf: saved.append(bytes(buf)), lambda _m: None)
        engine.finalize_object()
        addr = engine.get_function_address(symbol)
        if path and saved:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            tmp = f"{path}.{os.getpid()}.tmp"
            with open(tmp, "wb") as f:
                f.write(saved[0])
            os.replace(tmp, path)
        return CompiledObject(engine, addr, symbol, str(mod), False)


def assembly(ir_text: str, opt: int = 3) -> str:
    """Host assembly of ``ir_text`` after optimization (for inspection and tests)."""
    with _LOCK:
        init()
        tm = target_machine(opt)
        mod = llvm.parse_assembly(ir_text)
        mod.triple = tm.triple
        mod.data_layout = str(tm.target_data)
        optimize(mod, tm, opt)
        return tm.emit_assembly(mod)


def link_entry(ir_text: str, symbol: str, kernel_addresses: dict[str, int]) -> CompiledObject:
    """JIT a whole-graph entry after telling LLVM where each kernel symbol lives."""
    with _LOCK:
        init()
        for sym, addr in kernel_addresses.items():
            llvm.add_symbol(sym, addr)
    return compile_ir(ir_text, symbol, opt=1 if ir_text.count("\n") < 4000 else 0)

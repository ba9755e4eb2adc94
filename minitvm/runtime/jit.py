"""The JIT loader: LLVM IR to machine code in this process (host target, O3 pipeline, MCJIT), the
on-disk object cache, and linking a whole-graph entry against kernels already loaded.

It lives in the runtime because loading an exported library needs it and nothing of the compiler:
the code generator (``minitvm.codegen``) produces the IR and calls ``compile_ir`` too.

``MINITVM_CACHE_DIR`` names a directory of object files keyed by a hash of the LLVM IR and the
host CPU; a cached object is loaded into MCJIT without running LLVM's optimizer or codegen.
Kernels use the code generator's own on-disk cache (``backend.disk_cache``, keyed before any IR
is generated) through ``compile_ir_to_object`` and ``load_object``.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import hashlib
import os
import re
import threading

import llvmlite
import llvmlite.binding as llvm
from llvmlite.binding import ffi as _ffi

from . import malloc_policy, threadpool

_LOCK = threading.RLock()
_READY = False


def init() -> None:
    """Initialize LLVM's native target once; make the thread pool's symbols known to the JIT;
    keep malloc from unmapping kernels' scratch after each call (``malloc_policy``)."""
    global _READY
    if _READY:
        return
    malloc_policy.apply()
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    for name, addr in threadpool.gomp_symbol_addresses().items():
        llvm.add_symbol(name, addr)
    _READY = True


def host_cpu() -> tuple[str, str]:
    """(cpu name, feature string) the kernels are made for: the machine we run on, or inside
    ``generating_for`` the build target's CPU (its ``-mcpu``, with the host's features limited
    to that CPU's vector ISA). The target machine, the caches' keys and the schedules' ISA
    choices all ask here, so they agree."""
    return _CODEGEN_CPU.get() or _host_cpu()


def real_host_cpu() -> tuple[str, str]:
    """(cpu name, feature string) of the machine we run on, whatever ``generating_for`` says."""
    return _host_cpu()


_CODEGEN_CPU: contextvars.ContextVar[tuple[str, str] | None] = contextvars.ContextVar(
    "minitvm_codegen_cpu", default=None)


def codegen_target() -> tuple[str, str] | None:
    """(cpu, features) of the ``generating_for`` scope we are in, or None: the host's."""
    return _CODEGEN_CPU.get()


@contextlib.contextmanager
def generating_for(cpu: str, features: str):
    """Kernels generated inside are made for LLVM CPU ``cpu`` with feature string ``features``
    (``"+avx2,-avx512f,..."``): a build's ``-mcpu`` (``backend.target_cpu``). The code runs in
    this process, so ``features`` must name no feature the host lacks (the caller's check).
    Context-local: another thread's build is not affected; forked compile workers inherit it."""
    token = _CODEGEN_CPU.set((cpu, features))
    try:
        yield
    finally:
        _CODEGEN_CPU.reset(token)


@functools.cache
def _host_cpu() -> tuple[str, str]:
    # asked once: LLVM's host queries cost 0.4 ms a call, and a ResNet-50 build asked ~200
    # times (every target machine, every per-host schedule switch)
    init()
    return llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten()


def host_has(*features: str) -> bool:
    """Does the CPU code is made for (``host_cpu``) have every LLVM feature named ("avx512f",
    "avx512vnni", ...)? The codegen's x86 instruction choices (vpdpbusd, vpermi2b, cvttps2dq,
    vscalefps) ask this."""
    return set(features) <= _features_on(host_cpu()[1])


@functools.cache
def _features_on(text: str) -> frozenset[str]:
    return frozenset(f[1:] for f in text.split(",") if f.startswith("+"))


# The IR pipeline level of kernels their schedule already vectorized, unrolled and hoisted:
# SROA (local arrays to registers) and SimplifyCFG only, no loop passes. On ResNet-50 it takes a
# quarter of the O1 pipeline's time for the same machine code speed. InstCombine stays between
# them: without it (0.34 of ResNet-50's 0.38 CPU s in these passes) whole models ran as fast, but
# conv_lanes' 7x7 inner loop with its 64-wide tile spilled an accumulator to the stack
# (tests/schedule/test_conv_lanes_width.py), the redundant address arithmetic it leaves holding
# registers.
MINIMAL_PIPELINE = -1
# The IR pipeline level of kernels whose schedule asks for LLVM's O3 pipeline without its SLP
# vectorizer (``codegen.build.NO_SLP_VECTORIZE``): sorting networks and top-k insertion chains,
# where SLP's trees through chains of compare-selects took most of O3's time and vectorized
# nothing.
NO_SLP_PIPELINE = -2

# LLVM code generator options for the kernels, on (the first spelling) while this module runs
# LLVM's code generator and back to LLVM's default after, so that another llvmlite user in the
# process is not affected. ``-disable-post-ra``: no post-register-allocation list scheduler, a
# pass for in-order cores: on Zen 4 ResNet-50, MobileNetV2 and BERT ran as fast without it,
# and it took 0.14 of ResNet-50's 1.3 CPU s of machine code generation.
CODEGEN_OPTIONS = (("-disable-post-ra", "-disable-post-ra=false"),)


def target_machine(opt: int = 3):
    opt = 3 if opt in (MINIMAL_PIPELINE, NO_SLP_PIPELINE) else opt  # (the full code generator)
    cpu, features = host_cpu()
    target = llvm.Target.from_triple(llvm.get_process_triple())
    return target.create_target_machine(cpu=cpu, features=features, opt=opt, jit=True)


def optimize(mod, tm, opt: int = 3) -> None:
    """Run LLVM's standard O``opt`` module pipeline (with loop and SLP vectorization), at
    ``MINIMAL_PIPELINE`` its three passes, at ``NO_SLP_PIPELINE`` O3 without SLP."""
    if opt == MINIMAL_PIPELINE:
        pb = llvm.create_pass_builder(tm, llvm.create_pipeline_tuning_options(speed_level=1))
        mpm = llvm.create_new_module_pass_manager()
        mpm.add_sroa_pass()
        mpm.add_instruction_combine_pass()
        mpm.add_simplify_cfg_pass()
        mpm.run(mod, pb)
        return
    slp = opt != NO_SLP_PIPELINE
    opt = 3 if opt == NO_SLP_PIPELINE else opt
    pto = llvm.create_pipeline_tuning_options(speed_level=opt)
    pto.loop_vectorization = opt >= 2
    pto.slp_vectorization = opt >= 2 and slp
    pto.loop_unrolling = opt >= 2
    pb = llvm.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(mod, pb)


@contextlib.contextmanager
def codegen_options():
    """``CODEGEN_OPTIONS`` on for the machine code generated inside (the caller holds
    ``_LOCK``)."""
    for on, _ in CODEGEN_OPTIONS:
        llvm.set_option("minitvm", on)
    try:
        yield
    finally:
        for _, off in CODEGEN_OPTIONS:
            llvm.set_option("minitvm", off)


# LLVM 22's X86CompressEVEX turns ``vpmov{b,d,q}2m %xmmN, %k; kmov %k, %r`` into the VEX
# ``vmovmskp{s,d} / vpmovmskb %xmmN, %r`` without checking that N < 16 (llvm/llvm-project#191304,
# open): VEX cannot name xmm16-31 / ymm16-31 and the encoder keeps the register number's low four
# bits, so the machine code reads xmm(N - 16), a register holding something else. An AVX-512 host
# hits it where a vectorized sign test (``icmp slt <2 x i64> %v, 0``, SLP's pairing of two
# ``take`` indices wrapped when negative) is read lane by lane under register pressure: a silent
# wrong value. Such code is recognized after the fact and generated again without the instructions
# the fold starts from (``_checked_finalize``).
_VEX_MOVMSK_BYTES = re.compile(  # (a VEX prefix, map 0F, then 50 /r or D7 /r register-direct)
    rb"(?:\xc5[\x00-\xff]|\xc4[\x00-\xff][\x00-\xff])[\x50\xd7][\xc0-\xff]")
_EXTENDED_MOVMSK = re.compile(r"\b(?:vmovmskp[sd]|vpmovmskb)\s+%[xy]mm(?:1[6-9]|2\d|3[01])\b")
# features without which 128/256-bit EVEX instructions (vpmov*2m on xmm/ymm, xmm16-31 in them)
# do not exist: the folded pattern cannot be selected (avx10.1 implies avx512vl and goes too)
SAFE_MOVMSK_FEATURES = ",-avx512vl"


# The same fold misses a mask use that writes the mask too (llvm-project#198197, fixed by PR
# #198220 after LLVM 22.1.0): in ``vpmov*2m %ymm0, %k0; kmov %k0, %eax; kshiftr $2, %k0, %k0``
# it erases the vpmov*2m though the kshiftr still reads k0, so the machine code reads a mask
# register nothing wrote (``or``-ing the high half of a sign mask with another mask after reading
# the whole mask into a GPR does it; see tests/runtime/test_jit_evex_movmsk.py). Recognized in
# the assembly as a read of a k register after a VEX mask move in the same block with no write
# of it in between (``mask_read_after_movmsk``): the erased definition was there.
_VEX_MOVMSK = re.compile(r"^\s*(?:vmovmskp[sd]|vpmovmskb)\s+%[xy]mm\d+,")
_K_REG = re.compile(r"%k([0-7])\b")
_ENDS_BLOCK = re.compile(r"^\s*(?:j\w+|ret\w*)\b|^[^\s#][^:]*:")
# mask instructions whose last operand is read, not written
_K_NO_DEST = ("kortest", "ktest")


def mask_read_after_movmsk(asm: str) -> bool:
    """Does assembly ``asm`` read a mask register after a VEX mask move in the same basic block
    with no write of it in between (the mask definition LLVM's EVEX compression erased,
    llvm-project#198197)? ``kxnor`` / ``kxor`` of a register with itself read nothing."""
    unwritten: set[str] = set()
    for line in asm.splitlines():
        code = line.split("#", 1)[0]
        if _ENDS_BLOCK.match(code):
            unwritten = set()
            continue
        if _VEX_MOVMSK.match(code):
            unwritten = {str(k) for k in range(8)}
            continue
        if not unwritten or "%k" not in code:
            continue
        parts = code.split(None, 1)
        ops = [o.strip() for o in re.split(r",(?![^{]*})", parts[1])] if len(parts) > 1 else []
        last, _, masks = ops[-1].partition("{") if ops else ("", "", "")
        m = re.fullmatch(r"%k([0-7])", last.strip())
        dest = m.group(1) if m and not parts[0].startswith(_K_NO_DEST) else None
        reads = [k for o in ops[:-1] for k in _K_REG.findall(o)] + _K_REG.findall(masks)
        if dest is None:
            reads += _K_REG.findall(last)
        if parts[0].startswith(("kxnor", "kxor")) and len(set(reads)) == 1 and len(reads) == 2:
            reads = []
        if unwritten.intersection(reads):
            return True
        if dest is not None:
            unwritten.discard(dest)
    return False


def _evex_host(features: str) -> bool:
    return "+avx512vl" in features.split(",") or "+avx10.1" in features.split(",")


def movmsk_miscompiled(asm: str) -> bool:
    """Does assembly ``asm`` hold a VEX mask move from an extended register (xmm16-31 / ymm16-31),
    which LLVM's EVEX compression emits and the encoder cannot express (llvm-project#191304)?"""
    return _EXTENDED_MOVMSK.search(asm) is not None


_X86_INTRINSIC = re.compile(r'@"?llvm\.x86\.')


def calls_x86_intrinsics(ir_text: str) -> bool:
    """Does ``ir_text`` call an x86 intrinsic (``@llvm.x86.*``, or quoted as llvmlite writes
    it, ``@"llvm.x86.*"``)? Its machine code cannot be made without the features it names."""
    return _X86_INTRINSIC.search(ir_text) is not None


def _miscompiled_fold(asm: str) -> bool:
    return movmsk_miscompiled(asm) or mask_read_after_movmsk(asm)


def _optimized(ir_text: str, tm, opt: int):
    mod = _parse(ir_text, tm)
    optimize(mod, tm, opt)
    return mod


def _target_machine_with(opt: int, extra_features: str):
    opt = 3 if opt in (MINIMAL_PIPELINE, NO_SLP_PIPELINE) else opt
    cpu, features = host_cpu()
    target = llvm.Target.from_triple(llvm.get_process_triple())
    return target.create_target_machine(cpu=cpu, features=features + extra_features, opt=opt,
                                        jit=True)


def _finalize(mod, tm) -> tuple:
    """(MCJIT engine of optimized ``mod``, its object code), code generated."""
    engine = llvm.create_mcjit_compiler(mod, tm)
    saved: list[bytes] = []
    engine.set_object_cache(lambda _m, buf: saved.append(bytes(buf)), lambda _m: None)
    with codegen_options():
        engine.finalize_object()
    if not saved:  # pragma: no cover - MCJIT always notifies the object cache
        raise RuntimeError("LLVM produced no object code")
    return engine, saved[0]


def _checked_finalize(ir_text: str, opt: int, codegen_opt: int) -> tuple:
    """``(engine, object code)`` of ``ir_text`` optimized at ``opt``, machine code at
    ``codegen_opt``; on an AVX-512 host, object code holding a VEX mask move (rare: a few bytes
    scanned) has its assembly checked for the miscompiled folds of ``movmsk_miscompiled`` and
    ``mask_read_after_movmsk``, and is then generated again for the host without AVX-512VL
    (the same IR: the fold's source instructions do not exist there). IR calling x86 intrinsics cannot drop the feature: its
    machine code is generated at ``codegen_opt`` 0 instead, and a RuntimeError says so where
    that is wrong too."""
    tm = target_machine(codegen_opt)
    engine, obj = _finalize(_optimized(ir_text, tm, opt), tm)
    STATS["compiled"] += 1
    if not (_evex_host(host_cpu()[1]) and _VEX_MOVMSK_BYTES.search(obj)):
        return engine, obj
    STATS["movmsk_checked"] += 1
    with codegen_options():
        asm = tm.emit_assembly(_optimized(ir_text, tm, opt))
    extended, tied = movmsk_miscompiled(asm), mask_read_after_movmsk(asm)
    if not (extended or tied):
        return engine, obj
    STATS["movmsk_regenerated"] += 1
    STATS["tied_mask_regenerated"] += tied
    if not calls_x86_intrinsics(ir_text):
        tm = _target_machine_with(codegen_opt, SAFE_MOVMSK_FEATURES)
        return _finalize(_optimized(ir_text, tm, opt), tm)
    tm = target_machine(0)
    mod = _optimized(ir_text, tm, opt)
    with codegen_options():
        if _miscompiled_fold(tm.emit_assembly(_optimized(ir_text, tm, opt))):
            raise RuntimeError("LLVM's EVEX compression miscompiles this kernel "
                               "(llvm-project#191304 / #198197) and it calls AVX-512 "
                               "intrinsics")
    return _finalize(mod, tm)


# modules ``_checked_finalize`` compiled, those whose assembly it checked, those it made again
# (for either fold), those of them with a mask read after the fold (llvm-project#198197)
STATS = {"compiled": 0, "movmsk_checked": 0, "movmsk_regenerated": 0, "tied_mask_regenerated": 0}


class CompiledObject:
    """A finalized MCJIT engine holding one kernel; keeps the engine alive.

    ``optimized_ir`` is the LLVM IR after optimization, recomputed from ``source_ir`` on first
    use (when that was given): printing every kernel's optimized module took 0.05 s of a
    ResNet-50 build, for a text only debugging looks at.
    """

    __slots__ = ("engine", "address", "py_address", "symbol", "_optimized_ir", "from_disk",
                 "source_ir", "opt", "__weakref__")

    def __init__(self, engine, address: int, symbol: str, optimized_ir: str | None, from_disk,
                 source_ir: str | None = None, opt: int = 3):
        self.engine = engine
        self.address = address
        # the tuple-of-ndarrays entry (0 when the kernel has scalar or shape variables)
        self.py_address = engine.get_function_address(symbol + "_py") if address else 0
        self.symbol = symbol
        self._optimized_ir = optimized_ir
        self.from_disk = from_disk
        self.source_ir = source_ir
        self.opt = opt  # the level of the IR pass pipeline it went through

    @property
    def optimized_ir(self) -> str | None:
        if self._optimized_ir is None and self.source_ir is not None:
            with _LOCK:
                init()
                tm = target_machine(self.opt)
                mod = _parse(self.source_ir, tm)
                optimize(mod, tm, self.opt)
                self._optimized_ir = str(mod)
        return self._optimized_ir


def object_fingerprint() -> str:
    """What object code depends on besides the IR: host CPU, its features, llvmlite, OpenMP."""
    cpu, features = host_cpu()
    gomp = ",".join(sorted(threadpool.gomp_symbol_addresses()))
    return "\0".join([cpu, features, llvmlite.__version__, llvm.get_process_triple(), gomp])


def _parse(ir_text: str, tm):
    mod = llvm.parse_assembly(ir_text)
    mod.verify()
    mod.triple = tm.triple
    mod.data_layout = str(tm.target_data)
    return mod


def compile_ir_to_object(ir_text: str, symbol: str, opt: int = 3,
                         codegen_opt: int | None = None) -> tuple[CompiledObject, bytes]:
    """Optimize and JIT-compile ``ir_text`` like ``compile_ir``, also returning the object code
    MCJIT produced (for an on-disk cache; ``load_object`` loads it back). ``opt`` is the IR
    pass pipeline's level, ``codegen_opt`` the machine code generator's (default: ``opt``)."""
    with _LOCK:
        init()
        engine, obj = _checked_finalize(ir_text, opt, opt if codegen_opt is None else codegen_opt)
        addr = engine.get_function_address(symbol)
        return CompiledObject(engine, addr, symbol, None, False, ir_text, opt), obj


@contextlib.contextmanager
def quiescent():
    """Hold the JIT's lock and llvmlite's: no LLVM call is in flight in any thread meanwhile,
    so a process forked inside inherits no lock held mid-call (it could never take it)."""
    lib_lock = getattr(getattr(_ffi, "lib", None), "_lock", None)
    with _LOCK:
        if lib_lock is None:  # pragma: no cover - an llvmlite without the global lock
            yield
        else:
            with lib_lock:
                yield


def external_symbols(ir_text: str) -> list[str]:
    """The functions ``ir_text`` declares but does not define (LLVM intrinsics excluded)."""
    out = []
    for line in ir_text.splitlines():
        if line.startswith("declare "):
            at = line.find("@")
            name = line[at + 1:line.index("(", at)].strip('"')
            if not name.startswith("llvm."):
                out.append(name)
    return out


def load_object(data: bytes, symbol: str, source_ir: str | None = None, opt: int = 3,
                externals: list[str] = ()) -> CompiledObject:
    """Load object code (from ``compile_ir_to_object``) into a fresh MCJIT engine.

    Raises ``ValueError`` when ``symbol`` is not defined by it, or when one of ``externals``
    (the functions it calls outside itself) is unknown in this process: linking it would abort.
    """
    with _LOCK:
        init()
        missing = [s for s in externals if not llvm.address_of_symbol(s)]
        if missing:
            raise ValueError(f"object code for {symbol!r} needs unknown symbols {missing}")
        tm = target_machine(opt)
        engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), tm)
        engine.add_object_file(llvm.ObjectFileRef.from_data(data))
        engine.finalize_object()
        addr = engine.get_function_address(symbol)
        if not addr:
            raise ValueError(f"the object code defines no symbol {symbol!r}")
        return CompiledObject(engine, addr, symbol, None, True, source_ir, opt)


def load_objects(items: list[tuple[bytes, str, str | None, int, list[str]]]
                 ) -> list[CompiledObject]:
    """Load several object files (``(object, symbol, source_ir, opt, externals)`` as for
    ``load_object``) into ONE fresh MCJIT engine: one target machine and one link for all, much
    cheaper than an engine each. Their non-internal symbols must be distinct. Raises
    ``ValueError`` like ``load_object``."""
    with _LOCK:
        init()
        missing = sorted({s for *_, ext in items for s in ext if not llvm.address_of_symbol(s)})
        if missing:
            raise ValueError(f"object code needs unknown symbols {missing}")
        engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), target_machine(3))
        for data, *_ in items:
            engine.add_object_file(llvm.ObjectFileRef.from_data(data))
        engine.finalize_object()
        out = []
        for _, symbol, source_ir, opt, _ in items:
            addr = engine.get_function_address(symbol)
            if not addr:
                raise ValueError(f"the object code defines no symbol {symbol!r}")
            out.append(CompiledObject(engine, addr, symbol, None, True, source_ir, opt))
        return out


# bumped when the same IR gets other machine code (2: the EVEX mask-move check; 3: its mask
# read after the fold, llvm-project#198197)
_OBJECT_VERSION = "3"


def _cache_path(ir_text: str, opt: int, codegen_opt: int) -> str | None:
    # (both levels in the key: the same IR at another level is other machine code)
    root = os.environ.get("MINITVM_CACHE_DIR")
    if not root:
        return None
    cpu, features = host_cpu()
    key = hashlib.sha256("\0".join([ir_text, cpu, features, llvmlite.__version__,
                                     _OBJECT_VERSION, str(opt), str(codegen_opt)]).encode())
    return os.path.join(root, key.hexdigest()[:40] + ".o")


def compile_ir(ir_text: str, symbol: str, opt: int = 3,
               codegen_opt: int | None = None) -> CompiledObject:
    """Optimize (pipeline level ``opt``) and JIT-compile (level ``codegen_opt``, default
    ``opt``) ``ir_text``; return the address of ``symbol``."""
    with _LOCK:
        init()
        codegen_opt = opt if codegen_opt is None else codegen_opt
        tm = target_machine(codegen_opt)
        path = _cache_path(ir_text, opt, codegen_opt)
        if path and os.path.exists(path):
            with open(path, "rb") as f:
                data = f.read()
            engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), tm)
            engine.add_object_file(llvm.ObjectFileRef.from_data(data))
            engine.finalize_object()
            addr = engine.get_function_address(symbol)
            if addr:
                return CompiledObject(engine, addr, symbol, None, True, ir_text, opt)
        engine, obj = _checked_finalize(ir_text, opt, codegen_opt)
        addr = engine.get_function_address(symbol)
        if path:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            tmp = f"{path}.{os.getpid()}.tmp"
            with open(tmp, "wb") as f:
                f.write(obj)
            os.replace(tmp, path)
        return CompiledObject(engine, addr, symbol, None, False, ir_text, opt)


def assembly(ir_text: str, opt: int = 3, codegen_opt: int | None = None) -> str:
    """Host assembly of ``ir_text`` after optimization at ``opt``, machine code at
    ``codegen_opt`` (default ``opt``; for inspection and tests)."""
    with _LOCK:
        init()
        tm = target_machine(opt if codegen_opt is None else codegen_opt)
        mod = llvm.parse_assembly(ir_text)
        mod.triple = tm.triple
        mod.data_layout = str(tm.target_data)
        optimize(mod, tm, opt)
        with codegen_options():
            return tm.emit_assembly(mod)


def link_entry(ir_text: str, symbol: str, kernel_addresses: dict[str, int]) -> CompiledObject:
    """JIT a whole-graph entry after telling LLVM where each kernel symbol lives.

    The symbols are process-wide and a kernel's symbol names its code, not its copy: two threads
    building the same kernel each compile a copy, and the lock is held from setting the
    addresses to linking so the entry links this module's copies (which it keeps alive), never
    another module's, whose engine may be freed once the code caches drop it."""
    with _LOCK:
        init()
        for sym, addr in kernel_addresses.items():
            llvm.add_symbol(sym, addr)
        return compile_ir(ir_text, symbol, opt=1 if ir_text.count("\n") < 4000 else 0)

"""``codegen.build``: PrimFuncs (or an IRModule of them) to a callable native Module.

Compiled kernels are cached in process by a hash of their TVMScript text (the function's own
name excluded), so identical kernels compile once however many names they have.
"""

from __future__ import annotations

import hashlib
import os
import threading
import weakref

from ..runtime import jit
from ..runtime.bounded_cache import BoundedCache
from ..runtime.gc_pause import paused
from ..target.host_only import check_host_target
from ..tir.analysis import verify_well_formed
from ..tir.analysis.loop_invariant import hoistable_accesses
from ..tir.expr import IntImm, Var
from ..tir.function import PrimFunc
from ..tir.printer import script
from ..tir.stmt import For, ForKind, LetStmt
from ..tir.stmt_functor import post_order, stmt_children, walk_stmts
from ..tir.transform import parallelize_outer_loops
from ..tir.transform.lower_intrin import lower_intrin
from .llvm.codegen import CodeGenLLVM, KernelSignature
from .llvm.stmt import INSTANCE_LOOP
from .module import KernelFunction, Module

CODEGEN_VERSION = "41"  # 3: float16 libm in float32; 4: loaded integer values wrap (no nsw);
# 5: float->int casts defined for NaN/out-of-range values; 6: tanh/erf keep the sign of -0.0;
# 7: explicitly vectorized kernels get the light IR pipeline (``LIGHT_PIPELINE_LEVEL``);
# 8: unrolled loop variables are constants, offsets folded, broadcasts spelled poison/zeros
# 9: lower parallel thresholds and even GEMM row blocks (schedule/gemm_kernel, common)
# 10: vectorized kernels with nothing to hoist take jit.MINIMAL_PIPELINE; depthwise taps let-bound
# 11: ... only when every loop and parameter has a static size
# 12: parallel loops cut into 16 chunks per thread, not 4 (llvm/stmt.CHUNKS_PER_THREAD)
# 13: min/max against a constant: one compare-select (x86 minps/maxps), NaN still propagated
# 14: exp scales by AVX-512's vscalefps where the host has it (llvm/vmath._scalef)
# 15: exp's polynomial: degree 6 by Horner's rule (six FMAs)
# 16: float32 pow with a constant exponent inline (llvm/vmath.pow_const_exponent), no powf
# 17: loops bounded by values the kernel computes (a clipped conv window) count as static
# 18: MINIMAL_PIPELINE without InstCombine; no post-RA list scheduler (jit.CODEGEN_OPTIONS)
# 19: repeated pure instructions in a block emitted once (llvm/textir value numbering)
# 20: machine code at CodeGenOpt::Less (MACHINE_CODE_LEVEL)
# 21: accesses under a condition in their loop are not worth hoisting (loop_invariant)
# 22: MINIMAL_PIPELINE runs InstCombine again (without it a conv_lanes tile spilled)
# 23: float32 -> int casts of 4/8/16n lanes by x86's cvttps2dq (llvm/cvtt), no range test
# 24: kernels with a ``NO_SLP_VECTORIZE`` loop take jit.NO_SLP_PIPELINE (sorting networks)
# 25: tiny static kernels (TINY_KERNEL_WORK) take the minimal or light pipeline, not O3
# 26: malloc'd temporaries start at a 64-byte boundary (stmt.ALIGN_HEAP_TEMPS)
# 27: vectorized kernels with a ``LOOP_PASSES`` loop take the light pipeline, not the minimal one
# 28: machine code with LLVM's miscompiled EVEX mask-move fold made again (jit._checked_finalize)
# 29: vectorized loops of a non-power-of-two or over 64 lanes in power-of-two pieces
#     (llvm/vector_pieces), not one vector of a width LLVM scalarizes across blocks / a serial loop
# 30: depthwise rows loop over their same-shape tiles (ROLL_TILES) and over their vectors where
#     the unrolled copies would pass UNROLL_MAX_STMTS statements (schedule/depthwise); gemm_tb
#     runs the columns past its last block in one rolled loop
# 31: static pools of more than 25 taps (16 or more at column stride 1) take pool_symbolic's
#     forms (rows into a row temporary first, or accumulated); symbolic 4x4+ / 1 windows too
# 32: AVX2 strided depthwise convs stream their phase rows into a window, aligned rows of whole
#     vectors, one channel a task past 14x14 outputs (schedule/depthwise)
# 33: float32 erf on AVX2 hosts as one rational x P(x^2) / Q(x^2) (llvm/vmath._ERF_RATIONAL);
#     Zen 3's packed GEMMs prefetch the next piece of B (schedule/gemm_kernel)
# 34: gemm_vnni on AVX2 tiles one 16-lane vector x 6 rows (no spills) and, without VNNI, runs
#     uint8 x int8 products as int16 pairs (conv_vnni.BYTE_PAIRS: vpmaddwd)
# 35: windows of 16+ taps along a contiguous axis loop over their taps (reduction_loops
#     .TAP_LOOP_MIN); 64-bit selection items compare ka < kb or (ka <= kb and pa < pb)
# 36: float32 exp on AVX2 hosts by the magic-number round, no select after its polynomial
#     (llvm/vmath._EXP_MAGIC), tanh as one rational (_TANH_RATIONAL); AVX2 strided 3x3
#     depthwise convs in 2-row blocks (schedule/depthwise.ROW_BLOCK_STRIDED)
# 37: conv_vnni on AVX2 without VNNI runs uint8 x int8 convs as int16 pairs (BYTE_PAIRS), its
#     AVX2 pixel tiles 4 channels x 1 vector (AVX2_PIXEL_TILE: 8 x 3 spilled)
# 38: AVX2 convs of few taps (schedule/conv_lanes.FEW_TAPS_MAX) pool 2x2 windows in their tiles,
#     one window a tile (POOL_TILE_VECTORS); AVX2 pools of windows tiling a narrow plane in
#     the flat form (schedule/pool.FLAT)
# 39: float32 -> int casts of 16n lanes without AVX-512 by 8-lane cvttps2dq (llvm/cvtt.PIECES);
#     casts of round(x) clipped by integers by cvtps2dq of the clipped x (expr._rounded_cast,
#     not with AVX-512); AVX2 int8 channel-lanes tiles of filters of several columns 4 pixels
#     (conv_vnni.AVX2_PIXELS: 6 spilled)
# 40: AVX2 Winograd convs of a batch of small planes hold several whole images a band
#     (schedule/conv_winograd.IMAGE_BAND_BYTES), their GEMM panels across the images
# 41: AVX2 uint8 x int8 products (conv_vnni.BYTE_PAIRS) keep their weight as int8 pairs,
#     sign-extended as loaded (tir.dot_s16s8x2: vpmovsxbw + vpmaddwd) but in pixel-lanes tiles;
#     the clips of a rounded cast (llvm/expr._rounded_cast) as x86 minps / maxps of the bound
#     (the clip at 0 was a compare and an and)
# LLVM's optimizer is superlinear on huge straight-line functions; above this many statements a
# kernel is compiled at O0 (codegen only) so that it still builds in seconds, not minutes.
HUGE_FUNCTION_STMTS = 20000
# A kernel whose schedule vectorized and unrolled it already (a ``vectorized`` loop) gains
# nothing from LLVM's loop and SLP vectorizers and unroller, which are most of O3's cost: its IR
# goes through the O1 pipeline (no vectorizers) and machine code is still generated at
# ``opt_level``. Measured on ResNet-50, MobileNet and BERT: the same outputs bit for bit and the
# same latency, about 30% less CPU time for a cold build. Scalar kernels keep the full pipeline
# so that LLVM may vectorize them. Those with no loop-invariant access worth hoisting
# (``tir.analysis.loop_invariant``) need no loop pass at all: ``jit.MINIMAL_PIPELINE``, a quarter
# of O1's time (ResNet-50's cold build: IR passes 1.9 -> 0.66 CPU s, the same latency).
LIGHT_PIPELINE_LEVEL = 1
# LLVM's machine code generator runs at CodeGenOpt::Less for kernels (the IR pipelines above
# are unchanged): on ResNet-50 7% less of its time (1.56 -> 1.46 CPU s over all kernels) and the
# same latency on ResNet-50, MobileNetV2 and BERT (1 thread, interleaved A/B, outputs bit for
# bit); the schedules have already picked the vector width, unrolling and register tiles.
MACHINE_CODE_LEVEL = 1
# For-loop annotation: the kernel holding the loop gets LLVM's O3 pipeline without the SLP
# vectorizer (``jit.NO_SLP_PIPELINE``). Schedule/selection's sorting networks (branch-free
# compare-exchanges, a select per lane) and top-k insertion chains are chains SLP builds trees
# through and vectorizes nothing in. CPU s to build, O3 -> without SLP (the same kernel speed):
# int64 argsort of 3 x 1000 1.87 -> 0.83; float32 top 64 of 24552 4.74 -> 0.61.
NO_SLP_VECTORIZE = "no_slp_vectorize"
# For-loop annotation: an explicitly vectorized static kernel holding the loop gets
# ``LIGHT_PIPELINE_LEVEL`` (O1: CSE, LICM and the loop passes over its address arithmetic)
# rather than ``jit.MINIMAL_PIPELINE``. A conv_direct tile whose unrolled filter columns load more
# pixel vectors than the registers its accumulators leave (``conv_direct.LOOP_PASSES``): from the
# minimal pipeline's IR the code generator hoisted every column's loads to the top of the filter
# row and spilled the accumulators to the stack each row (a 32 -> 64 5x5 conv at 112x112 ran
# 1.5x slower); from O1's it does not.
LOOP_PASSES = "loop_passes"
# A kernel whose whole run is tiny and known when it is compiled (every buffer shape and loop
# extent a constant, at most this many statements executed: each statement counted once per
# iteration of its enclosing loops) and not explicitly vectorized skips O3's loop vectorizer, unroller and SLP, which cost
# tens of milliseconds per kernel to save a few microseconds per call: ``LIGHT_PIPELINE_LEVEL``
# (O1, whose LICM keeps an accumulator in a register), or ``jit.MINIMAL_PIPELINE`` when at most
# ``MINIMAL_KERNEL_WORK`` statements run and no loop-invariant access is worth hoisting.
# Legalized Relax/Relay operators on small shapes, shape arithmetic, scalar epilogues; the
# models' real kernels are orders of magnitude larger (none of ResNet-50's, MobileNetV2's or
# BERT's is tiny). Per call, before -> after (O3 -> O1 / minimal, Python's call included): a
# 63x63 scalar elementwise kernel 11.3 -> 12.7 us (17.2 us minimal), 32x32 9.3 -> 9.3 us; 770
# tiny kernels of four operator test files: IR pipeline 11.5 -> 1.5 (minimal) / 6.1 (O1) CPU s.
TINY_KERNEL_WORK = 4096
MINIMAL_KERNEL_WORK = 1024
# The in-process cache of compiled kernels: key -> ``jit.CompiledObject`` (its ``source_ir`` the
# LLVM IR). Each holds its machine code (a few to tens of KB in a ``jit.CodeArena``; 0.8 MB when
# each had an MCJIT engine) and IR text, so the cache keeps only the ``CODE_CACHE_SIZE`` most
# recently used ones, and finds any older one a live module still holds by weak reference: a
# rebuild of a live program compiles nothing, a process building thousands of distinct programs
# (a fuzzer: 7 GB before) keeps at most that many dead kernels. 256 holds the kernels of
# several models (ResNet-50 has 36 distinct ones); a miss past it loads the object code from
# the on-disk cache when one is active.
CODE_CACHE_SIZE = 256
_CACHE = BoundedCache("codegen.kernels", CODE_CACHE_SIZE, weak=True)
_STATS = {"hits": 0, "misses": 0}
# compiled kernel -> (object code, pipeline level), for those compiled or loaded through the
# on-disk cache, and symbol -> compiled kernel: kept as long as the kernel lives (a live module
# or the cache above holds it), so a cache exporting a build finds every kernel's object code
_OBJECTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_BY_SYMBOL: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
_LOCK = threading.RLock()


def _functions(inputs, name: str | None) -> dict[str, PrimFunc]:
    if isinstance(inputs, PrimFunc):
        gsym = inputs.attrs.get("global_symbol") if inputs.attrs else None
        return {name or gsym or "main": inputs}
    if isinstance(inputs, dict):
        items = inputs.items()
    elif hasattr(inputs, "functions"):
        items = inputs.functions.items()
    elif isinstance(inputs, (list, tuple)):
        out = {}
        for k, f in enumerate(inputs):
            gsym = f.attrs.get("global_symbol") if f.attrs else None
            out[gsym or f"func{k}"] = f
        return out
    else:
        raise TypeError(f"cannot build {type(inputs).__name__}; expected a PrimFunc or IRModule")
    out = {}
    for key, f in items:
        if isinstance(f, PrimFunc):
            # the exported name is the function's global_symbol, as in TVM (from_expr keys a
            # PrimFunc "main" while its symbol says "add_one"); else its global var's name
            gsym = f.attrs.get("global_symbol") if f.attrs else None
            out[str(gsym) if gsym else getattr(key, "name_hint", key)] = f
    return out


def _target_ok(target) -> None:
    check_host_target("codegen.build", target)


def compile_prim_func(func: PrimFunc, name: str, fast_math: bool = False,
                      opt_level: int = 3, auto_parallel: bool = True, object_cache=None
                      ) -> tuple[KernelFunction, str]:
    """Compile one PrimFunc (through the cache); return its callable and its LLVM IR.

    ``object_cache``: an on-disk cache (``get(key) -> (object, ir) | None``, ``put(key, object,
    ir)``; see ``backend.disk_cache``) consulted on an in-process miss, before generating IR.
    """
    verify_well_formed(func)
    func = lower_intrin(func, "llvm")  # user-registered intrinsic lowerings (TVM's LowerIntrin)
    if auto_parallel:
        func = parallelize_outer_loops(func)
    keyed = func.without_attr("global_symbol") if func.attrs and "global_symbol" in func.attrs \
        else func
    text = script(keyed, name="kernel")
    # a build's -mcpu (jit.generating_for) makes other code of the same IR: keyed apart
    cpu = jit.codegen_target()
    cpu_text = "" if cpu is None else f"{cpu[0]}|{cpu[1]}|"
    key = hashlib.sha256(f"{CODEGEN_VERSION}|{fast_math}|{opt_level}|{cpu_text}{text}".encode()
                         ).hexdigest()
    with _LOCK:
        hit = _CACHE.get(key)
        if hit is not None:
            hit = (hit, hit.source_ir)
            _STATS["hits"] += 1
    pipeline = ir_pipeline_level(func, opt_level) if hit is None else opt_level
    if hit is None and object_cache is not None:
        hit = _load_cached_object(object_cache, key, pipeline)
    if hit is None:
        symbol = "mtvm_" + key[:20]
        cg = CodeGenLLVM(func, symbol, fast_math=fast_math,
                         gomp=bool(jit.threadpool.gomp_symbol_addresses()))
        # huge functions: O0 throughout, as before; the rest at most MACHINE_CODE_LEVEL
        codegen_opt = min(opt_level, MACHINE_CODE_LEVEL) if pipeline else 0
        with paused():  # codegen builds many cyclic llvmlite objects; collecting is O(n^2)
            ir_text = cg.generate()
            if object_cache is None:
                compiled = jit.compile_ir(ir_text, symbol, pipeline, codegen_opt)
            else:
                compiled, obj = jit.compile_ir_to_object(ir_text, symbol, pipeline,
                                                           codegen_opt)
                object_cache.put(_disk_key(key), obj, ir_text)
                _remember(compiled, obj, pipeline)
        hit = (compiled, ir_text)
        with _LOCK:
            _CACHE[key] = compiled
            _STATS["misses"] += 1
    compiled, ir_text = hit
    return KernelFunction(name, KernelSignature(func, name), compiled.address, compiled), ir_text


def ir_pipeline_level(func: PrimFunc, opt_level: int) -> int:
    """The level of LLVM's IR pass pipeline for ``func`` compiled at ``opt_level``: 0 for huge
    functions; for explicitly vectorized ones ``jit.MINIMAL_PIPELINE`` when every parameter has
    a constant size, every loop's bounds are computed inside the function (constants, enclosing
    loop variables, let-bound values: a conv window clipped at the padded border) and no memory
    access that stays put in its loop is worth hoisting (``hoistable_accesses``: nothing for
    LLVM's loop passes to do) and no loop asks for them (``LOOP_PASSES``), else
    ``LIGHT_PIPELINE_LEVEL``; ``opt_level`` for the rest. (Loops
    bounded by a symbolic size index with run-time strides and divisions that LLVM's loop
    passes hoist: a Relax BERT layer of symbolic length ran 10x slower without them.) An
    ``INSTANCE_LOOP``'s extent, and a parameter's leading dimension equal to it, count as
    static: its body is a static kernel. A scalar kernel with a ``NO_SLP_VECTORIZE`` loop gets
    ``jit.NO_SLP_PIPELINE`` at ``opt_level`` 3. Above ``LIGHT_PIPELINE_LEVEL`` a tiny scalar
    kernel (``TINY_KERNEL_WORK``) takes one of the two light pipelines instead of O3."""
    count, vectorized, static, no_slp, loop_passes = 0, False, True, False, False
    instances: set[int] = set()  # ids of the extents of instance loops
    inside: set[int] = set()  # ids of the variables whose values the body computes itself
    for s in walk_stmts(func.body):  # (pre-order: a binding comes before its uses)
        count += 1
        if isinstance(s, LetStmt):
            if _computed_inside(s.value, inside):
                inside.add(id(s.var))
        elif isinstance(s, For):
            inside.add(id(s.loop_var))
            vectorized = vectorized or s.kind == ForKind.VECTORIZED
            no_slp = no_slp or bool(s.annotations.get(NO_SLP_VECTORIZE))
            loop_passes = loop_passes or bool(s.annotations.get(LOOP_PASSES))
            if s.annotations.get(INSTANCE_LOOP) and isinstance(s.min, IntImm):
                instances.add(id(s.extent))
                continue
            static = static and _computed_inside(s.min, inside) \
                and _computed_inside(s.extent, inside)
    if count > HUGE_FUNCTION_STMTS:
        return 0
    static = static and all(isinstance(d, IntImm) or (k == 0 and id(d) in instances)
                            for b in func.buffer_map.values() for k, d in enumerate(b.shape))
    if vectorized and opt_level > LIGHT_PIPELINE_LEVEL:
        return jit.MINIMAL_PIPELINE if static and not loop_passes and \
            not hoistable_accesses(func) else LIGHT_PIPELINE_LEVEL
    work = static_work(func, TINY_KERNEL_WORK) if opt_level > LIGHT_PIPELINE_LEVEL and \
        not no_slp else None
    if work is not None:  # a tiny scalar kernel (a sort's keeps its own pipeline)
        return jit.MINIMAL_PIPELINE if work <= MINIMAL_KERNEL_WORK and \
            not hoistable_accesses(func) else LIGHT_PIPELINE_LEVEL
    return jit.NO_SLP_PIPELINE if no_slp and opt_level == 3 else opt_level


def static_work(func: PrimFunc, limit: int) -> int | None:
    """The statements ``func`` executes, each counted once per iteration of its enclosing
    loops, when every buffer shape and loop extent is a constant; None when one is not or the
    count passes ``limit`` (the walk stops there)."""
    if not all(isinstance(d, IntImm) for b in func.buffer_map.values() for d in b.shape):
        return None
    total = 0
    stack = [(func.body, 1)]  # (statement, how many times it runs)
    while stack:
        s, times = stack.pop()
        if s is None:
            continue
        total += times
        if total > limit:
            return None
        if isinstance(s, For):
            if not isinstance(s.extent, IntImm):
                return None
            times *= max(int(s.extent.value), 0)
        stack.extend((kid, times) for kid in stmt_children(s))
    return total


def _computed_inside(e, inside: set[int]) -> bool:
    """Whether ``e`` is a constant or computed from variables in ``inside`` (ids of loop
    variables and let-bound values the kernel computes), never from a run-time size (a
    parameter, a free shape variable)."""
    if isinstance(e, IntImm):
        return True
    return all(id(n) in inside for n in post_order(e) if isinstance(n, Var))


# ------------------------------------------------------------------ on-disk object cache
_FINGERPRINT: dict[str, str] = {}  # jit.object_fingerprint() -> the on-disk key's suffix


def _disk_key(key: str) -> str:
    """The on-disk key: the in-process key plus what else shapes the object code (the CPU it is
    made for, a build's ``-mcpu`` included, LLVM, and the code generator's own sources, so an
    edited code generator never reuses stale objects)."""
    cpu = jit.object_fingerprint()
    if cpu not in _FINGERPRINT:
        h = hashlib.sha256(cpu.encode())
        root = os.path.dirname(os.path.abspath(__file__))
        files = sorted(os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs
                       if f.endswith(".py"))
        for path in [*files, jit.__file__]:
            with open(path, "rb") as f:
                h.update(f.read())
        _FINGERPRINT[cpu] = h.hexdigest()
    return f"{key}|{_FINGERPRINT[cpu]}"


def declared_externals(ir_text: str) -> list[str]:
    """The functions ``ir_text`` declares but does not define, LLVM intrinsics excluded (what
    ``runtime.jit.external_symbols`` finds line by line; here a jump from one ``declare`` line to
    the next)."""
    out = []
    pos = 0 if ir_text.startswith("declare ") else ir_text.find("\ndeclare ")
    while pos != -1:
        start = pos if pos == 0 and ir_text.startswith("declare ") else pos + 1
        end = ir_text.find("\n", start)
        line = ir_text[start:] if end == -1 else ir_text[start:end]
        at = line.find("@")
        name = line[at + 1:line.index("(", at)].strip('"')
        if not name.startswith("llvm."):
            out.append(name)
        pos = ir_text.find("\ndeclare ", start)
    return out


def _load_cached_object(object_cache, key: str, pipeline: int):
    """(compiled, ir_text) from the on-disk cache, or None (absent, corrupt or unloadable);
    ``pipeline`` is the IR pipeline level the object was optimized at (``optimized_ir``)."""
    entry = object_cache.get(_disk_key(key))
    if entry is None:
        return None
    obj, ir_text = entry
    try:
        compiled = jit.load_object(obj, "mtvm_" + key[:20], ir_text, pipeline,
                                   declared_externals(ir_text))
    except (ValueError, RuntimeError):
        return None
    with _LOCK:
        compiled = _CACHE.setdefault(key, compiled)
        _STATS["misses"] += 1
    if compiled not in _OBJECTS:
        _remember(compiled, obj, pipeline)
    return compiled, compiled.source_ir


def remember_object(compiled, obj: bytes, pipeline: int) -> None:
    """Keep the object code of kernel ``compiled`` (a ``jit.CompiledObject``) loaded from
    elsewhere (a saved record), so ``object_code`` finds it by its symbol as for one compiled
    here, as long as the kernel lives."""
    with _LOCK:
        if compiled not in _OBJECTS:
            _remember(compiled, obj, pipeline)


def _remember(compiled, obj: bytes, pipeline: int) -> None:
    with _LOCK:
        _OBJECTS[compiled] = (obj, pipeline)
        _BY_SYMBOL[compiled.symbol] = compiled


def object_code(symbol: str) -> tuple[bytes, int] | None:
    """(object code, IR pipeline level) of a live kernel compiled or loaded in this process
    through the on-disk cache, by its symbol; None when it was compiled without one."""
    with _LOCK:
        compiled = _BY_SYMBOL.get(symbol)
        return None if compiled is None else _OBJECTS.get(compiled)


def build(inputs, target="llvm", name: str | None = None, fast_math: bool = False,
          opt_level: int = 3, auto_parallel: bool = True) -> Module:
    """Compile PrimFuncs to native code for the host CPU.

    Parameters
    ----------
    inputs : PrimFunc, IRModule, dict[str, PrimFunc] or list of PrimFunc
        The functions to compile; an IRModule's non-TIR functions are ignored.
    target : str
        Only ``"llvm"`` (the host CPU) is supported.
    name : str, optional
        The function name when ``inputs`` is one PrimFunc (default: its global_symbol or main).
    fast_math : bool
        Allow LLVM to reassociate float arithmetic (vectorizes float reductions).
    opt_level : int
        LLVM optimization level (0-3) of the IR pipeline; machine code is generated at
        ``min(opt_level, MACHINE_CODE_LEVEL)``.
    auto_parallel : bool
        Run the outermost data-parallel loop of each large block-structured stage on the
        thread pool (``tir.transform.parallelize_outer_loops``).
    """
    _target_ok(target)
    kernels, sources = {}, {}
    for fname, func in _functions(inputs, name).items():
        kernels[fname], sources[fname] = compile_prim_func(func, fname, fast_math, opt_level,
                                                           auto_parallel)
    return Module(kernels, sources)


def cache_info() -> dict:
    """Kernel cache statistics: hits, misses and number of cached kernels."""
    with _LOCK:
        return {**_STATS, "size": len(_CACHE)}


def clear_cache() -> None:
    with _LOCK:
        _CACHE.clear()
        _OBJECTS.clear()
        _BY_SYMBOL.clear()
        _STATS["hits"] = _STATS["misses"] = 0

"""Differential check of LLVM's machine code generator: the same optimized IR of a kernel, made
into machine code at several codegen levels (CodeGenOpt 1, 3, 0), must give the same bits.

The IR pipeline is the same for every level. Kernels carry fast-math flags that license other
bits (``contract``: the code generator fuses a multiply and an add into an FMA at levels 1-3,
never at 0; ``reassoc nsz`` on reductions: its MachineCombiner reorders sums), so a kernel is
compared as built at its own level (1) against level 3 (both fuse), and without fast-math flags
(``exact_ir``) at levels 1, 3 and 0 and, on an AVX-512VL host, at its level for the host without
AVX-512VL (``NO_VL``): X86CompressEVEX runs at every level, so level 0 shares its bugs, and
llvm-project#198197 shows only against that variant. Differences there are code generator bugs
(or undefined reads), but for NaN payloads, which IEEE leaves open (reported apart).

``check_ir`` runs one kernel's IR on given arguments, ``check_prim_func`` a PrimFunc's on random
ones (negative values, zeros, NaN / infinities / -0.0 in floats). ``twin_kernels`` checks
whole programs: while it is active every kernel ``codegen.build`` compiles is also made at
each variant, and each call (the first ``per_kernel`` per kernel and per set of run-time
sizes) runs the build's own machine code on the caller's memory and the others on copies of it
(aliased buffers share one), then every variant again with special values written into the
inputs it only reads (NaN, infinities, -0.0, zeros in floats; zeros and negations in
integers that hold negative values already, so indices stay in range). The program sees the
build's own results. ``scripts/codegen_diff_corpus.py`` runs it over a corpus and saves each
difference's IR and inputs; ``assembly_at`` gives the two variants' assembly to minimize it.
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import re
import threading

import numpy as np

from ..codegen.llvm import types as T
from ..codegen.llvm.codegen import CodeGenLLVM, KernelSignature
from ..codegen.module import _eval_int
from ..runtime import jit, threadpool
from ..tir import expr as E

__all__ = ["BUILT", "EXACT", "LEVELS", "NO_VL", "Difference", "Session", "assembly_at", "check_ir",
           "check_prim_func", "exact_ir",
           "random_args", "twin_kernels"]

# CodeGenOpt levels compared by default: the kernels' own (codegen.build.MACHINE_CODE_LEVEL, 1),
# the highest and none
LEVELS = (1, 3, 0)
_ENTRY = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int32)
_ALIGN = 64
_TO_OBJECT = jit.compile_ir_to_object  # (``twin_kernels`` replaces jit's while it runs)
# values written into float inputs for the second run of a call: IEEE's special cases
_SPECIAL_FLOATS = (np.nan, -0.0, 0.0, np.inf, -np.inf, -1.0, 1e30, -1e-40)
_FAST_MATH_FLAG = re.compile(r"\b(?:fast|nnan|ninf|nsz|arcp|contract|afn|reassoc) ")
BUILT, EXACT = "as built", "no fast-math flags"
# the flag-free IR made for the host without AVX-512VL: the passes that run at every level
# (X86CompressEVEX: llvm-project#191304 / #198197) see other instructions there
NO_VL = "no fast-math flags, no AVX-512VL"
_GROUP = {BUILT: BUILT, EXACT: EXACT, NO_VL: EXACT}  # (which base each is compared with)


def exact_ir(ir_text: str) -> str:
    """``ir_text`` without fast-math flags: every float operation rounds as IEEE says, so its
    machine code at any level must give the same bits."""
    return _FAST_MATH_FLAG.sub("", ir_text)


def _specs(base: int, levels, ir_text: str) -> list:
    """(IR, level) pairs to compare, the first of each IR its base: as built at ``base`` and
    the other levels above 0 (level 0 fuses no FMA), without flags at every level and, on an
    AVX-512VL host for IR calling no x86 intrinsic, at ``base`` without AVX-512VL."""
    built = [base] + [v for v in levels if base > 0 and v > 0 and v != base]
    exact = [base] + [v for v in levels if v != base]
    out = [(BUILT, v) for v in dict.fromkeys(built)] + [(EXACT, v) for v in dict.fromkeys(exact)]
    if jit.host_has("avx512vl") and not jit.calls_x86_intrinsics(ir_text):
        out.append((NO_VL, base))
    return out


@dataclasses.dataclass
class Difference:
    """Machine code of ``symbol``'s IR (``flags``: ``BUILT`` or ``EXACT``, without fast-math
    flags) at ``levels[0]`` and ``levels[1]`` disagree in ``buffer`` at
    ``count`` elements (``first``: up to 8 ``(flat index, value at levels[0], at levels[1])``).
    ``nan_only``: every differing element is a NaN at both levels (another NaN payload or sign:
    IEEE leaves it open). ``nondeterministic``: the same machine code run twice disagreed too
    (not a code generator difference). ``perturbed``: the run with special input values.
    ``args`` holds the inputs (buffer name -> array, before the call) and ``vars`` the run-time
    scalars, for a replay with ``check_ir``."""

    symbol: str
    kernel: str
    levels: tuple
    buffer: str
    count: int
    first: list
    nan_only: bool
    nondeterministic: bool
    perturbed: bool
    pipeline: int
    flags: str
    ir: str = dataclasses.field(repr=False)
    args: dict = dataclasses.field(repr=False, default_factory=dict)
    vars: tuple = ()

    def __str__(self) -> str:
        what = "NaN payloads" if self.nan_only else "values"
        tags = "".join([" (perturbed inputs)" if self.perturbed else "",
                        " (nondeterministic)" if self.nondeterministic else ""])
        return (f"{self.kernel} [{self.symbol}] codegen {self.levels[0]} vs {self.levels[1]} "
                f"({self.flags}): "
                f"{self.buffer} {self.count} {what} differ{tags}, e.g. {self.first[:3]}")


# ------------------------------------------------------------------ memory of one call
@dataclasses.dataclass
class _Layout:
    """Where a call's buffers live: groups of overlapping byte ranges (aliased buffers share
    one) and, per buffer, (group, byte offset in it, element count, numpy dtype) or None for an
    empty one."""

    starts: list
    sizes: list
    buffers: list


def _dtype(buf) -> np.dtype:
    kind, bits, lanes = T.parse_dtype(buf.dtype)
    if kind == "bool":
        return np.dtype(np.bool_)
    if kind == "bfloat":
        return np.dtype(np.uint16)
    base = np.dtype(T.NUMPY_DTYPES.get(f"{kind}{bits}", f"uint{bits}"))
    return np.dtype((base, (lanes,))) if lanes > 1 else base


def _extent(buf, env: dict) -> int:
    """Elements from the data pointer the kernel may touch: its shape through its strides."""
    shape = [_eval_int(d, env) for d in buf.shape]
    if any(s <= 0 for s in shape):
        return 0
    if buf.strides:
        strides = [_eval_int(s, env) for s in buf.strides]
    else:
        strides, step = [], 1
        for s in reversed(shape):
            strides.insert(0, step)
            step *= s
    offset = _eval_int(buf.elem_offset, env) if buf.elem_offset is not None else 0
    return offset + sum((s - 1) * st for s, st in zip(shape, strides, strict=True)) + 1


def _layout(sig: KernelSignature, ptrs: list, env: dict) -> _Layout:
    spans = []
    for k, (_, buf) in enumerate(sig.buffers):
        dt = _dtype(buf)
        n = _extent(buf, env)
        spans.append((ptrs[k], n * dt.itemsize, n, dt))
    order = sorted((p, p + nb) for p, nb, n, _ in spans if n)
    starts, ends = [], []
    for lo, hi in order:
        if ends and lo < ends[-1]:
            ends[-1] = max(ends[-1], hi)
        else:
            starts.append(lo)
            ends.append(hi)
    buffers = []
    for p, _, n, dt in spans:
        if not n:
            buffers.append(None)
            continue
        g = max(i for i, s in enumerate(starts) if s <= p)
        buffers.append((g, p - starts[g], n, dt))
    return _Layout(starts, [e - s for s, e in zip(starts, ends, strict=True)], buffers)


def _read(addr: int, size: int) -> np.ndarray:
    return np.frombuffer((ctypes.c_char * size).from_address(addr), np.uint8).copy()


def _aligned_copy(data: np.ndarray, like: int) -> np.ndarray:
    """A copy of ``data`` whose address is ``like``'s modulo 64 (the kernel sees the same
    alignment as on the caller's memory)."""
    raw = np.empty(data.size + 2 * _ALIGN, np.uint8)
    shift = (like - raw.ctypes.data) % _ALIGN
    out = raw[shift:shift + data.size]
    out[:] = data
    return out


class _Memory:
    """Byte images of a call's groups, and running an entry on a fresh copy of them."""

    def __init__(self, layout: _Layout, images: list):
        self.layout, self.images = layout, images

    @classmethod
    def snapshot(cls, layout: _Layout) -> _Memory:
        return cls(layout, [_read(s, n) for s, n in zip(layout.starts, layout.sizes, strict=True)])

    def run(self, entry, ptrs: list, vars_ptr, nthreads: int) -> list:
        copies = [_aligned_copy(img, s) for img, s in zip(self.images, self.layout.starts,
                                                            strict=True)]
        moved = list(ptrs)
        for k, where in enumerate(self.layout.buffers):
            if where is not None:
                moved[k] = copies[where[0]].ctypes.data + where[1]
        table = (ctypes.c_void_p * max(1, len(moved)))(*moved)
        entry(table, vars_ptr, nthreads)
        return copies

    def buffer(self, images: list, k: int) -> np.ndarray | None:
        where = self.layout.buffers[k]
        if where is None:
            return None
        g, off, n, dt = where
        return images[g][off:off + n * dt.itemsize].view(dt)


def _perturbed(mem: _Memory, sig: KernelSignature, rng: np.random.Generator) -> _Memory:
    """``mem`` with special values in the buffers the kernel only reads: in float ones IEEE's
    special cases, in signed integer ones that hold negative values already their negations,
    and zeros in every one (integers stay in the range the caller's values span)."""
    images = [img.copy() for img in mem.images]
    written_groups = {mem.layout.buffers[k][0] for k, (_, b) in enumerate(sig.buffers)
                      if id(b) in sig.written and mem.layout.buffers[k] is not None}
    for k in range(len(sig.buffers)):
        where = mem.layout.buffers[k]
        if where is None or where[0] in written_groups or where[3].subdtype is not None:
            continue
        view = mem.buffer(images, k)
        n = view.size
        picks = rng.choice(n, size=max(1, n // 8), replace=False) if n > 1 else np.zeros(1, int)
        if view.dtype.kind == "f":
            view[picks] = rng.choice(np.array(_SPECIAL_FLOATS), size=picks.size).astype(view.dtype)
        elif view.dtype.kind == "i":
            half = picks[: picks.size // 2]
            view[half] = 0
            if (view < 0).any():
                rest = picks[picks.size // 2:]
                view[rest] = -view[rest]
        elif view.dtype.kind in "ub":
            view[picks[: picks.size // 2]] = 0
    return _Memory(mem.layout, images)


def _nans(a: np.ndarray, b: np.ndarray, bad: np.ndarray) -> bool:
    """Are elements ``bad`` of ``a`` and ``b`` NaN in both? For a byte buffer (a kernel's
    scratch workspace holding floats) the float32 words around the differing bytes."""
    if a.dtype.kind == "f":
        return bool(np.isnan(a[bad]).all() and np.isnan(b[bad]).all())
    if a.dtype.itemsize != 1 or a.size % 4:
        return False
    words = np.unique(bad // 4)
    fa, fb = a.view(np.float32)[words], b.view(np.float32)[words]
    return bool(np.isnan(fa).all() and np.isnan(fb).all())


def _compare(mem: _Memory, sig: KernelSignature, results: dict, base) -> list:
    """(buffer name, variant, count, first, nan_only) of each buffer where a variant's images
    differ from variant ``base``'s."""
    out = []
    for level, images in results.items():
        if level == base:
            continue
        for k, (_, buf) in enumerate(sig.buffers):
            a, b = mem.buffer(results[base], k), mem.buffer(images, k)
            if a is None or a.tobytes() == b.tobytes():
                continue
            ua, ub = a.reshape(a.size, -1).view(np.uint8), b.reshape(b.size, -1).view(np.uint8)
            bad = np.flatnonzero((ua != ub).any(axis=1))
            nan_only = _nans(a, b, bad)
            first = [(int(i), a[i].tolist(), b[i].tolist()) for i in bad[:8]]
            out.append((buf.name, level, int(bad.size), first, nan_only))
    return out


# ------------------------------------------------------------------ one kernel, given inputs
class _Variants:
    """One kernel's IR as machine code per ``(BUILT or EXACT, codegen level)`` of ``specs``
    (engines kept alive); the first of each IR is its base."""

    def __init__(self, ir_text: str, symbol: str, pipeline: int, specs: list):
        self.ir, self.symbol, self.pipeline = ir_text, symbol, pipeline
        self.specs = specs
        self.bases = {}
        for flags, level in specs:
            self.bases.setdefault(_GROUP[flags], (flags, level))
        self.compiled: dict = {}
        self.objects: dict = {}
        self.entries: dict = {}
        texts = {BUILT: ir_text, EXACT: exact_ir(ir_text), NO_VL: exact_ir(ir_text)}
        for spec in specs:
            with _scope(spec[0]):
                compiled, obj = _TO_OBJECT(texts[spec[0]], symbol, pipeline, spec[1])
            self.compiled[spec], self.objects[spec] = compiled, obj
            self.entries[spec] = _ENTRY(compiled.address)


def _env(sig: KernelSignature, values: list) -> dict:
    return {id(v): int(x) for v, x in zip(sig.vars, values, strict=True)
            if not v.dtype.startswith("float")}


def _differences(variants: _Variants, sig: KernelSignature, mem: _Memory, ptrs, vars_ptr,
                 values, nthreads: int, given: list | None, perturbed: bool) -> list:
    """Run every variant on copies of ``mem`` (the first's result is ``given`` when the caller
    ran it on its own memory), compare each with its IR's base and describe each
    disagreement."""
    first = variants.specs[0]
    results = {first: given} if given is not None else {}
    for spec, entry in variants.entries.items():
        if spec not in results:
            results[spec] = mem.run(entry, ptrs, vars_ptr, nthreads)
    out = []
    for group, base in variants.bases.items():
        mine = {s: r for s, r in results.items() if _GROUP[s[0]] == group}
        found = _compare(mem, sig, mine, base)
        if not found:
            continue
        again = mem.run(variants.entries[base], ptrs, vars_ptr, nthreads)
        flaky = bool(_compare(mem, sig, {base: results[base], "again": again}, base))
        args = {buf.name: arr.copy() for k, (_, buf) in enumerate(sig.buffers)
                if (arr := mem.buffer(mem.images, k)) is not None}
        ir = variants.ir if group == BUILT else exact_ir(variants.ir)
        out += [Difference(variants.symbol, sig.name, (base[1], spec[1]), name, count, first_,
                           nan_only, flaky, perturbed, variants.pipeline, spec[0], ir, args,
                           tuple(values))
                for name, spec, count, first_, nan_only in found]
    return out


def check_ir(ir_text: str, symbol: str, func, args: list, pipeline: int = 3,
             levels=LEVELS, seed: int = 0, perturb: bool = True) -> list[Difference]:
    """Differences between ``levels`` (the first the base) of kernel ``symbol`` in
    ``ir_text`` (generated from PrimFunc ``func``) called on ``args`` (arrays, and scalars for
    its scalar parameters, as ``codegen.build``'s kernels take them; the arrays are not
    modified), then on ``args`` with special values (``perturb``)."""
    sig = KernelSignature(func, symbol)
    arrays, env_vals = [], {}
    bufs = dict(sig.buffers)
    for p, a in zip(sig.params, args, strict=True):
        if p in bufs:
            a = np.ascontiguousarray(a)
            arrays.append(a)
            for d, n in zip(bufs[p].shape, a.shape, strict=True):
                if isinstance(d, E.Var):
                    env_vals[id(d)] = n
        else:
            env_vals[id(p)] = a
    values = [env_vals.get(id(v), 0) for v in sig.vars]
    raw = [struct_bits(v, x) for v, x in zip(sig.vars, values, strict=True)]
    vars_arr = (ctypes.c_int64 * max(1, len(raw)))(*raw)
    ptrs = [a.ctypes.data for a in arrays]
    variants = _Variants(ir_text, symbol, pipeline, _specs(levels[0], levels, ir_text))
    mem = _Memory.snapshot(_layout(sig, ptrs, _env(sig, values)))
    out = _differences(variants, sig, mem, ptrs, vars_arr, values, 1, None, False)
    if perturb:
        odd = _perturbed(mem, sig, np.random.default_rng(seed))
        out += _differences(variants, sig, odd, ptrs, vars_arr, values, 1, None, True)
    return out


def struct_bits(var, value) -> int:
    """The i64 a kernel's vars array holds for scalar ``value`` of ``var`` (floats as their
    double's bits)."""
    if var.dtype.startswith("float"):
        return int(np.array(float(value), np.float64).view(np.int64))
    return int(value)


def random_args(func, seed: int = 0) -> list:
    """Random inputs for a PrimFunc of constant shapes: floats standard normal with NaN,
    infinities, -0.0 and zeros sprinkled; integers in [-3, 3] (indices may need less: pass
    your own)."""
    rng = np.random.default_rng(seed)
    out = []
    for p in func.params:
        buf = func.buffer_map.get(p)
        if buf is None:
            raise ValueError(f"random_args: parameter {p.name!r} is a scalar; pass arguments")
        if not all(isinstance(d, E.IntImm) for d in buf.shape):
            raise ValueError(f"random_args: buffer {buf.name!r} has a symbolic shape")
        shape = tuple(int(d.value) for d in buf.shape)
        dt = _dtype(buf)
        if dt.kind == "f":
            a = rng.standard_normal(shape).astype(dt)
            flat = a.reshape(-1)
            picks = rng.choice(flat.size, size=flat.size // 8, replace=False)
            flat[picks] = rng.choice(np.array((np.nan, np.inf, -np.inf, -0.0, 0.0)),
                                     size=picks.size).astype(dt)
        elif dt.kind == "b":
            a = rng.integers(0, 2, shape).astype(dt)
        elif dt.kind == "u":
            a = rng.integers(0, 4, shape).astype(dt)
        else:
            a = rng.integers(-3, 4, shape).astype(dt)
        out.append(a)
    return out


def check_prim_func(func, args: list | None = None, levels=LEVELS, pipeline: int = 3,
                    seed: int = 0) -> list[Difference]:
    """``check_ir`` of PrimFunc ``func``'s generated IR on ``args`` (default ``random_args``)."""
    symbol = "mtvm_codegen_diff"
    ir_text = CodeGenLLVM(func, symbol, gomp=bool(threadpool.gomp_symbol_addresses())).generate()
    return check_ir(ir_text, symbol, func, random_args(func, seed) if args is None else args,
                    pipeline, levels, seed)


def assembly_at(ir_text: str, pipeline: int, level: int, flags: str = EXACT) -> str:
    """Assembly of ``ir_text`` after IR pipeline ``pipeline`` at codegen level ``level`` (for
    the host without AVX-512VL when ``flags`` is ``NO_VL``): what a difference's two variants
    made, to read side by side."""
    with _scope(flags):
        return jit.assembly(ir_text, pipeline, codegen_opt=level)


def _scope(flags: str):
    """Where variant ``flags`` is generated: the host, or the host without AVX-512VL."""
    if flags != NO_VL:
        return contextlib.nullcontext()
    cpu, features = jit.host_cpu()
    return jit.generating_for(cpu, features + jit.SAFE_MOVMSK_FEATURES)


# ------------------------------------------------------------------ whole programs
class _TwinKernel:
    """Stands in for ``jit.CompiledObject``: its address is a Python entry that runs the
    build's machine code on the caller's memory and, on sampled calls, every level on copies."""

    __slots__ = ("variants", "sig", "session", "base", "address", "py_address", "symbol",
                 "from_disk", "source_ir", "opt", "_callback", "checked", "__weakref__")

    def __init__(self, session: Session, variants: _Variants, sig: KernelSignature, base: int):
        self.session, self.variants, self.sig, self.base = session, variants, sig, base
        self.symbol, self.source_ir, self.opt = variants.symbol, variants.ir, variants.pipeline
        self.from_disk = False
        self.py_address = 0  # (no tuple entry: every call comes through ``address``)
        self.checked: dict = {}
        self._callback = _ENTRY(self._call)
        self.address = ctypes.cast(self._callback, ctypes.c_void_p).value

    @property
    def engine(self):
        return self.variants.compiled[self.base].engine

    @property
    def optimized_ir(self):
        return self.variants.compiled[self.base].optimized_ir

    def _call(self, args_ptr, vars_ptr, nthreads):
        sig, s = self.sig, self.session
        base = self.variants.entries[self.base]
        try:
            nv = len(sig.vars)
            values = list((ctypes.c_int64 * nv).from_address(vars_ptr)) if nv else []
            key = tuple(values)
            with s.lock:
                sample = len(self.checked) < s.per_kernel and key not in self.checked
                if sample:
                    self.checked[key] = True
            if not sample:
                base(args_ptr, vars_ptr, nthreads)
                return
            nb = len(sig.buffers)
            ptrs = list((ctypes.c_void_p * nb).from_address(args_ptr)) if nb else []
            mem = _Memory.snapshot(_layout(sig, ptrs, _env(sig, values)))
        except Exception as exc:  # noqa: BLE001 - reported, and the kernel still runs
            s.errors.append(f"{sig.name}: {type(exc).__name__}: {exc}")
            base(args_ptr, vars_ptr, nthreads)
            return
        base(args_ptr, vars_ptr, nthreads)
        try:
            given = _Memory.snapshot(mem.layout).images
            found = _differences(self.variants, sig, mem, ptrs, vars_ptr, values, nthreads,
                                 given, False)
            if s.perturb:
                odd = _perturbed(mem, sig, np.random.default_rng(len(self.checked)))
                found += _differences(self.variants, sig, odd, ptrs, vars_ptr, values,
                                      nthreads, None, True)
            with s.lock:
                s.calls += 1
                s.differences.extend(found)
        except Exception as exc:  # noqa: BLE001
            s.errors.append(f"{sig.name}: {type(exc).__name__}: {exc}")


class Session:
    """What ``twin_kernels`` saw: kernels compiled, calls checked, differences, errors."""

    def __init__(self, levels, per_kernel: int, perturb: bool):
        self.levels, self.per_kernel, self.perturb = tuple(levels), per_kernel, perturb
        self.kernels = 0
        self.calls = 0
        self.differences: list[Difference] = []
        self.errors: list[str] = []
        self.lock = threading.Lock()
        self.signatures: dict = {}  # symbol -> KernelSignature, from the code generator
        self.keep: list = []  # every twin (their engines and entries outlive the caches)

    def twin(self, ir_text: str, symbol: str, opt: int, codegen_opt: int | None):
        sig = self.signatures.pop(symbol)
        base = opt if codegen_opt is None else codegen_opt
        variants = _Variants(ir_text, symbol, opt, _specs(base, self.levels, ir_text))
        twin = _TwinKernel(self, variants, sig, (BUILT, base))
        with self.lock:
            self.kernels += 1
            self.keep.append(twin)
        return twin, variants.objects[(BUILT, base)]

    def summary(self) -> str:
        real = [d for d in self.differences if not d.nan_only and not d.nondeterministic]
        return (f"{self.kernels} kernels, {self.calls} calls checked at codegen levels "
                f"{self.levels}: {len(real)} differences ({len(self.differences) - len(real)} "
                f"NaN-payload / nondeterministic), {len(self.errors)} errors")


@contextlib.contextmanager
def twin_kernels(levels=LEVELS, per_kernel: int = 3, perturb: bool = True):
    """Inside, every kernel the code generator compiles is checked at ``levels`` on its calls
    (see the module docstring); yields the ``Session``. Kernels found in a code cache are not:
    switch the on-disk cache off (``MINITVM_DISABLE_DISK_CACHE=1``) and start from a fresh
    process or ``codegen.clear_cache()``. Not thread-safe to enter from two threads."""
    session = Session(levels, per_kernel, perturb)
    generate = CodeGenLLVM.generate
    compile_ir, to_object = jit.compile_ir, jit.compile_ir_to_object

    def generating(self):
        text = generate(self)
        with session.lock:
            session.signatures[self.symbol] = self.signature
        return text

    def compiling(ir_text, symbol, opt=3, codegen_opt=None):
        if symbol not in session.signatures:
            return compile_ir(ir_text, symbol, opt, codegen_opt)
        return session.twin(ir_text, symbol, opt, codegen_opt)[0]

    def compiling_to_object(ir_text, symbol, opt=3, codegen_opt=None):
        if symbol not in session.signatures:
            return to_object(ir_text, symbol, opt, codegen_opt)
        return session.twin(ir_text, symbol, opt, codegen_opt)

    CodeGenLLVM.generate = generating
    jit.compile_ir, jit.compile_ir_to_object = compiling, compiling_to_object
    try:
        yield session
    finally:
        CodeGenLLVM.generate = generate
        jit.compile_ir, jit.compile_ir_to_object = compile_ir, to_object

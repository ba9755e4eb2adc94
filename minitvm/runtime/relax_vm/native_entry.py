"""The native entry of a straight-line Relax VM function: a call is one ctypes call.

A function after VMShapeLower and memory planning is, unless it branches or calls other
functions, a fixed sequence: shape checks and symbolic-dim binding, storage allocations sized
from the shape heap, kernel calls. For one *call shape* (the shapes and dtypes of the tensor
arguments, the values of the others) everything but the data pointers of the arguments and
outputs is then fixed. So the first call at a shape runs in the interpreter and records a
**plan**: the kernels in order, each kernel's vars (its symbolic dims), a pointer table in which
intermediate buffers point into storages the plan keeps (one arena per call shape, into which
the interpreter's storages are packed by liveness) and in which argument and output buffers are
*patched* per call. Later calls at that shape check the
arguments cheaply in Python, allocate the outputs and make one call of
``mtvm_relax_run_plan`` — a single LLVM function, compiled once per process, that reads the
numpy data pointers straight out of the argument tuple, patches the table and calls every
kernel through its machine address. The Python side is two generated functions: the
function's (argument checks, the call shape's plan) and the plan's (its lock, the outputs, the
run, the result's NDArrays made inline): a 2-kernel MLP at batch 1 spent ~4 us of its ~10 us in
five frames of checks, lookups, allocation and a lambda tree rebuilding the result.

A function keeps up to ``MAX_PLANS`` call shapes (and ``MAX_PLAN_BYTES`` of intermediates),
dropping the least recently used first. ``VirtualMachine.profile`` times a plan's kernels one
by one (``NativeFunction.profile``), so a profile shows what a run at that shape costs.

Shape errors keep their messages: a call whose shapes were never seen goes through the
interpreter, which checks the arguments against the function's annotations. Functions with
branches, calls of Relax functions, closures or packed functions (other than the VM's shape and
allocation builtins) always run in the interpreter.
"""

from __future__ import annotations

import bisect
import itertools
import threading
import time
import warnings

import numpy as np

from .. import threadpool
from ..gc_pause import paused
from ..native_plan import (
    GIL_RELEASE_BYTES,
    Token,
    arena_offsets,
    keep_plan,
    plan_words,
    run_plan_address,
)
from ..native_plan import aligned_buffer as _aligned_buffer
from ..native_plan import data_address as _data_address
from ..native_plan import one_step_words as _one_step_words
from ..native_plan import root as _root
from ..ndarray import NDArray, cpu
from ..py_layout import LAYOUT_OK
from .builtins import BUILTINS, ShapeTuple
from .executable import ARG_CONST, ARG_IMM, ARG_REG, CALL, KILL, MOVE, RET, call_argv
from .image_major import image_major
from .image_major import image_positions as _image_positions
from .image_major import written as _written
from .kernel import NativeKernel

__all__ = ["NativeFunction", "MISS", "RECORD", "native_function", "run_plan_address"]

# Builtins that only check, compute shapes or allocate: replaying the kernels of a recorded
# call at the same call shape is equivalent to running them again.
PLANNABLE_BUILTINS = frozenset({
    "vm.builtin.alloc_storage", "vm.builtin.alloc_tensor_from_storage",
    "vm.builtin.alloc_tensor", "vm.builtin.alloc_shape_heap", "vm.builtin.check_tensor_info",
    "vm.builtin.check_shape_info", "vm.builtin.check_prim_value_info",
    "vm.builtin.check_tuple_info", "vm.builtin.match_shape", "vm.builtin.match_prim_value",
    "vm.builtin.make_shape", "vm.builtin.make_prim_value", "vm.builtin.reshape",
    "vm.builtin.shape_of", "vm.builtin.null_value", "vm.builtin.make_tuple",
    "vm.builtin.tuple_getitem", "vm.builtin.check_reshape", "vm.builtin.check_pad_source",
})
MAX_PLANS = 64  # call shapes remembered per function (least recently used dropped first)
MAX_PLAN_BYTES = 1 << 30  # and at most this much intermediate memory held by them together
MAX_RESULT_DEPTH = 32  # nesting of tuples in a result the fast path rebuilds
# Plans recorded while True move their intermediate storages into one arena by liveness
# (``_pack_intermediates``; False: the A/B switch), in no more bytes (ResNet-18 3.61 -> 3.21 MB
# at batch 1). Packed / not, one thread, thread CPU time, 9-13 interleaved rounds, outputs
# bit-identical, each run's median: batch 4 UNet 0.97 / 1.01 / 0.95 / 0.97 / 0.99, ResNet-18
# 0.96 / 0.98 / 0.97 / 0.99, MobileNetV3-small 0.90 / 0.99 / 0.98 / 1.01 (11 of 13 below 1;
# per model the median run 0.97-0.98); batch 1 within noise (0.94-1.02, 7 of 13 below 1).
PACK_ARENA = True


MISS = Token("MISS")  # the fast path does not apply: interpret
RECORD = Token("RECORD")  # a new call shape: interpret once and record a plan
_NO_PLAN = Token("NO_PLAN")  # recorded, but not plannable: always interpret this shape


_CPU = cpu(0)


class _Unplannable(Exception):
    """The recorded call cannot be replayed natively (the shape then always interprets)."""


class _Plan:
    """One call shape's replay: the plan words, output allocation and result rebuilding."""

    __slots__ = ("words", "addr", "run", "outs", "build", "keep", "lock", "nbytes", "names",
                 "_steps", "solo", "call")

    def __init__(self, words, run, outs, result, keep, nbytes: int = 0, names=(), solo=None):
        self.words = words
        self.addr = words.ctypes.data
        # (words, names) of the image-major order (``image_major``), run at one thread
        self.solo = solo
        self.run = run
        self.outs = outs  # [(shape, dtype)] of each output owner, allocated per call
        self.keep = keep  # intermediate buffers, constants: alive as long as the plan
        self.lock = threading.Lock()
        self.nbytes = nbytes  # the intermediate memory the plan holds
        self.names = list(names)  # each step's kernel name (for profiles)
        self._steps = None
        # build: (arrays, outs) -> the function's result; call: arrays -> the result of one run
        # (or MISS while another thread runs this plan), both generated (``_plan_code``)
        self.build, self.call = _plan_code(self, result)

    def address(self, nthreads: int) -> int:
        """The address of the words to run on ``nthreads`` threads: the image-major order on
        one (``image_major``), else the batch order, whose kernels spread images over the
        pool."""
        return self.solo[0].ctypes.data if nthreads == 1 and self.solo is not None else \
            self.addr

    def order(self, nthreads: int) -> tuple:
        """(each step's kernel name, ``step_words``) of the order run on ``nthreads``."""
        if nthreads == 1 and self.solo is not None:
            return self.solo[1], _one_step_words(self.solo[0])
        return self.names, self.step_words()

    def step_words(self) -> list:
        """One plan per step (all the patches, then that step alone), sharing this plan's
        pointer table and vars: runs the kernels one at a time, for profiles."""
        if self._steps is None:
            self._steps = _one_step_words(self.words)
        return self._steps


class NativeFunction:
    """The fast path of one straight-line VM function: plans by call shape (see the module
    docstring). ``try_call(args)`` returns the result, ``MISS`` or ``RECORD``."""

    def __init__(self, func, code, consts):
        self.func = func
        self.code = code  # the VM's linked instructions
        self.consts = consts
        # the constants and the arrays they are views of (a 0-d constant is a view: a result
        # leaf is recognized as a constant by its root, which was missed, and the plan
        # returned an uninitialized output in place of the constant)
        self.const_ids = {id(c) for c in consts if isinstance(c, np.ndarray)} | \
            {id(_root(c)) for c in consts if isinstance(c, np.ndarray)}
        self.plans: dict = {}
        self.used: dict = {}  # call shape -> tick of its last call (least recent goes first)
        self._tick = itertools.count()
        self.conv = None  # generated argument check -> (key, arrays), from the first call
        self.tensor_params: list[int] = []
        self._lock = threading.Lock()  # guards conv creation and the plan table's updates

    # ------------------------------------------------------------------ calling
    def try_call(self, args):
        """The result of a call through a recorded plan, ``MISS`` or ``RECORD``; replaced by the
        generated ``_make_conv`` function (one Python frame per call) once a call recorded."""
        return RECORD

    def record(self, vals: list):
        """Run the function on VM values ``vals`` in Python, recording a plan for their call
        shape; returns the function's (VM) result. Python's cyclic collector is paused
        meanwhile, as in the VM's dispatch loop: the recording allocates a few objects per call
        (acyclic), and its collections rescanned the whole heap, the program's IR included (a
        100,000-call function: 5.5-7.0 CPU s with them, 2.6-3.1 without)."""
        with paused():
            return self._record(vals)

    def _record(self, vals: list):
        result, calls, heaps = self._interpret(vals)
        with self._lock:
            if self.conv is None:
                self._make_conv(vals)
        got = self.conv(*vals)
        if got is not None:
            key = got[0]
            try:
                plan = self._plan(vals, calls, heaps, result)
            except _Unplannable:
                plan = _NO_PLAN
            except Exception as err:  # noqa: BLE001 - the call itself succeeded: keep it
                warnings.warn(f"Relax VM native entry: {self.func.name}() cannot be planned "
                              f"({type(err).__name__}: {err}); it stays interpreted at this "
                              "shape", RuntimeWarning, stacklevel=3)
                plan = _NO_PLAN
            with self._lock:
                keep_plan(self.plans, self.used, self._tick, key, plan, MAX_PLANS,
                          MAX_PLAN_BYTES)
        return result

    def profile(self, args):
        """One call through the plan for ``args``, kernel by kernel: ``(rows, seconds)`` with
        rows ``name -> [calls, seconds]`` (kernels by name, the entry's own work as
        ``vm.native_entry.*``), ``RECORD`` when the call shape has no plan yet, or ``MISS``
        when the call would be interpreted."""
        clock = time.perf_counter
        t_start = clock()
        got = self.conv(*args) if self.conv is not None and \
            len(args) == len(self.func.params) else None
        if got is None:
            return RECORD if self.conv is None else MISS
        key, arrays = got
        plan = self.plans.get(key)
        if plan is None:
            return RECORD
        if plan is _NO_PLAN or not plan.lock.acquire(False):
            return MISS
        try:
            t_checked = clock()
            outs = [np.empty(s, d) for s, d in plan.outs]
            tup = (*arrays, *outs)
            nthreads = threadpool.get_num_threads()
            t_alloc = clock()
            # (each step's address and the bookkeeping stay outside its timed region)
            names, words = plan.order(nthreads)
            steps = [w.ctypes.data for w in words]
            times = [0.0] * len(steps)
            run = plan.run
            for i, addr in enumerate(steps):
                t0 = clock()
                run(tup, addr, nthreads)
                times[i] = clock() - t0
            t_run = clock()
            rows: dict = {}
            for name, dt in zip(names, times, strict=True):
                row = rows.setdefault(name, [0, 0.0])
                row[0] += 1
                row[1] += dt
            plan.build(arrays, outs)
            t_end = clock()
        finally:
            plan.lock.release()
        rows["vm.native_entry.check_args"] = [1, t_checked - t_start]
        rows["vm.native_entry.alloc_outputs"] = [1, t_alloc - t_checked]
        rows["vm.native_entry.make_result"] = [1, t_end - t_run]
        return rows, t_end - t_start

    # ------------------------------------------------------------------ recording
    def _interpret(self, vals: list):
        regs = [None] * self.func.num_regs
        regs[:len(vals)] = vals
        calls, heaps = [], []
        for ins in self.code:
            op = ins[0]
            if op == CALL:
                _, dst, _kind, target, tname, tmpl, slots, regs_only = ins
                argv = call_argv(tmpl, slots, regs_only, regs)
                out = target(*argv)
                if isinstance(target, NativeKernel):
                    calls.append((target, argv))
                elif tname == "vm.builtin.alloc_shape_heap":
                    heaps.append(out)
                regs[dst] = out
            elif op == MOVE:
                k, v = ins[2]
                regs[ins[1]] = regs[v] if k == ARG_REG else self.consts[v] \
                    if k == ARG_CONST else v
            elif op == KILL:
                regs[ins[1]] = None
            elif op == RET:
                return regs[ins[1]], calls, heaps
        raise ValueError(f"{self.func.name}: the function ends without returning")

    def _make_conv(self, vals: list) -> None:
        """Generate the per-call argument check from the kinds of the first call's values."""
        env = {"ND": np.ndarray, "NDA": NDArray}
        lines, keys, arrays, tensor_params = [], [], [], []
        params = [f"a{k}" for k in range(len(vals))]
        for k, v in enumerate(vals):
            a = f"a{k}"
            if isinstance(v, np.ndarray):
                env[f"d{k}"] = v.dtype
                lines.append(f"    if type({a}) is NDA: {a} = {a}._data")
                lines.append(f"    if type({a}) is not ND or {a}.dtype is not d{k} or not "
                             f"{a}.flags.c_contiguous: return None")
                keys.append(f"{a}.shape")
                arrays.append(a)
                tensor_params.append(k)
            elif isinstance(v, bool | int | str | ShapeTuple) or v is None:
                env[f"t{k}"] = type(v)  # part of the call shape (a plan per value)
                lines.append(f"    if type({a}) is not t{k}: return None")
                keys.append(a)
            else:  # floats (a plan per value would not be reused), tuples, closures: interpret
                lines.append("    return None")
        key = f"({', '.join(keys)}{',' if keys else ''})"
        tup = f"({', '.join(arrays)}{',' if arrays else ''})"
        src = (f"def conv({', '.join(params)}):\n" + "\n".join(lines or ["    pass"]) +
               f"\n    return {key}, {tup}\n")
        # the per-call fast path: the same checks, the plan lookup and the plan's generated
        # call in one frame (the checks, lookup, allocation and result were five frames and
        # ~4 us of a 2-kernel MLP's 11 us; Relay's graph executor spends ~1 us)
        env.update(MISS=MISS, RECORD=RECORD, NO_PLAN=_NO_PLAN, get=self.plans.get,
                   plans=self.plans, used=self.used, tick=self._tick.__next__)
        unpack = f"    {', '.join(params)}{',' if params else ''} = args\n" if params else ""
        src += (f"def fast(args):\n    if len(args) != {len(params)}: return MISS\n" + unpack +
                "\n".join(ln.replace("return None", "return MISS") for ln in lines) +
                f"\n    key = {key}\n    plan = get(key)\n"
                "    if plan is None: return RECORD\n    if plan is NO_PLAN: return MISS\n"
                # (a lone plan's last use needs no tick: every later plan is recorded after
                # it, so it stays the least recent until it is called among others)
                "    if len(plans) > 1: used[key] = tick()\n"
                f"    return plan.call({tup})\n")
        exec(compile(src, f"<relax native entry {self.func.name}>", "exec"), env)  # noqa: S102
        self.tensor_params = tensor_params
        self.conv = env["conv"]
        self.try_call = env["fast"]

    def _plan(self, vals, calls, heaps, result) -> _Plan:
        if not LAYOUT_OK:
            raise _Unplannable
        pos = {k: i for i, k in enumerate(self.tensor_params)}
        ranges = []  # (start, end, tuple index) of the tensor arguments
        for k, i in pos.items():
            a = vals[k]
            ranges.append((a.ctypes.data, a.ctypes.data + a.nbytes, i))
        spans = sorted((s, e) for s, e, _ in ranges if e > s)
        for (_, e0), (s1, _) in zip(spans, spans[1:]):
            if s1 < e0:
                raise _Unplannable  # aliased arguments: a later call may not alias them
        heap_ids = {id(h) for h in heaps}

        def in_args(ptr, nbytes):
            for s, e, i in ranges:
                if s <= ptr and ptr + nbytes <= e:
                    return i, ptr - s
            return None

        # the result's tensors: in an argument, a constant, or in memory the call fills
        out_roots: dict[int, list] = {}  # id(root) -> [root, lo, hi, leaves]

        def scan(v, depth):
            if depth > MAX_RESULT_DEPTH:
                raise _Unplannable
            if isinstance(v, np.ndarray):
                if not v.flags.c_contiguous:
                    raise _Unplannable
                root = _root(v)
                if in_args(v.ctypes.data, v.nbytes) is None and id(root) not in \
                        self.const_ids and id(root) not in heap_ids:
                    ent = out_roots.setdefault(id(root), [root, v.ctypes.data,
                                                          v.ctypes.data + v.nbytes, []])
                    ent[1] = min(ent[1], v.ctypes.data)
                    ent[2] = max(ent[2], v.ctypes.data + v.nbytes)
                    ent[3].append(v)
            elif isinstance(v, tuple) and not isinstance(v, ShapeTuple):
                for f in v:
                    scan(f, depth + 1)
            elif not (isinstance(v, bool | int | float | str | ShapeTuple) or v is None):
                raise _Unplannable

        scan(result, 0)
        # the kernels (shape functions, which only read and write the shape heap, are done)
        steps, keep, nbytes_total = [], [], 0
        touched = []  # per step: the (address, bytes) of its arrays, the arrays, the kernel
        # id(array) -> (the array, its root, its span, its ref, whether kept), for every array
        # a step touches (held here, so the ids stay its own): each array is placed once
        # (an output is met again as the next call's input), where the kept arrays' storages
        # and the arena packing below walked to each array's root again (a 100,000-call
        # recording: 900,000 walks). An array's place never changes: its address, bytes, the
        # argument holding it, the result root holding it (whose bounds min / max only widen,
        # the same for every use) are its own.
        root_of: dict = {}

        def place(a):
            root, ptr, n = _root(a), _data_address(a), a.nbytes
            hit = in_args(ptr, n)
            if hit is not None:
                return a, root, (ptr, n), ("arg", hit[0], hit[1]), False
            ent = out_roots.get(id(root))
            if ent is not None and n:
                ent[1] = min(ent[1], ptr)
                ent[2] = max(ent[2], ptr + n)
                return a, root, (ptr, n), ("out", id(ent[0]), ptr), False
            return a, root, (ptr, n), ("fixed", ptr, 0), True

        for kernel, argv in calls:
            arrays, kvars = kernel.pack(argv)
            facts = []
            for a in arrays:
                hit = root_of.get(id(a))
                if hit is None:
                    hit = root_of[id(a)] = place(a)
                facts.append(hit)
            if heap_ids:
                on_heap = [id(f[1]) in heap_ids for f in facts]
                if any(on_heap):
                    if all(on_heap):
                        continue
                    raise _Unplannable  # data flowing into shapes: not a function of the shapes
            refs, spans = [], []
            for a, _r, span, ref, kept in facts:
                spans.append(span)
                nbytes_total += span[1]
                refs.append(ref)
                if kept:
                    keep.append(a)
            steps.append((kernel.compiled.address, refs, kvars, kernel.name))
            touched.append((spans, arrays, kernel))
        # the storages of intermediates (written by some step: never a constant), where a
        # concatenation's output may move
        roots = {id(r): r for r in _roots(keep, root_of) if id(r) not in self.const_ids}
        # (the addresses recorded in the spans: ``_data_address`` is ``a.ctypes.data``)
        written_at = [spans[q][0] for spans, _arrays, kernel in touched
                      for q in _written(kernel) if q < len(spans)]
        arena = [(r.ctypes.data, r.nbytes) for r in roots.values()
                 if any(r.ctypes.data <= p < r.ctypes.data + r.nbytes for p in written_at)]
        steps, touched, split = _concat_parts(steps, touched, keep, arena)
        if PACK_ARENA:
            keep[:] = _pack_intermediates(steps, touched, keep, self.const_ids)

        def expand(k, images):
            if images is None:
                return _batch_order(steps[k], touched[k], split.get(k))
            q, per, _ = split.get(k, (-1, 0, images))
            return _image_steps(steps[k], touched[k], q, per, images)

        def scratch(nbytes):
            buf, base = _aligned_buffer(nbytes)
            keep.append(buf)
            return base

        solo = image_major(steps, touched, split, expand, scratch)
        steps = [st for k in range(len(steps)) for st in expand(k, None)]
        # one owner per output root, allocated per call over the bytes the call uses
        owners, owner_index, direct = [], {}, {}
        for rid, (_root_arr, lo, hi, outs) in out_roots.items():
            owner_index[rid] = len(owners)
            first = outs[0]
            if len(outs) == 1 and first.ctypes.data == lo and first.nbytes == hi - lo:
                owners.append((first.shape, first.dtype))
                direct[id(first)] = owner_index[rid]
            else:
                owners.append(((hi - lo,), np.dtype("uint8")))
        nargs = len(ranges)
        words = _plan_words(steps, out_roots, owner_index, nargs)
        solo = None if solo is None else \
            (_plan_words(solo, out_roots, owner_index, nargs), [st[3] for st in solo])
        py_run, nogil_run = run_plan_address()
        run = nogil_run if nbytes_total > GIL_RELEASE_BYTES else py_run
        template = _result_template(result, in_args, out_roots, owner_index, direct)
        roots = {id(r): r for r in _roots(keep, root_of) if id(r) not in self.const_ids}
        return _Plan(words, run, owners, template, keep, sum(r.nbytes for r in roots.values()),
                     [st[3] for st in steps], solo)


def _result_template(result, in_args, out_roots, owner_index, direct):
    """``result``'s structure as the plan rebuilds it per call: nested ``("tuple", parts)`` of
    leaves ``("out", j)`` (output owner j itself), ``("view", shape, dtype, (kind, k), offset)``
    (a view into argument ``k``'s array, kind ``"arg"``, or into owner k, ``"out"``), ``("array", a)`` (a constant:
    the same array every call) or ``("value", v)`` (a shape, integer, string, None)."""
    def leaf(v):
        if not isinstance(v, np.ndarray):
            return ("value", v)
        hit = in_args(v.ctypes.data, v.nbytes)
        if hit is not None:
            return ("view", v.shape, v.dtype, ("arg", hit[0]), hit[1])
        rid = id(_root(v))
        if rid in out_roots:
            j = owner_index[rid]
            if id(v) in direct:
                return ("out", j)
            return ("view", v.shape, v.dtype, ("out", j), v.ctypes.data - out_roots[rid][1])
        return ("array", v)

    def template(v):
        if isinstance(v, tuple) and not isinstance(v, ShapeTuple):
            return ("tuple", [template(f) for f in v])
        return leaf(v)

    return template(result)


def _plan_code(plan: _Plan, template) -> tuple:
    """``(build, call)`` of ``plan``, generated: ``build(arrays, outs)`` rebuilds the result
    (``template``, ``_result_template``) from the arguments' arrays and the output owners;
    ``call(arrays)`` takes the plan's lock (``MISS`` when another thread holds it), allocates
    the owners, runs the plan at the pool's thread count and returns the result."""
    env = {"new": object.__new__, "NDA": NDArray, "CPU": _CPU, "ND": np.ndarray,
           "empty": np.empty, "run": plan.run, "MISS": MISS,
           "nthreads": threadpool.get_num_threads, "acquire": plan.lock.acquire,
           "release": plan.lock.release, "addr": plan.addr, "addr1": plan.address(1)}
    wraps: list[str] = []  # statements making each result NDArray, without NDArray's checks

    def const(v) -> str:
        name = f"v{len(env)}"
        env[name] = v
        return name

    def wrap(array: str) -> str:
        r = f"r{len(wraps)}"
        wraps.append(f"{r} = new(NDA); {r}._data = {array}; {r}.device = CPU; "
                     f"{r}._content_hash = None")
        return r

    def expr(t) -> str:
        kind = t[0]
        if kind == "tuple":
            parts = [expr(p) for p in t[1]]
            return f"({', '.join(parts)}{',' if len(parts) == 1 else ''})"
        if kind == "out":
            return wrap(f"o{t[1]}")
        if kind == "view":
            _, shape, dtype, (where, k), off = t
            base = f"arrays[{k}]" if where == "arg" else f"o{k}"
            return wrap(f"ND({const(shape)}, {const(dtype)}, {base}, {off})")
        return wrap(const(t[1])) if kind == "array" else const(t[1])

    result = expr(template)
    owners = [f"o{j}" for j in range(len(plan.outs))]
    allocs = "".join(f"        o{j} = empty({const(shape)}, {const(dtype)})\n"
                     for j, (shape, dtype) in enumerate(plan.outs))
    unpack = f"    {', '.join(owners)}, = outs\n" if owners else ""
    call_args = f"(*arrays, {', '.join(owners)})" if owners else "arrays"
    src = (f"def build(arrays, outs):\n{unpack}" + "".join(f"    {w}\n" for w in wraps) +
           f"    return {result}\n"
           "def call(arrays):\n    if not acquire(False): return MISS\n    try:\n" + allocs +
           f"        n = nthreads()\n        run({call_args}, addr1 if n == 1 else addr, n)\n" +
           "".join(f"        {w}\n" for w in wraps) +
           f"        return {result}\n    finally:\n        release()\n")
    exec(compile(src, "<relax native plan>", "exec"), env)  # noqa: S102
    return env["build"], env["call"]


def _plan_words(steps: list, out_roots: dict, owner_index: dict, nargs: int) -> np.ndarray:
    """The words ``mtvm_relax_run_plan`` reads for ``steps`` (``native_plan.plan_words``), an
    output ref patched from its owner, the call tuple's item after the arguments."""
    def patched(step):
        address, refs, kvars, name = step
        refs = [("arg", nargs + owner_index[a], b - out_roots[a][1]) if kind == "out"
                else (kind, a, b) for kind, a, b in refs]
        return address, refs, kvars, name
    return plan_words([patched(st) for st in steps])


def _overlaps(span, lo: int, hi: int) -> bool:
    return span[1] > 0 and span[0] < hi and lo < span[0] + span[1]


def _concats_in_place(steps: list, touched: list, keep: list, arena=()) -> list:
    """``steps`` with each concatenation run in place where it can be (``_concat_parts``),
    in batch order."""
    steps, touched, split = _concat_parts(steps, touched, keep, arena)
    return [s for k, st in enumerate(steps) for s in _batch_order(st, touched[k], split.get(k))]


def _concat_parts(steps: list, touched: list, keep: list, arena=()) -> tuple:
    """``(steps, touched, split)``: ``steps`` with each concatenation (a kernel whose spec has ``concat_axis``) run in place
    where it can be, at this call shape: its parts are contiguous pieces of its output (every
    dim before the axis is 1) at 64-byte-aligned offsets, each part written by one earlier
    step and read by nothing else. The producers then write straight into the output and the
    concatenation step is dropped (as Relay's memory plan does, ``backend/memory_plan``).
    A batch of images concatenated on axis 1 has each image's part contiguous instead: where
    every producer is a loop over those images (spec ``image_var``), it runs once per image
    with a batch of one, each call writing its image's piece of the output (``_by_image``).

    ``touched[k]`` is step k's ``(spans, arrays, kernel)``: spans are the (address, bytes) of
    its buffer arguments, in ``steps[k]``'s ref order; only ``fixed`` refs (the plan's own
    intermediates) are rewritten. The block memory plan may have given the output bytes that
    are still in use while the parts are produced (the producers' input): the output then
    moves, with its readers, to a place in ``arena`` (the plan's intermediate storages,
    ``(address, bytes)``) free while it is in use (``_free_region``), else to a buffer of its
    own (``_fresh_output``, appended to ``keep``). The steps left, their ``touched`` entries
    and ``split``, which maps each producer to run per image to ``(ref, bytes an image,
    images)``, are returned."""
    drop = set()
    split: dict = {}  # producer step -> (ref position, output bytes per image, images)
    fresh: list = []  # the outputs' own buffers: [base address, bytes, last step reading it]
    for c, (spans, arrays, kernel) in enumerate(touched):
        axis = kernel.spec.get("concat_axis")
        if axis is None or len(arrays) < 2 or _written(kernel) != {len(arrays) - 1} or \
                any(k != "fixed" for k, _, _ in steps[c][1]):
            continue
        out_span, parts = spans[-1], spans[:-1]
        lo, hi = out_span[0], out_span[0] + out_span[1]
        shapes = [a.shape for a in arrays]
        lead = int(np.prod(shapes[-1][:axis]))
        images = lead if axis == 1 else 1  # (a batch of images: one piece per image)
        if any(len(sh) != len(shapes[-1]) or sh[:axis] != shapes[-1][:axis] or
               sh[axis + 1:] != shapes[-1][axis + 1:] for sh in shapes[:-1]) or \
                sum(sh[axis] for sh in shapes[:-1]) != shapes[-1][axis] or \
                lead != images or sum(n for _, n in parts) != out_span[1] or \
                out_span[1] % images or (out_span[1] // images) % 64:
            continue  # not a concatenation's shapes, or its parts are not contiguous pieces
        moves, off = [], 0  # (producer step, ref position, offset in an image's output)
        for i, span in enumerate(parts):
            rng = (span[0], span[0] + span[1])
            if off % 64 or span[1] == 0 or any(_overlaps(p, *rng) for p in parts[:i]):
                break
            # the producer: the last earlier step touching the part's bytes, writing them all
            j = next((j for j in range(c - 1, -1, -1)
                      if any(_overlaps(sp, *rng) for sp in touched[j][0])), None)
            if j is None or j in drop:
                break
            hits = [q for q, sp in enumerate(touched[j][0]) if _overlaps(sp, *rng)]
            if len(hits) != 1 or touched[j][0][hits[0]] != span or \
                    hits[0] not in _written(touched[j][2]) or steps[j][1][hits[0]][0] != "fixed":
                break
            # nothing after the concatenation reads the part (a reader of its tensor, or of
            # a view of it, passes exactly its bytes) before a step writes them again
            later = next(((t, [q for q, sp in enumerate(touched[t][0]) if sp == span])
                          for t in range(c + 1, len(touched)) if span in touched[t][0]), None)
            if later is not None and not set(later[1]) <= _written(touched[later[0]][2]):
                break
            if images > 1 and (j in split or not _by_image(steps[j], touched[j], hits[0],
                                                          images)):
                break
            moves.append((j, hits[0], off))
            off += span[1] // images
        if len(moves) != len(parts) or len({j for j, _, _ in moves}) != len(moves):
            continue
        # the output's readers: its exact bytes, until a step writes over any of them
        readers, end = [], len(touched)
        for t in range(c + 1, len(touched)):
            tspans = touched[t][0]
            hit = [q for q, sp in enumerate(tspans) if _overlaps(sp, lo, hi)]
            if any(tspans[q] != out_span for q in hit):
                end = t
                break
            wr = _written(touched[t][2])
            readers += [(t, q) for q in hit if q not in wr]
            if any(q in wr for q in hit):
                end = t
                break
        if end < len(touched) and any(
                _overlaps(sp, lo, hi) and sp != out_span and q not in _written(touched[end][2])
                for q, sp in enumerate(touched[end][0])):
            continue  # a partial read of the output where its bytes are reused: leave it
        first = min(j for j, _, _ in moves)
        movers = {(j, q) for j, q, _ in moves}
        base = lo
        if lo % 64 or any(_overlaps(sp, lo, hi) for t in range(first, c)
                          for q, sp in enumerate(touched[t][0]) if (t, q) not in movers):
            last = max((t for t, _ in readers), default=c)
            base = _free_region(touched, drop, arena, out_span[1], first, last,
                                movers | set(readers))
            if base is None:
                base = _fresh_output(fresh, keep, out_span[1], first, last)
            for t, q in readers:
                _retarget(steps, touched, t, q, base)
        for j, q, off in moves:
            _retarget(steps, touched, j, q, base + off)
            if images > 1:  # its pieces reach up to the last image's
                per = out_span[1] // images
                touched[j][0][q] = (base + off, (images - 1) * per +
                                    touched[j][1][q].nbytes // images)
                split[j] = (q, per, images)
        drop.add(c)
    keep_steps = [k for k in range(len(steps)) if k not in drop]
    return ([steps[k] for k in keep_steps], [touched[k] for k in keep_steps],
            {i: split[k] for i, k in enumerate(keep_steps) if k in split})


def _roots(arrays, root_of: dict) -> list:
    """The root of each of ``arrays``: from ``root_of`` (id(array) -> (array, root, ...), the
    arrays held there) where it has it, else walked to."""
    get = root_of.get
    return [hit[1] if (hit := get(id(a))) is not None else _root(a) for a in arrays]


def _pack_intermediates(steps: list, touched: list, keep: list, const_ids: set) -> list:
    """Move the plan's intermediate storages (those some step writes) into one arena, each at
    an offset ``native_plan.arena_offsets`` gives it from the steps that touch it, rewriting
    ``steps``' fixed refs and ``touched``'s spans; returns ``keep`` with the arena in place of
    the storages it replaced. The arena is one contiguous buffer (of 4 MiB and more, numpy asks
    the kernel for huge pages), where the interpreter's storages are many small ones."""
    keep_roots = [_root(a) for a in keep]  # (walked once: asked again for the ones moved)
    roots = {id(r): r for r in keep_roots if id(r) not in const_ids and r.nbytes}
    spans = sorted((r.ctypes.data, r.nbytes, rid) for rid, r in roots.items())
    starts = [s for s, _, _ in spans]
    first: dict = {}
    last: dict = {}
    written = set()
    for t, (tspans, _arrays, kernel) in enumerate(touched):
        wr = _written(kernel)
        for q, (ptr, n) in enumerate(tspans):
            i = bisect.bisect_right(starts, ptr) - 1
            if not n or steps[t][1][q][0] != "fixed" or i < 0 or \
                    ptr + n > spans[i][0] + spans[i][1]:
                continue
            first.setdefault(i, t)
            last[i] = t
            if q in wr:
                written.add(i)
    moved = sorted(written)
    if len(moved) < 2:
        return keep
    offsets, total = arena_offsets([(spans[i][1], first[i], last[i]) for i in moved])
    buf, base = _aligned_buffer(total)
    to = {i: base + off for i, off in zip(moved, offsets, strict=True)}
    for t, (tspans, _arrays, _kernel) in enumerate(touched):
        refs = list(steps[t][1])
        for q, (kind, ptr, b) in enumerate(refs):
            i = bisect.bisect_right(starts, ptr) - 1
            if kind == "fixed" and i in to and ptr < spans[i][0] + spans[i][1]:
                refs[q] = ("fixed", to[i] + ptr - spans[i][0], b)
                tspans[q] = (refs[q][1], tspans[q][1])
        steps[t] = (steps[t][0], refs, *steps[t][2:])
    gone = {spans[i][2] for i in moved}
    return [a for a, r in zip(keep, keep_roots, strict=True) if id(r) not in gone] + [buf]


def _batch_order(step, touch, split) -> list:
    """``step`` as it runs in batch order: once, or once per image where it produces a part of
    a concatenation of images (``split``: ``(ref, bytes an image, images)``)."""
    return _image_steps(step, touch, *split) if split is not None else [step]


def _free_region(touched: list, drop: set, arena, nbytes: int, first: int, last: int,
                 ours: set) -> int | None:
    """A 64-byte-aligned address of ``nbytes`` in ``arena`` that no step but the refs ``ours``
    touches from step ``first`` to ``last``, holding nothing read after ``last`` (each tensor
    there is used only before ``first``, or only after ``last`` and written first), or None.
    Of those, the place used most recently before ``first``: its lines are likely in cache."""
    uses: dict = {}  # (address, bytes) -> [(step, written)] of the other refs
    for t, (spans, _arrays, kernel) in enumerate(touched):
        if t in drop:
            continue
        wr = _written(kernel)
        for q, sp in enumerate(spans):
            if sp[1] and (t, q) not in ours:
                uses.setdefault(sp, []).append((t, q in wr))
    # each tensor's standing: None when it blocks its bytes (in use meanwhile, live across,
    # or read first afterwards), else the last step before ``first`` using it (-1: none)
    spans = sorted(uses)
    standing = []
    for sp in spans:
        used = uses[sp]
        after = [u for u in used if u[0] > last]
        before = [t for t, _ in used if t < first]
        ok = len(after) + len(before) == len(used) and not (after and before) and \
            (not after or min(after)[1])
        standing.append(max([-1, *before]) if ok else None)
    starts = [sp[0] for sp in spans]
    longest = max((n for _, n in spans), default=0)
    best = None  # (last use before ``first``, address)
    for start, size in arena:
        # where a tensor starts or ends (each 64-byte aligned)
        edges = [e for s, n in spans for e in (s, s + n) if start <= e < start + size]
        for x in {start, *(start + -(-(e - start) // 64) * 64 for e in edges)}:
            if x + nbytes > start + size:
                continue
            recent = -1
            for i in range(bisect.bisect_left(starts, x - longest + 1),
                           bisect.bisect_left(starts, x + nbytes)):
                if spans[i][0] + spans[i][1] <= x:
                    continue
                if standing[i] is None:
                    break
                recent = max(recent, standing[i])
            else:
                if best is None or recent > best[0]:
                    best = (recent, x)
    return None if best is None else best[1]


def _fresh_output(fresh: list, keep: list, nbytes: int, first: int, last: int) -> int:
    """The 64-byte-aligned address of ``nbytes`` for a concatenation's output in use from step
    ``first`` to step ``last``: the buffer of an earlier output read for the last time before
    ``first`` where one is large enough (the most recently read: its lines are likely still in
    cache), else a new one (kept by the plan). A new buffer for each output made SqueezeNet's
    fire modules write and read memory no step had touched since the previous call (plan of
    45 MB instead of 22 MB at batch 4; their 1x1 convs 1.5-2x slower in the model)."""
    free = [e for e in fresh if e[1] >= nbytes and e[2] < first]
    if free:
        entry = max(free, key=lambda e: e[2])
        entry[2] = last
        return entry[0]
    buf, base = _aligned_buffer(nbytes)
    keep.append(buf)
    fresh.append([base, nbytes, last])
    return base


def _by_image(step, touch, q: int, images: int) -> bool:
    """Can ``step`` run as ``images`` calls of one image each, its array ``q`` batched: a loop
    over that many images (spec ``image_var``) whose batched arrays are whole 64-byte lines per
    image."""
    _spans, arrays, kernel = touch
    at = kernel.spec.get("image_var")
    if at is None or step[2][at] != images:
        return False
    batched = _image_positions(kernel)
    return q in batched and all(arrays[p].nbytes % images == 0 and
                                (arrays[p].nbytes // images) % 64 == 0 for p in batched)


def _image_steps(step, touch, q: int, per: int, images: int) -> list:
    """``step`` as one step per image with a batch of one: its batched arrays move by an image
    each, its array ``q`` (a part of a concatenation) by ``per`` bytes, an image of the output."""
    address, refs, kvars, name = step
    _spans, arrays, kernel = touch
    batched = set(_image_positions(kernel))
    size = [per if r == q else arrays[r].nbytes // images if r in batched else 0
            for r in range(len(refs))]
    one = list(kvars)
    one[kernel.spec["image_var"]] = 1
    out = []
    for i in range(images):
        moved = [(kind, a + i * size[r], b) if kind == "fixed" else (kind, a, b + i * size[r])
                 for r, (kind, a, b) in enumerate(refs)]
        out.append((address, moved, one, name))
    return out


def _retarget(steps: list, touched: list, t: int, q: int, ptr: int) -> None:
    """Point ref ``q`` of step ``t`` at ``ptr``."""
    refs = list(steps[t][1])
    refs[q] = ("fixed", ptr, 0)
    steps[t] = (steps[t][0], refs, *steps[t][2:])
    touched[t][0][q] = (ptr, touched[t][0][q][1])


def native_function(func, code, consts) -> NativeFunction | None:
    """The fast path of ``func`` (its linked ``code``), or None when the function does more
    than check shapes, allocate and call kernels (branches, calls, closures, packed calls)."""
    for ins in code:
        op = ins[0]
        if op == CALL:
            target, tname = ins[3], ins[4]
            if isinstance(target, NativeKernel):
                continue
            builtin = getattr(target, "builtin", target)  # a call site's own function
            if tname not in PLANNABLE_BUILTINS or BUILTINS.get(tname, (None,))[0] is not builtin:
                return None
        elif op == MOVE:
            if ins[2][0] not in (ARG_REG, ARG_CONST, ARG_IMM):
                return None
        elif op not in (KILL, RET):
            return None
    return NativeFunction(func, code, consts)

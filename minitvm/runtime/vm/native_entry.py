"""The native entry of a straight-line Relay VM function: a call is one native call.

A function without control flow (no ``If``/``Goto``/``Match``, no calls of VM functions or
closures) is, for one *call shape* (its arguments' shapes), a fixed sequence of kernel calls:
the shapes of every intermediate follow from the arguments', dynamic-shape kernels pick the
specialization of those shapes, and allocations only make room. So the second call at a shape
runs in Python and is recorded (the first runs in the dispatch loop: a shape called once is not
worth a record, which costs about five loop runs of a 100,000-kernel function). The record
becomes a plan (``native_plan``): the kernels in order, argument and output pointers patched
per call, and every intermediate placed by liveness in one arena the plan keeps
(``native_plan.arena_offsets``: storage reused across calls and inside a call, as relay.build's
memory plan does). Later calls at that shape allocate the outputs and make one call of
``mtvm_relax_run_plan``.

A call shape stays interpreted (``NO_PLAN``) when its record shows data deciding shapes (a
``ReshapeTensor``/``AllocTensorReg`` whose shape was computed from argument data), a kernel run
by numpy, or a tensor that is not contiguous. Functions with control flow always interpret.
"""

from __future__ import annotations

import ctypes
import itertools
import threading
import weakref

import numpy as np

from .. import threadpool
from ..container import ADT
from ..gc_pause import paused
from ..native_plan import (
    GIL_RELEASE_BYTES,
    Token,
    aligned_buffer,
    arena_offsets,
    data_address,
    keep_plan,
    plan_words,
    root,
    run_plan_address,
)
from ..py_layout import LAYOUT_OK
from . import bytecode as B

__all__ = ["NativeFunction", "MISS", "RECORD", "native_function"]

MAX_PLANS = 64  # call shapes remembered per function (least recently used dropped first)
MAX_PLAN_BYTES = 1 << 30  # and at most this much arena memory held by them together
MAX_RESULT_DEPTH = 32  # nesting of tuples in a result the plan rebuilds
KILL = -1  # the VM's prepared pseudo-instruction (KILL, registers)
_KERNEL = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int32)
# what a straight-line function may do (the VM's prepared code)
STRAIGHT_LINE = frozenset({B.INVOKE_PACKED, B.ALLOC_STORAGE, B.ALLOC_TENSOR, B.ALLOC_TENSOR_REG,
                           B.MOVE, B.LOAD_CONST, B.LOAD_CONSTI, B.GET_FIELD, B.ALLOC_ADT,
                           B.SHAPE_OF, B.RESHAPE_TENSOR, B.RET, KILL})


MISS = Token("MISS")  # the plan does not apply to this call: interpret
RECORD = Token("RECORD")  # a call shape seen once before: record it
SEEN = Token("SEEN")  # a call shape seen once (recorded at its second call)
NO_PLAN = Token("NO_PLAN")  # recorded, not plannable: this shape always interprets


class _Unplannable(Exception):
    """The recorded call cannot be replayed natively."""


class _Root:
    """A buffer a recorded call touched: its address and size then, the steps that used it,
    whether a step wrote it and whether its contents derive from argument data."""

    __slots__ = ("base", "nbytes", "first", "last", "written", "data", "keep", "output")

    def __init__(self, base: int, nbytes: int):
        self.base, self.nbytes = base, nbytes
        self.first = self.last = -1
        self.written = self.data = self.output = False
        self.keep = None  # the array itself, for buffers the plan reads as they are


class _Recorder:
    """The kernel calls of one interpreted call and the buffers they touch."""

    def __init__(self, args: list):
        self.ranges = [(data_address(a), data_address(a) + a.nbytes, i)
                       for i, a in enumerate(args)]
        self.roots: list[_Root] = []
        self.live: dict[int, int] = {}  # id(array) -> index in ``roots`` while it lives
        self._weak: list = []
        self.steps: list[tuple] = []  # (address, refs, kernel vars, name)
        self.touched = 0

    def in_args(self, ptr: int, nbytes: int) -> tuple[int, int] | None:
        """(argument index, byte offset) of the buffer at ``ptr`` inside an argument."""
        for s, e, i in self.ranges:
            if s <= ptr and ptr + nbytes <= e:
                return i, ptr - s
        return None

    def root_of(self, a: np.ndarray) -> int:
        r = a
        while isinstance(r.base, np.ndarray):
            r = r.base
        rid = id(r)
        k = self.live.get(rid)
        if k is None:
            k = len(self.roots)
            self.roots.append(_Root(data_address(r), r.nbytes))
            live = self.live
            live[rid] = k
            # a freed buffer's id may be reused by a later one: forget it when it dies
            self._weak.append(weakref.ref(r, lambda _, rid=rid, k=k, live=live:
                                          live.pop(rid) if live.get(rid) == k else None))
        return k

    def is_data(self, v) -> bool:
        """Does value ``v`` (a shape register) hold argument data or what was computed from
        it?"""
        if not isinstance(v, np.ndarray):
            return False
        if self.in_args(data_address(v), v.nbytes) is not None:
            return True
        return self.roots[self.root_of(v)].data

    def step(self, address: int, arrays: list, nread: int, name: str,
             kvars: tuple = ()) -> list[int]:
        """Record a kernel call: ``arrays[:nread]`` are read, the rest written; ``kvars``: the
        kernel's int64 size arguments (a symbolic kernel's). Returns the arrays' addresses."""
        k = len(self.steps)
        refs, ptrs, data = [], [], False
        roots, ranges = self.roots, self.ranges
        for q, a in enumerate(arrays):
            if not a.flags.c_contiguous:
                raise _Unplannable
            ptr, n = data_address(a), a.nbytes
            ptrs.append(ptr)
            self.touched += n
            hit = None
            if n:
                for lo, hi, i in ranges:
                    if lo <= ptr and ptr + n <= hi:
                        hit = (i, ptr - lo)
                        break
            if hit is not None:
                if q >= nread:
                    raise _Unplannable  # a kernel writing an argument
                refs.append(("arg", hit[0], hit[1]))
                data = True
                continue
            i = self.root_of(a)
            info = roots[i]
            if q < nread:
                if not info.written:
                    if info.keep is None:
                        info.keep = root(a)  # constants, shapes: read as they are
                elif info.data:
                    data = True
            elif info.keep is not None:
                raise _Unplannable  # written after being read as a fixed buffer
            else:
                info.written = True
            if info.first < 0:
                info.first = k
            info.last = k
            refs.append(("root", i, ptr - info.base))
        if data:
            for ref in refs[nread:]:
                if ref[0] == "root":
                    roots[ref[1]].data = True
        self.steps.append((address, refs, kvars, name))
        return ptrs


class _Plan:
    """One call shape's replay: plan words, output sizes, the result's rebuilding."""

    __slots__ = ("words", "addr", "run", "outs", "build", "keep", "lock", "nbytes")

    def __init__(self, words, run, outs, build, keep, nbytes: int):
        self.words = words
        self.addr = words.ctypes.data
        self.run = run
        self.outs = outs  # bytes of each output buffer, allocated per call
        self.build = build  # (args, outs) -> the function's result
        self.keep = keep  # the arena and the fixed buffers: alive as long as the plan
        self.lock = threading.Lock()
        self.nbytes = nbytes


class NativeFunction:
    """The native entry of one straight-line function of a ``VirtualMachine``: plans by call
    shape. ``try_call(args)`` returns the result, ``MISS`` or ``RECORD``."""

    def __init__(self, vm, func_index: int):
        self._vm = weakref.ref(vm)  # (the VM holds its native entries: no reference cycle)
        self.func_index = func_index
        self.plans: dict = {}
        self.used: dict = {}  # call shape -> tick of its last call
        self._tick = itertools.count()
        self._lock = threading.Lock()

    def try_call(self, args: list):
        key = tuple(a.shape for a in args)
        plan = self.plans.get(key)
        if plan is None or plan is SEEN:
            if plan is None:
                self._keep(key, SEEN)
                return MISS
            return RECORD
        if plan is NO_PLAN or not plan.lock.acquire(False):
            return MISS
        self.used[key] = next(self._tick)
        try:
            outs = [np.empty(n, np.uint8) for n in plan.outs]
            nth = threadpool.get_num_threads()
            plan.run((*args, *outs), plan.addr, nth)
            return plan.build(args, outs)
        finally:
            plan.lock.release()

    def record(self, args: list):
        """Run the function on ``args`` in Python, recording a plan for their call shape;
        returns its result. A shape that cannot be planned runs in the VM's loop."""
        key = tuple(a.shape for a in args)
        with paused():
            try:
                if not LAYOUT_OK:
                    raise _Unplannable
                result, rec = self._interpret(args)
                plan = self._plan(args, rec, result)
            except _Unplannable:
                plan = NO_PLAN
        self._keep(key, plan)
        if plan is NO_PLAN:  # (kernels are pure: the loop runs the call again from the start)
            return self._vm()._execute_loop(self.func_index, args)
        return result

    def _keep(self, key, plan) -> None:
        with self._lock:  # (a plan replacing the shape's SEEN mark)
            keep_plan(self.plans, self.used, self._tick, key, plan, MAX_PLANS, MAX_PLAN_BYTES)

    # ------------------------------------------------------------------ recording
    def _interpret(self, args: list):
        vm = self._vm()
        code, nreg, _, _ = vm._code[self.func_index]
        kernels = vm.exe.kernels
        consts = vm.exe.constants
        nthreads = vm._nthreads
        regs = [None] * nreg
        regs[:len(args)] = args
        rec = _Recorder(args)
        entries: dict = {}  # kernel address -> its ctypes function
        for ins in code:
            op = ins[0]
            if op == B.INVOKE_PACKED:
                k = kernels[ins[1]]
                inputs = [regs[r] for r in ins[2]]
                if ins[4]:  # a dynamic-shape kernel: the specialization of these shapes
                    if getattr(k.run, "value_inputs", ()):
                        raise _Unplannable  # (and of input values a plan keyed on shapes
                        # would not see: a dyn.reshape's new shape)
                    native_call = getattr(k.run, "native_call", None)
                    got = native_call(inputs) if native_call is not None else None
                    if got is None:
                        raise _Unplannable  # numpy runs it
                    kernel, inputs, outs, kvars = got
                    for r, v in zip(ins[3], outs, strict=True):
                        regs[r] = v
                    fast = getattr(kernel.kernel, "_fast_call", None) if kvars is None else None
                else:
                    if k.kind != "native":
                        raise _Unplannable
                    kernel, outs, fast, kvars = k, [regs[r] for r in ins[3]], ins[5], None
                arrays = [*inputs, *kernel.consts, *outs]
                nread = len(arrays) - len(outs)
                if kernel.ws_bytes:
                    arrays.append(np.empty(kernel.ws_bytes, np.uint8))
                    fast = None
                ptrs = rec.step(kernel.address, arrays, nread, kernel.name,
                                () if kvars is None else tuple(kvars))
                if fast is not None:  # the entry reading the arrays' data pointers itself
                    fast(tuple(arrays), nthreads)
                else:
                    entry = entries.get(kernel.address)
                    if entry is None:
                        entry = entries[kernel.address] = _KERNEL(kernel.address)
                    entry((ctypes.c_void_p * len(ptrs))(*ptrs), kvars, nthreads)
            elif op == B.ALLOC_STORAGE:
                regs[ins[4]] = np.empty(ins[1], np.uint8)
            elif op == B.ALLOC_TENSOR:
                off = ins[2]
                regs[ins[5]] = regs[ins[1]][off:off + ins[6]].view(ins[4]).reshape(ins[3])
            elif op == KILL:
                for r in ins[1]:
                    regs[r] = None
            elif op == B.MOVE:
                regs[ins[2]] = regs[ins[1]]
            elif op == B.LOAD_CONST:
                regs[ins[2]] = consts[ins[1]]
            elif op == B.LOAD_CONSTI:
                regs[ins[2]] = ins[1]
            elif op == B.GET_FIELD:
                regs[ins[3]] = regs[ins[1]].fields[ins[2]]
            elif op == B.ALLOC_ADT:
                regs[ins[3]] = ADT(ins[1], [regs[r] for r in ins[2]])
            elif op == B.SHAPE_OF:
                regs[ins[2]] = np.asarray(regs[ins[1]].shape, dtype="int64")
            elif op == B.RESHAPE_TENSOR or op == B.ALLOC_TENSOR_REG:
                shape_reg = regs[ins[2] if op == B.RESHAPE_TENSOR else ins[3]]
                if rec.is_data(shape_reg):
                    raise _Unplannable  # a shape read from data
                shape = tuple(int(d) for d in np.asarray(shape_reg).reshape(-1))
                if op == B.RESHAPE_TENSOR:
                    regs[ins[3]] = np.reshape(regs[ins[1]], shape)
                else:
                    dt = np.dtype(ins[4])
                    n = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
                    regs[ins[5]] = regs[ins[1]][ins[2]:ins[2] + n].view(dt).reshape(shape)
            elif op == B.RET:
                return regs[ins[1]], rec
            else:
                raise _Unplannable
        raise _Unplannable

    def _plan(self, args: list, rec: _Recorder, result) -> _Plan:
        nargs = len(args)
        owners: dict[int, int] = {}  # root index -> index among the outputs
        out_sizes: list[int] = []

        def leaf(v):
            """How the result's leaf ``v`` is rebuilt per call."""
            if not isinstance(v, np.ndarray):
                return lambda a, o: v
            if not v.flags.c_contiguous:
                raise _Unplannable
            shape, dtype = v.shape, v.dtype
            hit = rec.in_args(data_address(v), v.nbytes) if v.nbytes else None
            if hit is not None:
                i, off = hit
                return lambda a, o: np.ndarray(shape, dtype, a[i], off)
            k = rec.root_of(v)
            info = rec.roots[k]
            if not info.written:  # computed at record time (a shape): a copy each call
                return lambda a, o: v.copy()
            if k not in owners:
                owners[k] = len(out_sizes)
                out_sizes.append(info.nbytes)
                info.output = True
            j, off = owners[k], data_address(v) - info.base
            if off == 0 and v.nbytes == info.nbytes:
                return lambda a, o: o[j].view(dtype).reshape(shape)
            return lambda a, o: np.ndarray(shape, dtype, o[j], off)

        def template(v, depth):
            if depth > MAX_RESULT_DEPTH:
                raise _Unplannable
            if isinstance(v, ADT):
                tag, parts = v.tag, [template(f, depth + 1) for f in v.fields]
                return lambda a, o: ADT(tag, [p(a, o) for p in parts])
            return leaf(v)

        build = template(result, 0)
        # intermediates: one arena, placed by liveness
        inner = [k for k, r in enumerate(rec.roots) if r.written and not r.output]
        offsets, size = arena_offsets([(rec.roots[k].nbytes, rec.roots[k].first,
                                        rec.roots[k].last) for k in inner])
        arena, base = aligned_buffer(size)
        where = {k: base + off for k, off in zip(inner, offsets, strict=True)}
        keep = [arena] + [r.keep for r in rec.roots if r.keep is not None]
        steps = []
        for address, refs, kvars, name in rec.steps:
            out = []
            for kind, a, b in refs:
                if kind == "arg":
                    out.append((kind, a, b))
                    continue
                info = rec.roots[a]
                if info.output:
                    out.append(("arg", nargs + owners[a], b))
                elif info.written:
                    out.append(("fixed", where[a] + b, 0))
                else:
                    out.append(("fixed", info.base + b, 0))
            steps.append((address, out, kvars, name))
        words = plan_words(steps)
        py_run, nogil_run = run_plan_address()
        run = nogil_run if rec.touched > GIL_RELEASE_BYTES else py_run
        return _Plan(words, run, out_sizes, build, keep, size)


def native_function(vm, func_index: int) -> NativeFunction | None:
    """The native entry of the VM's function ``func_index``, or None when it has control flow,
    calls, closures or parameters that are not tensors (it then always interprets)."""
    code, _, _, _ = vm._code[func_index]
    f = vm.exe.functions[func_index]
    if any(rec[0] != "tensor" for rec in f.param_types):
        return None
    if not any(ins[0] == B.INVOKE_PACKED for ins in code):
        return None
    if any(ins[0] not in STRAIGHT_LINE for ins in code):
        return None
    return NativeFunction(vm, func_index)

"""Native plans: a straight-line VM function replayed as one native call (shared by the VMs).

A *plan* is a fixed list of kernel calls for one call shape. ``plan_words`` lays it out as int64
words: a header, *patches* (pointer-table slots filled per call with the data pointer of an item
of the call's tuple of arrays, plus a byte offset), each step's (kernel address, table offset,
vars offset), the pointer table and the kernels' vars. ``mtvm_relax_run_plan`` (LLVM, compiled
once per process) reads the arrays' data pointers straight out of the tuple, patches the table
and calls every kernel ``fn(args, vars, nthreads)`` in order. The Relax VM's native entry
(``relax_vm.native_entry``) and the Relay VM's (``vm.native_entry``) record their plans in their
own ways and both run them here. ``arena_offsets`` packs the intermediates of a recorded call
into one buffer by liveness.
"""

from __future__ import annotations

import ctypes
import threading

import numpy as np

from .py_layout import ARRAY_DATA_OFFSET, LAYOUT_OK, TUPLE_ITEMS_OFFSET

__all__ = ["GIL_RELEASE_BYTES", "HEADER", "Token", "aligned_buffer", "arena_offsets", "data_address",
           "keep_plan", "one_step_words", "plan_words", "root", "run_plan_address"]

GIL_RELEASE_BYTES = 1 << 18  # plans touching more bytes than this release the GIL
HEADER = 4  # plan words: npatch, nsteps, table address, vars address
ALIGN = 64  # byte alignment of every intermediate placed in an arena

class Token:
    """A named marker a native entry returns or stores in place of a plan (MISS, RECORD, ...)."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self):
        return self.name


_RUN_PLAN_IR = f"""
define void @mtvm_relax_run_plan(ptr %tup, ptr %plan, i32 %nth) {{
entry:
  %np = load i64, ptr %plan
  %h1 = getelementptr i64, ptr %plan, i64 1
  %ns = load i64, ptr %h1
  %h2 = getelementptr i64, ptr %plan, i64 2
  %table = load ptr, ptr %h2
  %h3 = getelementptr i64, ptr %plan, i64 3
  %vars = load ptr, ptr %h3
  %patches = getelementptr i64, ptr %plan, i64 {HEADER}
  %anyp = icmp sgt i64 %np, 0
  br i1 %anyp, label %patch, label %patched
patch:
  %i = phi i64 [ 0, %entry ], [ %inext, %patch ]
  %pi = mul i64 %i, 3
  %q0 = getelementptr i64, ptr %patches, i64 %pi
  %slot = load i64, ptr %q0
  %q1 = getelementptr i64, ptr %q0, i64 1
  %idx = load i64, ptr %q1
  %q2 = getelementptr i64, ptr %q0, i64 2
  %off = load i64, ptr %q2
  %ib = mul i64 %idx, 8
  %ioff = add i64 %ib, {TUPLE_ITEMS_OFFSET}
  %itemp = getelementptr i8, ptr %tup, i64 %ioff
  %item = load ptr, ptr %itemp
  %datap = getelementptr i8, ptr %item, i64 {ARRAY_DATA_OFFSET}
  %data = load ptr, ptr %datap
  %dst = getelementptr i8, ptr %data, i64 %off
  %slotp = getelementptr ptr, ptr %table, i64 %slot
  store ptr %dst, ptr %slotp
  %inext = add i64 %i, 1
  %pmore = icmp slt i64 %inext, %np
  br i1 %pmore, label %patch, label %patched
patched:
  %np3 = mul i64 %np, 3
  %steps = getelementptr i64, ptr %patches, i64 %np3
  %anys = icmp sgt i64 %ns, 0
  br i1 %anys, label %step, label %done
step:
  %j = phi i64 [ 0, %patched ], [ %jnext, %step ]
  %sj = mul i64 %j, 3
  %r0 = getelementptr i64, ptr %steps, i64 %sj
  %fn = load ptr, ptr %r0
  %r1 = getelementptr i64, ptr %r0, i64 1
  %toff = load i64, ptr %r1
  %r2 = getelementptr i64, ptr %r0, i64 2
  %voff = load i64, ptr %r2
  %targs = getelementptr ptr, ptr %table, i64 %toff
  %vargs = getelementptr i64, ptr %vars, i64 %voff
  call void %fn(ptr %targs, ptr %vargs, i32 %nth)
  %jnext = add i64 %j, 1
  %smore = icmp slt i64 %jnext, %ns
  br i1 %smore, label %step, label %done
done:
  ret void
}}
"""

_RUN_PLAN = None
_RUN_PLAN_LOCK = threading.Lock()
_PY_RUN = ctypes.PYFUNCTYPE(None, ctypes.py_object, ctypes.c_void_p, ctypes.c_int32)
_NOGIL_RUN = ctypes.CFUNCTYPE(None, ctypes.py_object, ctypes.c_void_p, ctypes.c_int32)


def run_plan_address() -> tuple[object, object]:
    """(GIL-holding, GIL-releasing) ctypes functions of ``mtvm_relax_run_plan``: JIT-compiled
    once per process."""
    global _RUN_PLAN
    with _RUN_PLAN_LOCK:
        if _RUN_PLAN is None:
            from . import jit

            compiled = jit.compile_ir(_RUN_PLAN_IR, "mtvm_relax_run_plan", opt=2)
            _RUN_PLAN = (compiled, _PY_RUN(compiled.address), _NOGIL_RUN(compiled.address))
        return _RUN_PLAN[1], _RUN_PLAN[2]


def root(a: np.ndarray) -> np.ndarray:
    """The array owning ``a``'s memory (numpy views point at their owner, or at a view of it)."""
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


_VOID_AT = ctypes.c_void_p.from_address


def data_address(a: np.ndarray) -> int:
    """``a.ctypes.data``, read from the array object (``py_layout``: eight times faster, for
    recordings that take the address of every buffer of every kernel call)."""
    if LAYOUT_OK:
        return _VOID_AT(id(a) + ARRAY_DATA_OFFSET).value or 0
    return a.ctypes.data


def aligned_buffer(nbytes: int) -> tuple[np.ndarray, int]:
    """A fresh buffer of at least ``nbytes`` and the 64-byte-aligned address inside it."""
    buf = np.empty(nbytes + ALIGN, np.uint8)
    return buf, buf.ctypes.data + (-buf.ctypes.data) % ALIGN


def plan_words(steps: list) -> np.ndarray:
    """The words ``mtvm_relax_run_plan`` reads for ``steps`` ``(kernel address, refs, vars,
    name)``: each ref is ``("arg", item, byte offset)`` (patched per call from item ``item`` of
    the call tuple) or ``("fixed", address, _)``."""
    patches, table, kv = [], [], []
    step_words = []
    for address, refs, kvars, _name in steps:
        step_words.append((address, len(table), len(kv)))
        for kind, a, b in refs:
            if kind == "arg":
                patches.append((len(table), a, b))
                table.append(0)
            else:
                table.append(a)
        kv.extend(kvars)
    head = HEADER + 3 * len(patches) + 3 * len(step_words)
    words = np.zeros(head + len(table) + len(kv), np.int64)
    words[0], words[1] = len(patches), len(step_words)
    words[2] = words.ctypes.data + 8 * head
    words[3] = words.ctypes.data + 8 * (head + len(table))
    flat = [x for p in patches for x in p] + [x for s in step_words for x in s]
    words[HEADER:head] = np.array(flat, np.uint64).view(np.int64) if flat else 0
    words[head:head + len(table)] = np.array(table, np.uint64).view(np.int64) if table else 0
    words[head + len(table):] = kv
    return words


def one_step_words(w) -> list:
    """One plan per step of plan words ``w`` (all the patches, then that step alone), sharing
    its pointer table and vars: runs the kernels one at a time, for profiles."""
    npatch, nsteps = int(w[0]), int(w[1])
    head = HEADER + 3 * npatch
    out = []
    for j in range(nsteps):
        one = np.concatenate([w[:head], w[head + 3 * j:head + 3 * j + 3]])
        one[1] = 1
        out.append(one)
    return out


def arena_offsets(intervals: list[tuple[int, int, int]]) -> tuple[list[int], int]:
    """``(offsets, arena bytes)`` placing buffers ``(nbytes, first step, last step)`` in one
    arena: walking the steps in order, the buffers first used at a step take the best-fitting
    free block (else the arena grows) before those last used there are freed, so a step's
    outputs never overlap its inputs; offsets are multiples of ``ALIGN``."""
    n = len(intervals)
    sizes = [-(-max(b, 1) // ALIGN) * ALIGN for b, _, _ in intervals]
    by_first = sorted(range(n), key=lambda i: intervals[i][1])
    by_last = sorted(range(n), key=lambda i: intervals[i][2])
    offsets = [0] * n
    free: list[list[int]] = []  # [offset, bytes], sorted by offset, neighbours merged
    top = 0
    a = e = 0
    while a < n or e < n:
        # the next step where something happens: allocations there come before releases
        step = min(intervals[by_first[a]][1] if a < n else 1 << 62,
                   intervals[by_last[e]][2] if e < n else 1 << 62)
        while a < n and intervals[by_first[a]][1] == step:
            i = by_first[a]
            a += 1
            need = sizes[i]
            best = None
            for b in free:
                if b[1] >= need and (best is None or b[1] < best[1]):
                    best = b
            if best is not None:
                offsets[i] = best[0]
                best[0] += need
                best[1] -= need
                if best[1] == 0:
                    free.remove(best)
            elif free and free[-1][0] + free[-1][1] == top:  # grow the free block at the top
                offsets[i] = free.pop()[0]
                top = offsets[i] + need
            else:
                offsets[i] = top
                top += need
        while e < n and intervals[by_last[e]][2] == step:
            i = by_last[e]
            e += 1
            _release(free, offsets[i], sizes[i])
    return offsets, top


def _release(free: list[list[int]], offset: int, nbytes: int) -> None:
    """Return ``[offset, offset + nbytes)`` to the sorted free list, merging neighbours."""
    lo, hi = 0, len(free)
    while lo < hi:
        mid = (lo + hi) // 2
        if free[mid][0] < offset:
            lo = mid + 1
        else:
            hi = mid
    free.insert(lo, [offset, nbytes])
    if lo + 1 < len(free) and free[lo][0] + free[lo][1] == free[lo + 1][0]:
        free[lo][1] += free.pop(lo + 1)[1]
    if lo > 0 and free[lo - 1][0] + free[lo - 1][1] == free[lo][0]:
        free[lo - 1][1] += free.pop(lo)[1]


def keep_plan(plans: dict, used: dict, tick, key, plan, max_plans: int, max_bytes: int) -> None:
    """Store ``plan`` for call shape ``key`` in ``plans``, first dropping the least recently used
    (``used``: call shape -> the ``tick`` count of its last call) while ``max_plans`` plans or
    more than ``max_bytes`` of their arenas (``nbytes``) would be held. Both VMs' native entries
    keep their plans so; the caller holds its lock."""
    plans.pop(key, None)  # (a plan replacing a mark, or an older plan, for the same shape)
    held = sum(getattr(p, "nbytes", 0) for p in plans.values())
    need = getattr(plan, "nbytes", 0)
    while plans and (len(plans) >= max_plans or held + need > max_bytes):
        old = min(plans, key=lambda k: used.get(k, -1))
        used.pop(old, None)
        held -= getattr(plans.pop(old), "nbytes", 0)
    plans[key] = plan
    used[key] = next(tick)
    if len(used) > 2 * len(plans):  # ticks of shapes dropped meanwhile
        for k in [k for k in used if k not in plans]:
            del used[k]

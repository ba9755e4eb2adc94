"""A kernel call whose argument checks run in native code: one routine, JIT-compiled once per
process, reads a table describing a kernel's buffer parameters and checks a Python tuple of
numpy arrays against it — exact ``ndarray`` type, dtype (the array's descriptor is the expected
one, as ``a.dtype is d``), rank, constant dimensions, dimensions that must equal another's,
C-contiguity — then fills the entry's symbolic dimension values and calls it.

The Python fast paths made the same checks one attribute at a time (``a.flags`` alone makes an
object): about a microsecond a call for a three-argument kernel, as much as a small kernel's
work in a loop's step. Here a call is one ctypes call. The routine never raises: it answers
0 (ran) or 1 (an argument does not fit: the caller's checked path reports it, with the same
messages as before). The tables hold this process's addresses (types, descriptors, the entry);
the routine's code holds none, so it is compiled once and cached on disk like any kernel.
"""

from __future__ import annotations

import ctypes
import threading

import numpy as np

from .py_layout import (
    ARRAY_C_CONTIGUOUS,
    ARRAY_DATA_OFFSET,
    ARRAY_DESCR_OFFSET,
    ARRAY_DIMS_OFFSET,
    ARRAY_FLAGS_OFFSET,
    ARRAY_ND_OFFSET,
    FIELDS_OK,
    OB_TYPE_OFFSET,
    TUPLE_ITEMS_OFFSET,
    TUPLE_SIZE_OFFSET,
)

__all__ = ["FREE", "MISMATCH", "RAN", "checked_call_routine", "checked_call_table"]

RAN, MISMATCH = 0, 1
FREE = -1  # a dimension slot with no constraint (a symbolic dimension that binds a value)

# The table, in i64 words: [entry, ndarray type, n params, S dims in all, n vars, limit,
# PyEval_SaveThread, PyEval_RestoreThread, fixed values, descr[n], ndim[n], constraint[S],
# var slot[n vars]]; the entry's values are read from the slots, or are the i64 array at
# ``fixed`` when that is not 0 (a call bound to its shapes);
# a constraint >= 0 is the dimension's value, FREE none, c <= -2 "equals slot -2 - c". Slots:
# every parameter's dimensions in order. Arrays of more than ``limit`` elements in all run the
# entry without the GIL (as the Python paths did: other threads run meanwhile).
_IR = f"""
define i32 @mtvm_checked_call(ptr %tup, ptr %t, i32 %nth) {{
entry:
  %fn = load ptr, ptr %t
  %t1 = getelementptr i64, ptr %t, i64 1
  %ndt = load ptr, ptr %t1
  %t2 = getelementptr i64, ptr %t, i64 2
  %n = load i64, ptr %t2
  %t3 = getelementptr i64, ptr %t, i64 3
  %S = load i64, ptr %t3
  %t4 = getelementptr i64, ptr %t, i64 4
  %nv = load i64, ptr %t4
  %t5 = getelementptr i64, ptr %t, i64 5
  %lim = load i64, ptr %t5
  %tszp = getelementptr i8, ptr %tup, i64 {TUPLE_SIZE_OFFSET}
  %tsz = load i64, ptr %tszp
  %szok = icmp eq i64 %tsz, %n
  %any = icmp sgt i64 %n, 0
  %go = and i1 %szok, %any
  br i1 %go, label %pre, label %fail
pre:
  %np1 = add i64 %n, 1
  %ptrs = alloca ptr, i64 %np1
  %Sp1 = add i64 %S, 1
  %slots = alloca i64, i64 %Sp1
  %nvp1 = add i64 %nv, 1
  %vars = alloca i64, i64 %nvp1
  %descrs = getelementptr i64, ptr %t, i64 9
  %t8 = getelementptr i64, ptr %t, i64 8
  %fixed = load ptr, ptr %t8
  %ndims = getelementptr i64, ptr %descrs, i64 %n
  %cons = getelementptr i64, ptr %ndims, i64 %n
  %vslots = getelementptr i64, ptr %cons, i64 %S
  br label %ploop
ploop:
  %k = phi i64 [ 0, %pre ], [ %k1, %pnext ]
  %s = phi i64 [ 0, %pre ], [ %s1, %pnext ]
  %tot = phi i64 [ 0, %pre ], [ %tot1, %pnext ]
  %kb = mul i64 %k, 8
  %koff = add i64 %kb, {TUPLE_ITEMS_OFFSET}
  %itemp = getelementptr i8, ptr %tup, i64 %koff
  %item = load ptr, ptr %itemp
  %typ = getelementptr i8, ptr %item, i64 {OB_TYPE_OFFSET}
  %ty = load ptr, ptr %typ
  %tyok = icmp eq ptr %ty, %ndt
  br i1 %tyok, label %pa, label %fail
pa:
  %descrp = getelementptr i8, ptr %item, i64 {ARRAY_DESCR_OFFSET}
  %descr = load i64, ptr %descrp
  %wdp = getelementptr i64, ptr %descrs, i64 %k
  %wd = load i64, ptr %wdp
  %dok = icmp eq i64 %descr, %wd
  %ndp = getelementptr i8, ptr %item, i64 {ARRAY_ND_OFFSET}
  %nd32 = load i32, ptr %ndp
  %nd = sext i32 %nd32 to i64
  %wnp = getelementptr i64, ptr %ndims, i64 %k
  %wn = load i64, ptr %wnp
  %nok = icmp eq i64 %nd, %wn
  %flp = getelementptr i8, ptr %item, i64 {ARRAY_FLAGS_OFFSET}
  %fl = load i32, ptr %flp
  %cc = and i32 %fl, {ARRAY_C_CONTIGUOUS}
  %cok = icmp ne i32 %cc, 0
  %ok1 = and i1 %dok, %nok
  %ok2 = and i1 %ok1, %cok
  br i1 %ok2, label %pb, label %fail
pb:
  %datap = getelementptr i8, ptr %item, i64 {ARRAY_DATA_OFFSET}
  %data = load ptr, ptr %datap
  %slotp = getelementptr ptr, ptr %ptrs, i64 %k
  store ptr %data, ptr %slotp
  %dimsp = getelementptr i8, ptr %item, i64 {ARRAY_DIMS_OFFSET}
  %dims = load ptr, ptr %dimsp
  %hasd = icmp sgt i64 %nd, 0
  br i1 %hasd, label %dloop, label %pnext
dloop:
  %d = phi i64 [ 0, %pb ], [ %d1, %dloop ]
  %prod = phi i64 [ 1, %pb ], [ %prod1, %dloop ]
  %dvp = getelementptr i64, ptr %dims, i64 %d
  %dv = load i64, ptr %dvp
  %si = add i64 %s, %d
  %sp = getelementptr i64, ptr %slots, i64 %si
  store i64 %dv, ptr %sp
  %prod1 = mul i64 %prod, %dv
  %d1 = add i64 %d, 1
  %dmore = icmp slt i64 %d1, %nd
  br i1 %dmore, label %dloop, label %pnext
pnext:
  %pr = phi i64 [ 1, %pb ], [ %prod1, %dloop ]
  %tot1 = add i64 %tot, %pr
  %s1 = add i64 %s, %nd
  %k1 = add i64 %k, 1
  %pmore = icmp slt i64 %k1, %n
  br i1 %pmore, label %ploop, label %cpre
cpre:
  %hasS = icmp sgt i64 %S, 0
  br i1 %hasS, label %cloop, label %vpre
cloop:
  %i = phi i64 [ 0, %cpre ], [ %i1, %cnext ]
  %cp = getelementptr i64, ptr %cons, i64 %i
  %c = load i64, ptr %cp
  %vp = getelementptr i64, ptr %slots, i64 %i
  %v = load i64, ptr %vp
  %isconst = icmp sge i64 %c, 0
  br i1 %isconst, label %cconst, label %cref
cconst:
  %ceq = icmp eq i64 %v, %c
  br i1 %ceq, label %cnext, label %fail
cref:
  %isfree = icmp eq i64 %c, {FREE}
  br i1 %isfree, label %cnext, label %cref2
cref2:
  %j = sub i64 -2, %c
  %wp = getelementptr i64, ptr %slots, i64 %j
  %w = load i64, ptr %wp
  %req = icmp eq i64 %v, %w
  br i1 %req, label %cnext, label %fail
cnext:
  %i1 = add i64 %i, 1
  %cmore = icmp slt i64 %i1, %S
  br i1 %cmore, label %cloop, label %vpre
vpre:
  %hasv = icmp sgt i64 %nv, 0
  br i1 %hasv, label %vloop, label %size
vloop:
  %q = phi i64 [ 0, %vpre ], [ %q1, %vloop ]
  %vsp = getelementptr i64, ptr %vslots, i64 %q
  %vs = load i64, ptr %vsp
  %vvp = getelementptr i64, ptr %slots, i64 %vs
  %vv = load i64, ptr %vvp
  %vdst = getelementptr i64, ptr %vars, i64 %q
  store i64 %vv, ptr %vdst
  %q1 = add i64 %q, 1
  %vmore = icmp slt i64 %q1, %nv
  br i1 %vmore, label %vloop, label %size
size:
  %isfixed = icmp ne ptr %fixed, null
  %vals = select i1 %isfixed, ptr %fixed, ptr %vars
  %big = icmp sgt i64 %tot1, %lim
  br i1 %big, label %nogil, label %call
call:
  call void %fn(ptr %ptrs, ptr %vals, i32 %nth)
  ret i32 {RAN}
nogil:
  %t6 = getelementptr i64, ptr %t, i64 6
  %save = load ptr, ptr %t6
  %t7 = getelementptr i64, ptr %t, i64 7
  %restore = load ptr, ptr %t7
  %ts = call ptr %save()
  call void %fn(ptr %ptrs, ptr %vals, i32 %nth)
  call void %restore(ptr %ts)
  ret i32 {RAN}
fail:
  ret i32 {MISMATCH}
}}
"""
_ROUTINE = None
_SAVE = ctypes.cast(ctypes.pythonapi.PyEval_SaveThread, ctypes.c_void_p).value
_RESTORE = ctypes.cast(ctypes.pythonapi.PyEval_RestoreThread, ctypes.c_void_p).value
_LOCK = threading.Lock()


def checked_call_routine():
    """``routine(args_tuple, table_address, threads) -> RAN | MISMATCH`` (a ctypes
    function holding the GIL), JIT-compiled once per process; None where the array layout is
    not the one the routine reads (``py_layout.FIELDS_OK``)."""
    global _ROUTINE
    if not FIELDS_OK:
        return None
    with _LOCK:
        if _ROUTINE is None:
            from . import jit

            compiled = jit.compile_ir(_IR, "mtvm_checked_call", opt=2)
            proto = ctypes.PYFUNCTYPE(ctypes.c_int32, ctypes.py_object, ctypes.c_void_p,
                                      ctypes.c_int32)
            _ROUTINE = (compiled, proto(compiled.address))
        return _ROUTINE[1]


def checked_call_table(address: int, params: list, vars_: list, checks: list, limit: int,
                       fixed_vars: int = 0):
    """The routine's table (a ctypes array: keep it alive while calling) for an entry at
    ``address`` whose parameters are all buffers: ``params`` ``[(dtype, dims)]`` with -1 for a
    symbolic dimension; ``vars_`` ``[(k, d)]``: the entry's variable ``i`` is dimension ``d`` of
    parameter ``k``; ``checks`` ``[(k, d, k2, d2)]``: dimension ``d`` of ``k`` must equal
    dimension ``d2`` of ``k2``; ``fixed_vars``: the address of an i64 array passed as the
    entry's values instead (0: none). None when there is no parameter or a place is out of
    range."""
    if not params:
        return None
    start, slot = [], 0
    for _dtype, dims in params:
        start.append(slot)
        slot += len(dims)
    cons = [FREE] * slot
    for k, (_dtype, dims) in enumerate(params):
        for d, w in enumerate(dims):
            if w != -1:
                if w < 0:
                    return None
                cons[start[k] + d] = int(w)

    def at(k: int, d: int) -> int | None:
        ok = 0 <= k < len(params) and 0 <= d < len(params[k][1])
        return start[k] + d if ok else None

    for k, d, k2, d2 in checks:
        i, j = at(k, d), at(k2, d2)
        if i is None or j is None or cons[i] != FREE:
            return None
        cons[i] = -2 - j
    vslots = [at(k, d) for k, d in vars_]
    if any(v is None for v in vslots):
        return None
    words = [address, id(np.ndarray), len(params), slot, len(vslots), limit, _SAVE, _RESTORE,
             fixed_vars]
    words += [id(np.dtype(dtype)) for dtype, _ in params]
    words += [len(dims) for _, dims in params]
    words += cons + vslots
    return (ctypes.c_int64 * len(words))(*words)

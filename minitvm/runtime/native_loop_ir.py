"""The native side of ``runtime.native_loop``: ``mtvm_native_loop``, which runs a laid-out
loop step's op words (kernel calls, fresh buffers, moves, row writes, exits) until an exit is
taken, and its entry ``mtvm_native_loop_go``, which first fills in a run's slots (the live
arrays' data pointers read from a tuple of them, the buffers' from the arena) and starts the
registers as their own slots. LLVM IR, JIT-compiled once per process; the op codes are
``native_loop``'s (``_BACK`` 0 ... ``_EXIT`` 6)."""

from __future__ import annotations

import ctypes
import threading

from .py_layout import ARRAY_DATA_OFFSET, TUPLE_ITEMS_OFFSET

__all__ = ["loop_runner_address"]

_LOOP_IR = """
declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)

define internal i64 @scalar(ptr %objs, ptr %regs, i64 %kind, i64 %val, i64 %code) {
entry:
  %isimm = icmp eq i64 %kind, 0
  br i1 %isimm, label %imm, label %mem
imm:
  ret i64 %val
mem:
  %sp = getelementptr i64, ptr %regs, i64 %val
  %slot = load i64, ptr %sp
  %pp = getelementptr ptr, ptr %objs, i64 %slot
  %p = load ptr, ptr %pp
  switch i64 %code, label %c8 [ i64 1, label %c1
                                i64 2, label %c2
                                i64 3, label %c3
                                i64 4, label %c4
                                i64 5, label %c5
                                i64 6, label %c6
                                i64 7, label %c7 ]
c1:
  %v1 = load i8, ptr %p
  %e1 = sext i8 %v1 to i64
  ret i64 %e1
c2:
  %v2 = load i16, ptr %p
  %e2 = sext i16 %v2 to i64
  ret i64 %e2
c3:
  %v3 = load i32, ptr %p
  %e3 = sext i32 %v3 to i64
  ret i64 %e3
c4:
  %v4 = load i64, ptr %p
  ret i64 %v4
c5:
  %v5 = load i8, ptr %p
  %e5 = zext i8 %v5 to i64
  ret i64 %e5
c6:
  %v6 = load i16, ptr %p
  %e6 = zext i16 %v6 to i64
  ret i64 %e6
c7:
  %v7 = load i32, ptr %p
  %e7 = zext i32 %v7 to i64
  ret i64 %e7
c8:
  %v8 = load i64, ptr %p
  ret i64 %v8
}

define internal i64 @word(ptr %prog, i64 %ip, i64 %k) {
entry:
  %i = add i64 %ip, %k
  %p = getelementptr i64, ptr %prog, i64 %i
  %w = load i64, ptr %p
  ret i64 %w
}

define internal ptr @obj(ptr %objs, i64 %slot) {
entry:
  %pp = getelementptr ptr, ptr %objs, i64 %slot
  %p = load ptr, ptr %pp
  ret ptr %p
}

define internal ptr @regobj(ptr %objs, ptr %regs, i64 %r) {
entry:
  %sp = getelementptr i64, ptr %regs, i64 %r
  %slot = load i64, ptr %sp
  %p = call ptr @obj(ptr %objs, i64 %slot)
  ret ptr %p
}

define internal void @setreg(ptr %regs, i64 %r, i64 %v) {
entry:
  %sp = getelementptr i64, ptr %regs, i64 %r
  store i64 %v, ptr %sp
  ret void
}

define i64 @mtvm_native_loop(ptr %prog, ptr %objs, ptr %regs, ptr %snap, i64 %nreg,
                             ptr %iters, ptr %table, i32 %nth) {
entry:
  %ipp = alloca i64
  store i64 0, ptr %ipp
  %nb = mul i64 %nreg, 8
  call void @llvm.memcpy.p0.p0.i64(ptr %snap, ptr %regs, i64 %nb, i1 false)
  br label %dispatch
dispatch:
  %ip = load i64, ptr %ipp
  %op = call i64 @word(ptr %prog, i64 %ip, i64 0)
  switch i64 %op, label %bad [ i64 0, label %back
                               i64 1, label %fresh
                               i64 2, label %move
                               i64 3, label %set
                               i64 4, label %callk
                               i64 5, label %row
                               i64 6, label %exit ]
back:
  %t0 = load i64, ptr %iters
  %t1 = add i64 %t0, 1
  store i64 %t1, ptr %iters
  call void @llvm.memcpy.p0.p0.i64(ptr %snap, ptr %regs, i64 %nb, i1 false)
  store i64 0, ptr %ipp
  br label %dispatch
fresh:
  %fd = call i64 @word(ptr %prog, i64 %ip, i64 1)
  %fa = call i64 @word(ptr %prog, i64 %ip, i64 2)
  %fb = call i64 @word(ptr %prog, i64 %ip, i64 3)
  %ft = load i64, ptr %iters
  %fpar = and i64 %ft, 1
  %fodd = icmp ne i64 %fpar, 0
  %fs = select i1 %fodd, i64 %fb, i64 %fa
  call void @setreg(ptr %regs, i64 %fd, i64 %fs)
  %fip = add i64 %ip, 4
  store i64 %fip, ptr %ipp
  br label %dispatch
move:
  %md = call i64 @word(ptr %prog, i64 %ip, i64 1)
  %ms = call i64 @word(ptr %prog, i64 %ip, i64 2)
  %msp = getelementptr i64, ptr %regs, i64 %ms
  %mv = load i64, ptr %msp
  call void @setreg(ptr %regs, i64 %md, i64 %mv)
  %mip = add i64 %ip, 3
  store i64 %mip, ptr %ipp
  br label %dispatch
set:
  %sd = call i64 @word(ptr %prog, i64 %ip, i64 1)
  %sv = call i64 @word(ptr %prog, i64 %ip, i64 2)
  call void @setreg(ptr %regs, i64 %sd, i64 %sv)
  %sip = add i64 %ip, 3
  store i64 %sip, ptr %ipp
  br label %dispatch
callk:
  %kfn = call i64 @word(ptr %prog, i64 %ip, i64 1)
  %kkv = call i64 @word(ptr %prog, i64 %ip, i64 2)
  %kn = call i64 @word(ptr %prog, i64 %ip, i64 3)
  %kany = icmp sgt i64 %kn, 0
  br i1 %kany, label %gather, label %invoke
gather:
  %gi = phi i64 [ 0, %callk ], [ %gnext, %gdone ]
  %gk = add i64 %gi, 4
  %ge = call i64 @word(ptr %prog, i64 %ip, i64 %gk)
  %greg = icmp sge i64 %ge, 0
  br i1 %greg, label %greg1, label %gfix
greg1:
  %grp = call ptr @regobj(ptr %objs, ptr %regs, i64 %ge)
  br label %gdone
gfix:
  %gneg = sub i64 -1, %ge
  %gfp = call ptr @obj(ptr %objs, i64 %gneg)
  br label %gdone
gdone:
  %gp = phi ptr [ %grp, %greg1 ], [ %gfp, %gfix ]
  %gslot = getelementptr ptr, ptr %table, i64 %gi
  store ptr %gp, ptr %gslot
  %gnext = add i64 %gi, 1
  %gmore = icmp slt i64 %gnext, %kn
  br i1 %gmore, label %gather, label %invoke
invoke:
  %kf = inttoptr i64 %kfn to ptr
  %kv = inttoptr i64 %kkv to ptr
  call void %kf(ptr %table, ptr %kv, i32 %nth)
  %k4 = add i64 %ip, 4
  %kip = add i64 %k4, %kn
  store i64 %kip, ptr %ipp
  br label %dispatch
row:
  %rd = call i64 @word(ptr %prog, i64 %ip, i64 1)
  %rdata = call i64 @word(ptr %prog, i64 %ip, i64 2)
  %rrow = call i64 @word(ptr %prog, i64 %ip, i64 3)
  %rik = call i64 @word(ptr %prog, i64 %ip, i64 4)
  %riv = call i64 @word(ptr %prog, i64 %ip, i64 5)
  %ric = call i64 @word(ptr %prog, i64 %ip, i64 6)
  %rown = call i64 @word(ptr %prog, i64 %ip, i64 7)
  %rn = call i64 @word(ptr %prog, i64 %ip, i64 8)
  %rb = call i64 @word(ptr %prog, i64 %ip, i64 9)
  %rk = call i64 @scalar(ptr %objs, ptr %regs, i64 %rik, i64 %riv, i64 %ric)
  %rin = icmp ult i64 %rk, %rn
  br i1 %rin, label %rowok, label %bail
rowok:
  %rdsp = getelementptr i64, ptr %regs, i64 %rdata
  %rds = load i64, ptr %rdsp
  %rownp = call ptr @obj(ptr %objs, i64 %rown)
  %rmine = icmp eq i64 %rds, %rown
  br i1 %rmine, label %rowwrite, label %rowcopy
rowcopy:
  %rsrc = call ptr @obj(ptr %objs, i64 %rds)
  %rall = mul i64 %rn, %rb
  call void @llvm.memcpy.p0.p0.i64(ptr %rownp, ptr %rsrc, i64 %rall, i1 false)
  br label %rowwrite
rowwrite:
  %roff = mul i64 %rk, %rb
  %rdst = getelementptr i8, ptr %rownp, i64 %roff
  %rsp = call ptr @regobj(ptr %objs, ptr %regs, i64 %rrow)
  call void @llvm.memcpy.p0.p0.i64(ptr %rdst, ptr %rsp, i64 %rb, i1 false)
  call void @setreg(ptr %regs, i64 %rd, i64 %rown)
  %rip = add i64 %ip, 10
  store i64 %rip, ptr %ipp
  br label %dispatch
exit:
  %xak = call i64 @word(ptr %prog, i64 %ip, i64 1)
  %xav = call i64 @word(ptr %prog, i64 %ip, i64 2)
  %xac = call i64 @word(ptr %prog, i64 %ip, i64 3)
  %xbk = call i64 @word(ptr %prog, i64 %ip, i64 4)
  %xbv = call i64 @word(ptr %prog, i64 %ip, i64 5)
  %xbc = call i64 @word(ptr %prog, i64 %ip, i64 6)
  %xwe = call i64 @word(ptr %prog, i64 %ip, i64 7)
  %xid = call i64 @word(ptr %prog, i64 %ip, i64 8)
  %xa = call i64 @scalar(ptr %objs, ptr %regs, i64 %xak, i64 %xav, i64 %xac)
  %xb = call i64 @scalar(ptr %objs, ptr %regs, i64 %xbk, i64 %xbv, i64 %xbc)
  %xeq = icmp eq i64 %xa, %xb
  %xwant = icmp ne i64 %xwe, 0
  %xgo = icmp eq i1 %xeq, %xwant
  br i1 %xgo, label %leave, label %stay
leave:
  ret i64 %xid
stay:
  %xip = add i64 %ip, 9
  store i64 %xip, ptr %ipp
  br label %dispatch
bail:
  ret i64 -1
bad:
  ret i64 -2
}

define i64 @mtvm_native_loop_go(ptr %prog, ptr %head, ptr %objs, ptr %scratch, ptr %tup,
                                ptr %arena, i32 %nth) {
entry:
  %nreg = call i64 @word(ptr %head, i64 0, i64 0)
  %nlive = call i64 @word(ptr %head, i64 1, i64 0)
  %wmax = call i64 @word(ptr %head, i64 2, i64 0)
  %nbuf = call i64 @word(ptr %head, i64 3, i64 0)
  %base = call i64 @word(ptr %head, i64 4, i64 0)
  %anyreg = icmp sgt i64 %nreg, 0
  br i1 %anyreg, label %ids, label %idsdone
ids:
  %ii = phi i64 [ 0, %entry ], [ %inext, %ids ]
  call void @setreg(ptr %scratch, i64 %ii, i64 %ii)
  %inext = add i64 %ii, 1
  %imore = icmp slt i64 %inext, %nreg
  br i1 %imore, label %ids, label %idsdone
idsdone:
  %n2 = mul i64 %nreg, 2
  call void @setreg(ptr %scratch, i64 %n2, i64 0)
  %anylive = icmp sgt i64 %nlive, 0
  br i1 %anylive, label %live, label %livedone
live:
  %lk = phi i64 [ 0, %idsdone ], [ %lnext, %live ]
  %lr = call i64 @word(ptr %head, i64 5, i64 %lk)
  %lio = mul i64 %lk, 8
  %lioff = add i64 %lio, @TUPLE_ITEMS@
  %lip = getelementptr i8, ptr %tup, i64 %lioff
  %lobj = load ptr, ptr %lip
  %ldp = getelementptr i8, ptr %lobj, i64 @ARRAY_DATA@
  %ldata = load i64, ptr %ldp
  %lslot = getelementptr i64, ptr %objs, i64 %lr
  store i64 %ldata, ptr %lslot
  %lnext = add i64 %lk, 1
  %lmore = icmp slt i64 %lnext, %nlive
  br i1 %lmore, label %live, label %livedone
livedone:
  %adp = getelementptr i8, ptr %arena, i64 @ARRAY_DATA@
  %ad = load i64, ptr %adp
  %aneg = sub i64 0, %ad
  %amis = and i64 %aneg, 63
  %aligned = add i64 %ad, %amis
  %n21 = add i64 %n2, 1
  %startat = add i64 %n21, %wmax
  call void @setreg(ptr %scratch, i64 %startat, i64 %amis)
  %offat = add i64 %nlive, 5
  %anybuf = icmp sgt i64 %nbuf, 0
  br i1 %anybuf, label %bufs, label %run
bufs:
  %bj = phi i64 [ 0, %livedone ], [ %bnext, %bufs ]
  %boff = call i64 @word(ptr %head, i64 %offat, i64 %bj)
  %baddr = add i64 %aligned, %boff
  %bslot = add i64 %base, %bj
  call void @setreg(ptr %objs, i64 %bslot, i64 %baddr)
  %bnext = add i64 %bj, 1
  %bmore = icmp slt i64 %bnext, %nbuf
  br i1 %bmore, label %bufs, label %run
run:
  %snap = getelementptr i64, ptr %scratch, i64 %nreg
  %iters = getelementptr i64, ptr %scratch, i64 %n2
  %table = getelementptr i64, ptr %scratch, i64 %n21
  %rc = call i64 @mtvm_native_loop(ptr %prog, ptr %objs, ptr %scratch, ptr %snap, i64 %nreg,
                                   ptr %iters, ptr %table, i32 %nth)
  ret i64 %rc
}
"""

_RUNNER = None
_RUNNER_LOCK = threading.Lock()
# (program, header, slots, scratch: addresses; the live arrays' tuple, the arena; threads)
_ARGS = (ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.py_object,
         ctypes.py_object, ctypes.c_int32)


def loop_runner_address():
    """The ctypes function of ``mtvm_native_loop_go`` (GIL released): JIT-compiled once per
    process. It fills in a run's slots itself (the live arrays' data pointers read from their
    tuple, the buffers' from the arena's) and starts the registers as their own slots, so a
    run's Python only gathers the live arrays and allocates the arena."""
    global _RUNNER
    if _RUNNER is not None:  # (every run asks: no lock once made)
        return _RUNNER[1]
    with _RUNNER_LOCK:
        if _RUNNER is None:
            from . import jit

            ir = _LOOP_IR.replace("@TUPLE_ITEMS@", str(TUPLE_ITEMS_OFFSET)).replace(
                "@ARRAY_DATA@", str(ARRAY_DATA_OFFSET))
            compiled = jit.compile_ir(ir, "mtvm_native_loop_go", opt=2)
            _RUNNER = (compiled, ctypes.CFUNCTYPE(ctypes.c_int64, *_ARGS)(compiled.address))
        return _RUNNER[1]

"""The thread pool behind ``parallel`` loops: minitvm's own, or libgomp's.

Compiled kernels call ``GOMP_parallel(fn, data, num_threads, 0)`` (the thread count passed at
each call) and ``omp_get_num_threads()``; which code those symbols name is decided here, once per
process, when the JIT starts.

By default they name a small pool written in LLVM IR below and compiled at first use. Its one
rule: **the calling thread never waits for a worker that has not started.** The caller runs
``fn`` itself (kernels take chunks from a shared counter, so any subset of threads finishes every
iteration); workers that wake in time join, and when the caller is done it closes the job and
waits only for the workers that joined. On a busy machine a descheduled worker then costs
nothing, where a fork-join barrier (libgomp's) waits for it at every parallel loop. Idle
threads spin politely: a CPU pause per poll and a ``sched_yield`` every ``MINITVM_SPIN_YIELD``
polls; a yield that returns late means other threads wanted the CPU, and the thread goes to
sleep on a condition variable at once, so on a busy machine it costs others almost nothing.
On an idle one it spins ``MINITVM_SPIN_COUNT`` polls (about a millisecond; from
``GOMP_SPINCOUNT`` / ``OMP_WAIT_POLICY`` when the user set those) after each job, and for the
whole length of a model's run while an executor holds ``keep_warm``: waking a sleeping thread
costs tens of microseconds or more (an idle vCPU halts), and a model's small kernels are done
before a sleeping worker has woken. One hazard stays: a worker descheduled while it holds a
chunk makes the caller wait. When the caller sees such a stall (``STALL_NS``), parallel loops
run on the calling thread alone for ``BACKOFF_NS``, then the pool is tried again.

``MINITVM_THREADPOOL=gomp`` uses libgomp's pool instead, which has no such check. Either way ``GOMP_SPINCOUNT=200`` is
put in the environment when the JIT starts, unless the user set ``OMP_WAIT_POLICY`` or
``GOMP_SPINCOUNT``: a libgomp loaded after that (ours, or oneDNN's) spins briefly
before sleeping instead of 300,000 iterations (with 10,000, 2 threads still ran ResNet-18
2x slower than 1 thread on the busy machine; with 200 or ``PASSIVE`` they were not slower). ``MINITVM_NO_GOMP=1`` compiles parallel loops
as serial loops. The thread count is ``TVM_NUM_THREADS`` (or ``OMP_NUM_THREADS``) when set, else
the number of usable CPUs; change it with ``set_num_threads``.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import threading
import time

_GOMP = None
_LOADED = False
_NUM_THREADS: int | None = None
_POOL: dict = {}
_SYMBOLS: dict[str, int] | None = None
_POOL_LOCK = threading.Lock()
GOMP_SYMBOLS = ("GOMP_parallel", "omp_get_num_threads")
MAX_WORKERS = 255
# Spin iterations (an atomic load and a CPU pause each, ~10-50 ns; a polite yield every
# MINITVM_SPIN_YIELD of them) before an idle thread of our pool sleeps: about a millisecond,
# enough to bridge the gap between two runs of a model. Waking a sleeping thread costs far more
# on a virtual machine (the idle vCPU halts): with 200, a Relax convnet at batch 32 ran at its
# 1-thread speed with 2 threads (2.9 ms against 1.5 ms). The spin stays cheap for other
# processes: a yield that took long means others wanted the CPU, and the thread sleeps at once.
DEFAULT_SPIN = 20_000
ACTIVE_SPIN = 50_000_000
# libgomp's spin (GOMP_SPINCOUNT) is plain busy-waiting with no such check, so it stays short:
# ResNet-18 with 2 threads next to busy processes was no slower with 0 or 200, ~20% slower with
# 1000 and more with 10000 than with 1 thread (benchmarks/bench_threads.py)
GOMP_DEFAULT_SPIN = 200
_GOMP_SPIN = str(GOMP_DEFAULT_SPIN)
# a sched_yield that returns later than this (ns) gave the CPU to another thread: the machine
# is busy, so a spinning thread goes to sleep instead
BUSY_NS = 20_000
_CLOCK_MONOTONIC = getattr(time, "CLOCK_MONOTONIC", 1)
# A parallel loop whose caller then waited for a joined worker longer than STALL_NS (and than
# half its own share of the loop took) had that worker descheduled mid-chunk: the machine has
# more running threads than CPUs. Parallel loops then run on the calling thread alone for
# BACKOFF_NS before the pool is tried again (at most one stall per interval). Without this, a
# 2-thread BERT layer ran 3-4x slower than 1 thread on this 2-core box at load 4-8.
STALL_NS = 1_000_000
BACKOFF_NS = 20_000_000
# ... but only after STALL_COUNT stalls within STALL_WINDOW_NS: a lone stall is as often the
# host preempting this virtual machine for a moment, and backing off on every one made ResNet-18
# at 2 threads 1.7-2.0x ORT on a noisy host (1.4x without back-off)
STALL_COUNT = 3
STALL_WINDOW_NS = 100_000_000
_SPIN_SET_HERE = False  # GOMP_SPINCOUNT in the environment is ours, not the user's


def _default_threads() -> int:
    for key in ("TVM_NUM_THREADS", "OMP_NUM_THREADS"):
        val = os.environ.get(key, "").split(",")[0].strip()
        if val.isdigit() and int(val) > 0:
            return int(val)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - non-Linux
        return max(1, os.cpu_count() or 1)


def get_num_threads() -> int:
    """Threads used by parallel loops of compiled kernels."""
    global _NUM_THREADS
    if _NUM_THREADS is None:
        _NUM_THREADS = _default_threads()
    return _NUM_THREADS


def set_num_threads(n: int) -> None:
    """Set the number of threads for later kernel calls (1 runs parallel loops serially)."""
    global _NUM_THREADS
    if int(n) < 1:
        raise ValueError("the number of threads must be at least 1")
    _NUM_THREADS = int(n)
    if _POOL.get("grow") is not None:
        _grow(_NUM_THREADS - 1)


def backend() -> str:
    """Which pool parallel loops use: ``"minitvm"``, ``"gomp"`` or ``"serial"``."""
    if os.environ.get("MINITVM_NO_GOMP"):
        return "serial"
    choice = os.environ.get("MINITVM_THREADPOOL", "minitvm").strip().lower() or "minitvm"
    if choice not in ("minitvm", "gomp"):
        raise ValueError(f"MINITVM_THREADPOOL must be 'minitvm' or 'gomp', not {choice!r}")
    return choice


def spin_count() -> int:
    """Spin iterations of an idle pool thread before it sleeps (the wait policy).

    ``MINITVM_SPIN_COUNT`` when set, else a numeric ``GOMP_SPINCOUNT``, else
    ``OMP_WAIT_POLICY`` (``PASSIVE``: 0, ``ACTIVE``: a long spin), else a short bounded spin.
    """
    for key in ("MINITVM_SPIN_COUNT", "GOMP_SPINCOUNT"):
        val = os.environ.get(key, "").strip()
        if key == "GOMP_SPINCOUNT" and _SPIN_SET_HERE and val == _GOMP_SPIN:
            continue
        if val.isdigit():
            return int(val)
        if key == "GOMP_SPINCOUNT" and val.lower() == "infinity":
            return ACTIVE_SPIN
    policy = os.environ.get("OMP_WAIT_POLICY", "").strip().upper()
    if policy == "PASSIVE":
        return 0
    if policy == "ACTIVE":
        return ACTIVE_SPIN
    return DEFAULT_SPIN


def yield_every() -> int:
    """An idle pool thread calls ``sched_yield`` once every this many spin iterations (a power
    of two; 0: never): ``MINITVM_SPIN_YIELD``, by default 32."""
    val = os.environ.get("MINITVM_SPIN_YIELD", "").strip()
    n = int(val) if val.isdigit() else 32
    return 0 if n <= 0 else 1 << (n - 1).bit_length()


# ------------------------------------------------------------------------------ minitvm's pool
# One job at a time (a second caller, e.g. another Python thread, runs its loop serially).
# ``gen`` counts jobs; a worker considers each job once and joins while ``open`` and ``slots``
# allow. ``active`` counts joined workers; the caller waits for it to reach 0 after closing.
_POOL_IR = r"""
@mu = internal global [256 x i8] zeroinitializer, align 64
@cv_work = internal global [256 x i8] zeroinitializer, align 64
@cv_done = internal global [256 x i8] zeroinitializer, align 64
@gen = internal global i64 0, align 64
@active = internal global i32 0, align 64
@fn = internal global ptr null, align 64
@data = internal global ptr null
@slots = internal global i32 0
@open = internal global i32 0
@busy = internal global i32 0
@nth = internal global i32 1
@nworkers = internal global i32 0
@stop = internal global i32 0
@spin = internal global i64 0
@yieldevery = internal global i64 0
@hot = internal global i32 0, align 64
@backoff_until = internal global i64 0, align 64
@nbackoffs = internal global i64 0, align 8
@stall_window = internal global i64 0, align 8
@stalls = internal global i64 0, align 8
@tids = internal global [256 x i64] zeroinitializer, align 8

declare i32 @pthread_mutex_init(ptr, ptr)
declare i32 @pthread_mutex_lock(ptr)
declare i32 @pthread_mutex_unlock(ptr)
declare i32 @pthread_cond_init(ptr, ptr)
declare i32 @pthread_cond_wait(ptr, ptr)
declare i32 @pthread_cond_broadcast(ptr)
declare i32 @pthread_create(ptr, ptr, ptr, ptr)
declare i32 @sched_yield()
declare i32 @clock_gettime(i32, ptr)

define void @mtvm_pool_init(i64 %spin, i64 %yevery) {
entry:
  store atomic i64 %yevery, ptr @yieldevery monotonic, align 8
  %a = call i32 @pthread_mutex_init(ptr @mu, ptr null)
  %b = call i32 @pthread_cond_init(ptr @cv_work, ptr null)
  %c = call i32 @pthread_cond_init(ptr @cv_done, ptr null)
  store atomic i64 %spin, ptr @spin monotonic, align 8
  store atomic i32 0, ptr @nworkers monotonic, align 4
  store atomic i32 0, ptr @active monotonic, align 4
  store atomic i32 0, ptr @stop monotonic, align 4
  store atomic i32 0, ptr @hot monotonic, align 4
  store atomic i32 1, ptr @nth monotonic, align 4
  store i32 0, ptr @busy
  store i32 0, ptr @open
  store i32 0, ptr @slots
  ret void
}

define i32 @mtvm_num_threads() {
entry:
  %v = load atomic i32, ptr @nth monotonic, align 4
  ret i32 %v
}

define void @mtvm_hot_enter() {
entry:
  %h = atomicrmw add ptr @hot, i32 1 monotonic
  ret void
}

define i32 @mtvm_hot_count() {
entry:
  %h = load atomic i32, ptr @hot monotonic, align 4
  ret i32 %h
}

define void @mtvm_hot_exit() {
entry:
  %h = atomicrmw sub ptr @hot, i32 1 monotonic
  ret void
}

define internal i64 @mtvm_now_ns() {
entry:
  %ts = alloca [2 x i64], align 8
  %r = call i32 @clock_gettime(i32 CLOCK_ID, ptr %ts)
  %s = load i64, ptr %ts, align 8
  %pn = getelementptr [2 x i64], ptr %ts, i64 0, i64 1
  %n = load i64, ptr %pn, align 8
  %sn = mul i64 %s, 1000000000
  %t = add i64 %sn, %n
  ret i64 %t
}

; yield the CPU once; true when that took long, i.e. other threads wanted this CPU and ran
define internal i1 @mtvm_yield_busy() {
entry:
  %t0 = call i64 @mtvm_now_ns()
  %y = call i32 @sched_yield()
  %t1 = call i64 @mtvm_now_ns()
  %d = sub i64 %t1, %t0
  %busy = icmp sgt i64 %d, BUSY_NS
  ret i1 %busy
}

; one poll of a spin: a CPU pause, and a yield every @yieldevery polls; true when that yield
; showed another thread wanted this CPU (the spinner should sleep instead)
define internal i1 @mtvm_spin_step(i64 %i) {
entry:
  PAUSE
  %ye = load atomic i64, ptr @yieldevery monotonic, align 8
  %ym = sub i64 %ye, 1
  %ybits = and i64 %i, %ym
  %doyield = icmp eq i64 %ybits, 0
  %ymset = icmp ne i64 %ye, 0
  %yieldnow = and i1 %doyield, %ymset
  br i1 %yieldnow, label %yieldit, label %no
yieldit:
  %busy = call i1 @mtvm_yield_busy()
  ret i1 %busy
no:
  ret i1 false
}

define i32 @mtvm_pool_workers() {
entry:
  %v = load atomic i32, ptr @nworkers monotonic, align 4
  ret i32 %v
}

define internal ptr @mtvm_worker(ptr %arg) {
entry:
  %l0 = call i32 @pthread_mutex_lock(ptr @mu)
  %g0 = load atomic i64, ptr @gen monotonic, align 8
  %u0 = call i32 @pthread_mutex_unlock(ptr @mu)
  br label %loop
loop:
  %seen = phi i64 [ %g0, %entry ], [ %g, %skip ], [ %g, %joined ]
  %spinmax = load atomic i64, ptr @spin monotonic, align 8
  %dospin = icmp ugt i64 %spinmax, 0
  br i1 %dospin, label %spinloop, label %lockit
spinloop:
  %i = phi i64 [ 0, %loop ], [ %i1, %spintest ]
  %gs = load atomic i64, ptr @gen acquire, align 8
  %fresh = icmp ne i64 %gs, %seen
  br i1 %fresh, label %lockit, label %spinnext
spinnext:
  %i1 = add i64 %i, 1
  %wanted = call i1 @mtvm_spin_step(i64 %i1)
  br i1 %wanted, label %lockit, label %spintest
spintest:
  %short = icmp ult i64 %i1, %spinmax
  %hv = load atomic i32, ptr @hot monotonic, align 4
  %inrun = icmp sgt i32 %hv, 0
  %more = or i1 %short, %inrun
  br i1 %more, label %spinloop, label %lockit
lockit:
  %l1 = call i32 @pthread_mutex_lock(ptr @mu)
  br label %check
check:
  %st = load atomic i32, ptr @stop monotonic, align 4
  %stopping = icmp ne i32 %st, 0
  br i1 %stopping, label %exit, label %check2
check2:
  %g = load atomic i64, ptr @gen monotonic, align 8
  %isnew = icmp ne i64 %g, %seen
  br i1 %isnew, label %consider, label %sleep
sleep:
  %w = call i32 @pthread_cond_wait(ptr @cv_work, ptr @mu)
  br label %check
consider:
  %op = load i32, ptr @open
  %sl = load i32, ptr @slots
  %isopen = icmp ne i32 %op, 0
  %hasslot = icmp sgt i32 %sl, 0
  %can = and i1 %isopen, %hasslot
  br i1 %can, label %join, label %skip
skip:
  %u1 = call i32 @pthread_mutex_unlock(ptr @mu)
  br label %loop
join:
  %sl1 = sub i32 %sl, 1
  store i32 %sl1, ptr @slots
  %a0 = atomicrmw add ptr @active, i32 1 monotonic
  %f = load ptr, ptr @fn
  %d = load ptr, ptr @data
  %u2 = call i32 @pthread_mutex_unlock(ptr @mu)
  call void %f(ptr %d)
  %l2 = call i32 @pthread_mutex_lock(ptr @mu)
  %a1 = atomicrmw sub ptr @active, i32 1 acq_rel
  %last = icmp eq i32 %a1, 1
  br i1 %last, label %wake, label %joined
wake:
  %bc = call i32 @pthread_cond_broadcast(ptr @cv_done)
  br label %joined
joined:
  %u3 = call i32 @pthread_mutex_unlock(ptr @mu)
  br label %loop
exit:
  %u4 = call i32 @pthread_mutex_unlock(ptr @mu)
  ret ptr null
}

define void @mtvm_parallel(ptr %f, ptr %d, i32 %n, i32 %flags) {
entry:
  %multi = icmp sgt i32 %n, 1
  %nw = load atomic i32, ptr @nworkers monotonic, align 4
  %have = icmp sgt i32 %nw, 0
  %try = and i1 %multi, %have
  br i1 %try, label %checkback, label %serial
serial:
  call void %f(ptr %d)
  ret void
checkback:
  %t0 = call i64 @mtvm_now_ns()
  %bu = load atomic i64, ptr @backoff_until monotonic, align 8
  %inback = icmp slt i64 %t0, %bu
  br i1 %inback, label %serial, label %lockit
lockit:
  %l0 = call i32 @pthread_mutex_lock(ptr @mu)
  %b = load i32, ptr @busy
  %isbusy = icmp ne i32 %b, 0
  br i1 %isbusy, label %busyserial, label %start
busyserial:
  %u0 = call i32 @pthread_mutex_unlock(ptr @mu)
  call void %f(ptr %d)
  ret void
start:
  store i32 1, ptr @busy
  store ptr %f, ptr @fn
  store ptr %d, ptr @data
  store atomic i32 %n, ptr @nth monotonic, align 4
  %nm1 = sub i32 %n, 1
  %nw2 = load atomic i32, ptr @nworkers monotonic, align 4
  %lt = icmp slt i32 %nm1, %nw2
  %sl = select i1 %lt, i32 %nm1, i32 %nw2
  store i32 %sl, ptr @slots
  store i32 1, ptr @open
  %g = load atomic i64, ptr @gen monotonic, align 8
  %g1 = add i64 %g, 1
  store atomic i64 %g1, ptr @gen release, align 8
  %bc = call i32 @pthread_cond_broadcast(ptr @cv_work)
  %u1 = call i32 @pthread_mutex_unlock(ptr @mu)
  call void %f(ptr %d)
  %tc = call i64 @mtvm_now_ns()
  %l1 = call i32 @pthread_mutex_lock(ptr @mu)
  store i32 0, ptr @open
  %u2 = call i32 @pthread_mutex_unlock(ptr @mu)
  %spinmax = load atomic i64, ptr @spin monotonic, align 8
  br label %spinloop
spinloop:
  %i = phi i64 [ 0, %start ], [ %i1, %spinnext ]
  %a = load atomic i32, ptr @active acquire, align 4
  %none = icmp eq i32 %a, 0
  br i1 %none, label %lockdone, label %spinnext
spinnext:
  %i1 = add i64 %i, 1
  %wanted = call i1 @mtvm_spin_step(i64 %i1)
  %more = icmp ult i64 %i1, %spinmax
  %free = xor i1 %wanted, true
  %stay = and i1 %more, %free
  br i1 %stay, label %spinloop, label %lockdone
lockdone:
  %l2 = call i32 @pthread_mutex_lock(ptr @mu)
  br label %waitcheck
waitcheck:
  %a2 = load atomic i32, ptr @active acquire, align 4
  %zero = icmp eq i32 %a2, 0
  br i1 %zero, label %done, label %waitsleep
waitsleep:
  %w = call i32 @pthread_cond_wait(ptr @cv_done, ptr @mu)
  br label %waitcheck
done:
  store i32 0, ptr @busy
  store atomic i32 1, ptr @nth monotonic, align 4
  %u3 = call i32 @pthread_mutex_unlock(ptr @mu)
  ; a stall: the caller waited for joined workers longer than STALL_NS and than half its own
  ; share took, i.e. a worker holding a chunk was descheduled (the machine is oversubscribed);
  ; parallel loops then run on the caller alone for BACKOFF_NS
  %td = call i64 @mtvm_now_ns()
  %waited = sub i64 %td, %tc
  %ran = sub i64 %tc, %t0
  %half = ashr i64 %ran, 1
  %long = icmp sgt i64 %waited, STALL_NS
  %behind = icmp sgt i64 %waited, %half
  %stall = and i1 %long, %behind
  br i1 %stall, label %count, label %out
count:
  ; stalls are counted in windows of STALL_WINDOW_NS; STALL_COUNT of them in one window mean
  ; the machine is oversubscribed (a lone stall is as likely the host preempting this VM)
  %ws = load atomic i64, ptr @stall_window monotonic, align 8
  %age = sub i64 %td, %ws
  %stale = icmp sgt i64 %age, STALL_WINDOW_NS
  br i1 %stale, label %newwindow, label %another
newwindow:
  store atomic i64 %td, ptr @stall_window monotonic, align 8
  store atomic i64 1, ptr @stalls monotonic, align 8
  br label %out
another:
  %c0 = load atomic i64, ptr @stalls monotonic, align 8
  %c1 = add i64 %c0, 1
  store atomic i64 %c1, ptr @stalls monotonic, align 8
  %enough = icmp sge i64 %c1, STALL_COUNT
  br i1 %enough, label %backoff, label %out
backoff:
  %until = add i64 %td, BACKOFF_NS
  store atomic i64 %until, ptr @backoff_until monotonic, align 8
  store atomic i64 0, ptr @stalls monotonic, align 8
  %nb = atomicrmw add ptr @nbackoffs, i64 1 monotonic
  br label %out
out:
  ret void
}

define void @mtvm_pool_backoff_for(i64 %ns) {
entry:
  %now = call i64 @mtvm_now_ns()
  %until = add i64 %now, %ns
  store atomic i64 %until, ptr @backoff_until monotonic, align 8
  ret void
}

define i64 @mtvm_pool_backoffs() {
entry:
  %v = load atomic i64, ptr @nbackoffs monotonic, align 8
  ret i64 %v
}

define i32 @mtvm_pool_grow(i32 %want) {
entry:
  %l0 = call i32 @pthread_mutex_lock(ptr @mu)
  br label %loop
loop:
  %nw = load atomic i32, ptr @nworkers monotonic, align 4
  %enough = icmp sge i32 %nw, %want
  %full = icmp sge i32 %nw, 255
  %stopnow = or i1 %enough, %full
  br i1 %stopnow, label %out, label %spawn
spawn:
  %slot = getelementptr [256 x i64], ptr @tids, i64 0, i32 %nw
  %rc = call i32 @pthread_create(ptr %slot, ptr null, ptr @mtvm_worker, ptr null)
  %ok = icmp eq i32 %rc, 0
  br i1 %ok, label %count, label %out
count:
  %nw1 = add i32 %nw, 1
  store atomic i32 %nw1, ptr @nworkers monotonic, align 4
  br label %loop
out:
  %u0 = call i32 @pthread_mutex_unlock(ptr @mu)
  %r = load atomic i32, ptr @nworkers monotonic, align 4
  ret i32 %r
}

define void @mtvm_pool_stop() {
entry:
  %l0 = call i32 @pthread_mutex_lock(ptr @mu)
  store atomic i32 1, ptr @stop monotonic, align 4
  store atomic i32 0, ptr @nworkers monotonic, align 4
  %bc = call i32 @pthread_cond_broadcast(ptr @cv_work)
  %u0 = call i32 @pthread_mutex_unlock(ptr @mu)
  ret void
}
"""


def _spin_hint(triple: str) -> tuple[str, str]:
    """(declaration, call) of the CPU's spin-wait hint (x86 ``pause``, Arm ``yield``): a
    spinning thread leaves the core to its sibling and each spin iteration takes tens of cycles,
    as libgomp's do."""
    arch = triple.split("-")[0]
    if arch in ("x86_64", "i386", "i686"):
        return "declare void @llvm.x86.sse2.pause()", "call void @llvm.x86.sse2.pause()"
    if arch in ("aarch64", "arm64"):
        return "declare void @llvm.aarch64.hint(i32)", "call void @llvm.aarch64.hint(i32 1)"
    return "", ""


def pool_ir(triple: str) -> str:
    """The pool's LLVM IR for a target triple (its spin hint filled in)."""
    decl, call = _spin_hint(triple)
    ir = (_POOL_IR.replace("PAUSE", call).replace("CLOCK_ID", str(_CLOCK_MONOTONIC))
          .replace("BUSY_NS", str(BUSY_NS)).replace("STALL_NS", str(STALL_NS))
          .replace("BACKOFF_NS", str(BACKOFF_NS)).replace("STALL_WINDOW_NS", str(STALL_WINDOW_NS))
          .replace("STALL_COUNT", str(STALL_COUNT)))
    return decl + "\n" + ir


def _build_pool() -> dict:
    """JIT the pool (its own MCJIT engine, kept alive here), start ``get_num_threads() - 1``
    workers, and arrange a clean state in a forked child and worker exit at interpreter exit."""
    import atexit

    import llvmlite.binding as llvm

    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    target = llvm.Target.from_triple(llvm.get_process_triple())
    tm = target.create_target_machine(opt=2, jit=True)
    triple = llvm.get_process_triple()
    mod = llvm.parse_assembly(pool_ir(triple))
    mod.verify()
    engine = llvm.create_mcjit_compiler(mod, tm)
    engine.finalize_object()
    addr = engine.get_function_address
    pool = {
        "engine": engine,
        "GOMP_parallel": addr("mtvm_parallel"),
        "omp_get_num_threads": addr("mtvm_num_threads"),
        "init": ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_int64)(addr("mtvm_pool_init")),
        "grow": ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_int32)(addr("mtvm_pool_grow")),
        "workers": ctypes.CFUNCTYPE(ctypes.c_int32)(addr("mtvm_pool_workers")),
        "stop": ctypes.CFUNCTYPE(None)(addr("mtvm_pool_stop")),
        "num_threads": ctypes.CFUNCTYPE(ctypes.c_int32)(addr("mtvm_num_threads")),
        "hot_enter": ctypes.CFUNCTYPE(None)(addr("mtvm_hot_enter")),
        "hot_exit": ctypes.CFUNCTYPE(None)(addr("mtvm_hot_exit")),
        "hot_count": ctypes.CFUNCTYPE(ctypes.c_int32)(addr("mtvm_hot_count")),
        "backoffs": ctypes.CFUNCTYPE(ctypes.c_int64)(addr("mtvm_pool_backoffs")),
        "backoff_for": ctypes.CFUNCTYPE(None, ctypes.c_int64)(addr("mtvm_pool_backoff_for")),
    }
    pool["init"](spin_count(), yield_every())
    pool["warm"] = spin_count() > 0  # a passive wait policy never spins, in a run or not
    atexit.register(pool["stop"])
    if hasattr(os, "register_at_fork"):
        # the child has none of the workers (and maybe a mutex one held): fresh state, new ones
        os.register_at_fork(after_in_child=_restart_after_fork)
    return pool


def _restart_after_fork() -> None:
    if _POOL:
        _POOL["init"](spin_count(), yield_every())
        _POOL["warm"] = spin_count() > 0
        _grow(get_num_threads() - 1)


def _grow(workers: int) -> int:
    return int(_POOL["grow"](max(0, min(int(workers), MAX_WORKERS))))


def keep_warm():
    """Keep the pool's idle workers spinning (politely: ``sched_yield`` between polls) until the
    returned function is called, instead of sleeping after a short spin; None when there is
    nothing to keep warm (one thread, libgomp, no pool yet).

    Executors call it around one whole run of a model (as ONNX Runtime spins its pool for the
    length of ``Run``): between two kernels of a run there are only microseconds, too few for
    a sleeping worker to wake, so without it a 2-thread run of many small kernels ran at the
    1-thread speed (Relax convnet, batch 32: 2.9 ms, 1.7 ms kept warm). Between runs the
    workers go back to sleeping after the short spin.
    """
    enter = _POOL.get("hot_enter")
    if enter is None or _NUM_THREADS == 1 or not _POOL["warm"]:
        return None
    enter()
    return _POOL["hot_exit"]


def warm_runs() -> int:
    """Runs that keep the pool warm right now (``keep_warm`` entered, not yet left)."""
    return int(_POOL["hot_count"]()) if _POOL.get("hot_count") is not None else 0


def pool_backoffs() -> int:
    """How many times this process's pool saw a stalled worker and ran serially for a while
    (``STALL_NS``, ``BACKOFF_NS``)."""
    return int(_POOL["backoffs"]()) if _POOL.get("backoffs") is not None else 0


def pool_workers() -> int:
    """Worker threads of minitvm's pool started so far (0 with libgomp or serial loops)."""
    return int(_POOL["workers"]()) if _POOL.get("workers") is not None else 0


def _minitvm_pool() -> dict:
    with _POOL_LOCK:
        if not _POOL:
            _POOL.update(_build_pool())
            _grow(get_num_threads() - 1)
    return _POOL


# ------------------------------------------------------------------------------ libgomp
def bound_gomp_spin() -> bool:
    """Set ``GOMP_SPINCOUNT`` to our short spin (libgomp reads it when it is first loaded, so it also covers
    a libgomp that oneDNN or another library loads later) unless the user set
    ``OMP_WAIT_POLICY`` or ``GOMP_SPINCOUNT``. Returns whether it was set by this call."""
    global _SPIN_SET_HERE
    if "OMP_WAIT_POLICY" in os.environ or "GOMP_SPINCOUNT" in os.environ:
        return False
    os.environ["GOMP_SPINCOUNT"] = _GOMP_SPIN
    _SPIN_SET_HERE = True
    return True


def gomp_library():
    """The loaded libgomp (``ctypes.CDLL``) or None when it is not available."""
    global _GOMP, _LOADED
    if not _LOADED:
        _LOADED = True
        if os.environ.get("MINITVM_NO_GOMP"):
            return None
        bound_gomp_spin()
        for name in (ctypes.util.find_library("gomp"), "libgomp.so.1", "libgomp.dylib"):
            if not name:
                continue
            try:
                _GOMP = ctypes.CDLL(name, mode=ctypes.RTLD_GLOBAL)
                break
            except OSError:
                continue
    return _GOMP


def gomp_symbol_addresses() -> dict[str, int]:
    """Addresses for the OpenMP entry points kernels call: minitvm's pool, libgomp's
    (``MINITVM_THREADPOOL=gomp``), or none (parallel loops compile serial)."""
    global _SYMBOLS
    if _SYMBOLS is None:  # chosen once: the JIT links every kernel against the same pool
        kind = backend()
        bound_gomp_spin()
        if kind == "minitvm":
            pool = _minitvm_pool()
            _SYMBOLS = {s: pool[s] for s in GOMP_SYMBOLS}
        elif kind == "gomp" and gomp_library() is not None:
            _SYMBOLS = {s: ctypes.cast(getattr(_GOMP, s), ctypes.c_void_p).value
                        for s in GOMP_SYMBOLS}
        else:
            _SYMBOLS = {}
    return dict(_SYMBOLS)

"""Kernels compiled in parallel: forked worker processes fill the on-disk kernel cache.

LLVM's optimizer dominates a cold build and llvmlite serializes every LLVM call behind one lock,
so threads cannot overlap it; processes can. ``run_sharded`` forks ``jobs - 1`` workers, each
lowering its share of the kernels (its code reaches the parent through the on-disk cache of
``backend.disk_cache``), lowers the parent's own share meanwhile, and waits for the workers.
Each worker reports every group it finished on a second pipe; between its own groups, and
while it waits, the parent runs those groups too, which loads their code from the disk cache
into its in-process caches: that work overlaps the workers' compiling instead of following it.
The sequential lowering that follows then finds every kernel ready instead of compiling it. A worker
that fails, crashes or outlives ``WORKER_TIMEOUT`` costs nothing but time: whatever it did not
store is compiled by the parent as usual.

Jobs: ``PassContext(config={"relay.backend.compile_jobs": n})`` or ``$MINITVM_COMPILE_JOBS``
(``1`` turns it off; ``0``, the default, means one per available CPU core). Needs ``os.fork``
and the on-disk cache (with the cache switched off the build stays sequential).
"""

from __future__ import annotations

import os
import select
import signal
import struct
import sys
import threading
import time
from collections.abc import Callable, Hashable, Sequence

from ..runtime import jit
from ..transform.config import config_default, register_pass_config
from ..transform.context import PassContext
from .disk_cache import active_cache

CONFIG_KEY = "relay.backend.compile_jobs"
ENV_JOBS = "MINITVM_COMPILE_JOBS"
MIN_TASKS = 8  # below this many distinct kernels forking costs more than it saves
MAX_JOBS = 16
PROBES = 3  # kernels lowered here first to tell a cold build from a warm one
MAX_TASKS = 8192  # the work queue is a pipe of 4-byte task numbers; it must not fill up
WORKER_TIMEOUT = 300.0

register_pass_config(CONFIG_KEY, int, 0,
                     "Processes that compile kernels in parallel (0: one per CPU core, 1: "
                     "sequential). Workers hand their code over through the on-disk cache.")


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def compile_jobs(ctx: PassContext | None = None) -> int:
    """How many processes a build in ``ctx`` (default: the current context) compiles with."""
    ctx = ctx if ctx is not None else PassContext.current()
    cfg = getattr(ctx, "config", None) or {}
    jobs = int(cfg.get(CONFIG_KEY, config_default(CONFIG_KEY)))
    if jobs == 0:
        text = os.environ.get(ENV_JOBS, "").strip()
        if text:
            try:
                jobs = int(text)
            except ValueError:
                raise ValueError(f"{ENV_JOBS}={text!r} is not a number of processes") from None
    if jobs < 0:
        raise ValueError(f"compile jobs must be >= 0, got {jobs}")
    return min(jobs or _cores(), MAX_JOBS)


def probe_order(groups: list[list], cost: Callable[[object], float] | None) -> list[list]:
    """``groups`` with the cheapest (by ``cost`` of a group's first task; the first among
    equals) moved to the front, the rest in their order: the probes that run here before any
    worker starts should be short, not a model's biggest kernel that happens to come first.
    (Handing the queue out costliest first measured no better on ResNet-50: the estimate is
    rough and dynamic hand-out already balances the processes.)"""
    if cost is None or not groups:
        return list(groups)
    costs = [float(cost(g[0])) for g in groups]
    cheap = sorted(range(len(groups)), key=lambda k: costs[k])[:PROBES]
    return [groups[k] for k in cheap] + [g for k, g in enumerate(groups) if k not in cheap]


def run_sharded(tasks: Sequence, run_one: Callable[[object], object],
                group: Callable[[object], Hashable], ctx: PassContext | None = None,
                cost: Callable[[object], float] | None = None) -> int:
    """Run ``run_one(task)`` for every task, shared among forked workers and this process.

    Tasks with the same ``group`` key go to the same process (identical kernels compile once).
    The first groups run here as probes (the cheapest by ``cost``, an optional estimate of a
    task's compile time: ``probe_order``): when their code came from the disk cache (a warm
    build) no worker is started. Returns the number of workers forked; with 0 some or none of
    the tasks ran, and the caller's sequential lowering does the rest as usual.
    """
    jobs = compile_jobs(ctx)
    groups: dict[Hashable, list] = {}
    for t in tasks:
        groups.setdefault(group(t), []).append(t)
    if jobs < 2 or not MIN_TASKS <= len(groups) <= MAX_TASKS or not hasattr(os, "fork") \
            or sys.platform == "win32" or active_cache(ctx) is None \
            or threading.current_thread() is not threading.main_thread():
        return 0  # (a build in a thread stays in process: forking there is not safe)
    members = probe_order(list(groups.values()), cost)
    cache = active_cache(ctx)
    for _ in range(PROBES):  # a warm build (code already on disk) gains nothing from workers
        hits, writes = cache.stats["hits"], cache.stats["writes"]
        for t in members.pop(0):
            try:
                run_one(t)
            except Exception:  # the sequential lowering after this reports it
                pass
        if cache.stats["writes"] > writes:
            break  # compiled: a cold build, share the rest
        if cache.stats["hits"] > hits or len(members) < 2:
            return 0  # loaded from disk: the rest very likely is too
    else:
        return 0  # nothing compiled nor loaded (cached in process, or not native): no gain
    jobs = min(jobs, len(members) // 2)
    if jobs < 2:
        return 0
    # a pipe of group numbers is the work queue: each process takes the next group when it is
    # free (reads of 4 bytes from a pipe are atomic), so the shares balance themselves
    rd, wr = os.pipe()
    try:
        os.write(wr, b"".join(struct.pack("<I", k) for k in range(len(members))))
    finally:
        os.close(wr)
    done_rd, done_wr = os.pipe()  # the groups workers finished, 4 bytes each (atomic writes)
    sys.stdout.flush()
    sys.stderr.flush()
    pids = []
    try:
        for _ in range(jobs - 1):
            try:
                with jit.quiescent():  # no LLVM lock held mid-call by another thread
                    pid = os.fork()
            except OSError:  # no more processes: fewer workers
                break
            if pid == 0:  # a worker: compile into the disk cache, then leave at once
                code = 0
                try:
                    os.close(done_rd)
                    code = _drain(rd, members, run_one, done_wr=done_wr)
                finally:
                    os._exit(code)
            pids.append(pid)
        os.close(done_wr)  # (the workers hold the write end now: EOF when all of them left)
        done_wr = -1
        os.set_blocking(done_rd, False)
        deadline = time.monotonic() + WORKER_TIMEOUT
        try:
            _drain(rd, members, run_one, done_rd=done_rd)
            _collect(done_rd, members, run_one, deadline)
        except BaseException:  # interrupted: stop the workers now rather than wait for them
            _wait(pids, 0.0)
            raise
        _wait(pids, max(0.0, deadline - time.monotonic()))
    finally:
        os.close(rd)
        os.close(done_rd)
        if done_wr >= 0:
            os.close(done_wr)
    return len(pids)


def _run_group(members: list, k: int, run_one) -> int:
    """Run group ``k``'s tasks; 1 if one failed (it is compiled again, and reported, by the
    sequential lowering after), else 0."""
    code = 0
    for t in members[k]:
        try:
            run_one(t)
        except Exception:
            code = 1
    return code


def _finished(done_rd: int) -> list[int] | None:
    """The group numbers workers reported since the last call ([] when none yet); None at EOF
    (every worker has left)."""
    out = []
    while True:
        try:
            data = os.read(done_rd, 4096)
        except BlockingIOError:
            return out
        if not data:
            return out or None
        out.extend(k for (k,) in struct.iter_unpack("<I", data))


def _drain(rd: int, members: list, run_one, done_wr: int = -1, done_rd: int = -1) -> int:
    """Run groups taken from the queue ``rd`` until it is empty; 1 if a task failed, else 0.
    A worker reports each group it finished on ``done_wr``; the parent first runs the groups
    reported on ``done_rd`` (loading what a worker compiled) before taking the next one."""
    code = 0
    while True:
        if done_rd >= 0:
            for k in _finished(done_rd) or ():
                _run_group(members, k, run_one)
        data = os.read(rd, 4)
        if len(data) < 4:
            return code
        k = struct.unpack("<I", data)[0]
        code |= _run_group(members, k, run_one)
        if done_wr >= 0:
            os.write(done_wr, struct.pack("<I", k))


def _collect(done_rd: int, members: list, run_one, deadline: float) -> None:
    """After the queue ran dry: run each group a worker reports finished until all of them
    have left (EOF) or ``deadline`` passed."""
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return
        select.select([done_rd], [], [], min(left, 1.0))
        ks = _finished(done_rd)
        if ks is None:
            return
        for k in ks:
            _run_group(members, k, run_one)


def _wait(pids: list[int], timeout: float) -> None:
    """Reap the workers; kill those still running after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    pending = set(pids)
    delay = 0.001
    while pending:
        for pid in list(pending):
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                done = pid
            if done:
                pending.discard(pid)
        if not pending:
            return
        if time.monotonic() > deadline:
            for pid in pending:
                try:
                    os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
                except (ProcessLookupError, ChildProcessError):
                    pass
            return
        time.sleep(delay)
        delay = min(delay * 2, 0.02)

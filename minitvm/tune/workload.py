"""A workload key back to a one-operator Relay program, built and timed for one knob choice.

The program has the op alone, its weight a constant (as in a model, where a dense weight is
prepacked at build time) and its activations inputs. Building it under a one-entry knob table
must reach the workload; the measurement says so when it does not.
"""

from __future__ import annotations

import functools
import json
import time

import numpy as np

from ..ir.module import IRModule
from ..schedule.knobs import KnobTable, key_text, use_knobs
from ..transform.context import PassContext


def can_rebuild(key) -> bool:
    """Can ``workload_program`` rebuild this workload alone?"""
    if key[0] == "matmul":
        return not key[4]  # relay.nn.matmul with transpose_b is emitted as dense
    return key[0] in ("dense", "batch_matmul", "conv2d_nchw")


def workload_program(key, seed: int = 0):
    """(Relay module, {input name: array}) computing workload ``key`` alone."""
    from .. import relay

    rng = np.random.default_rng(seed)
    op = key[0]

    def rand(shape, dtype):
        return rng.uniform(-1, 1, size=tuple(shape)).astype(dtype)

    if op == "dense":
        _, m, n, k, dtype = key
        x = relay.var("data", shape=(m, k), dtype=dtype)
        body = relay.nn.dense(x, relay.const(rand((n, k), dtype)))
        inputs = {"data": rand((m, k), dtype)}
    elif op == "matmul" and can_rebuild(key):
        _, m, n, k, _, dtype = key
        x = relay.var("data", shape=(m, k), dtype=dtype)
        body = relay.nn.matmul(x, relay.const(rand((k, n), dtype)))
        inputs = {"data": rand((m, k), dtype)}
    elif op == "batch_matmul":
        _, sa, sb, tb, dtype = key
        a = relay.var("a", shape=tuple(sa), dtype=dtype)
        b = relay.var("b", shape=tuple(sb), dtype=dtype)
        body = relay.nn.batch_matmul(a, b, transpose_b=tb)
        inputs = {"a": rand(sa, dtype), "b": rand(sb, dtype)}
    elif op == "conv2d_nchw":
        _, sx, sw, strides, padding, dilation, groups, dtype = key
        x = relay.var("data", shape=tuple(sx), dtype=dtype)
        body = relay.nn.conv2d(x, relay.const(rand(sw, dtype)), strides=tuple(strides),
                               padding=tuple(padding), dilation=tuple(dilation), groups=groups,
                               channels=sw[0], kernel_size=tuple(sw[2:]))
        inputs = {"data": rand(sx, dtype)}
    else:
        raise ValueError(f"cannot rebuild workload {key_text(key)} as a Relay program")
    return IRModule.from_expr(relay.Function(relay.analysis.free_vars(body), body)), inputs


def build_workload(key, knobs: dict | None, target="llvm"):
    """(graph module, inputs) of workload ``key`` built with ``knobs`` (None: the defaults).

    Raises ``RuntimeError`` when the build never asked for the workload's knobs (the key and the
    program disagree), so a candidate can never be credited for another schedule.
    """
    mod, inputs = workload_program(key)
    return build_traced(mod, None, inputs, key, knobs, target, f"workload {key_text(key)}")


def build_traced(mod, params: dict | None, inputs: dict, key, knobs: dict | None, target,
                 what: str):
    """(graph module, inputs) of ``mod`` built with ``knobs`` for workload ``key`` under a
    tracing knob table, its ``inputs`` set; ``RuntimeError`` (naming ``what`` was built) when
    the build never asked for the workload's knobs."""
    from .. import relay
    from ..runtime import cpu
    from ..runtime.graph_executor import GraphModule

    table = KnobTable({key_text(key): knobs} if knobs else {}, trace=True)
    with use_knobs(table), PassContext(opt_level=3):
        lib = relay.build(mod, target=target, params=params)
    if key_text(key) not in table.seen:
        raise RuntimeError(f"building {what} did not reach its schedule")
    gm = GraphModule(lib["default"](cpu(0)))
    for name, value in inputs.items():
        gm.set_input(name, value)
    return gm, inputs


# A kernel run again and again alone finds its weights in L3, where a model streams them from
# memory layer after layer. ``time_module(cold=True)`` (and ``builtin.verify``, always) writes
# this many bytes, more than the L3 caches of the machines we meet, before each timed run.
FLUSH_BYTES = 64 << 20


class CacheFlusher:
    """Evicts the CPU caches (by writing a buffer larger than them) before a timed run."""

    def __init__(self, nbytes: int | None = None):
        nbytes = FLUSH_BYTES if nbytes is None else nbytes
        self.buf = np.zeros(max(nbytes, 64) // 8, dtype="int64")
        self.turn = 0

    def __call__(self) -> None:
        self.turn += 1
        self.buf.fill(self.turn)  # (a new value each time: every line is written back)


_FLUSHER: list[CacheFlusher] = []


def _flusher() -> CacheFlusher:
    if not _FLUSHER:
        _FLUSHER.append(CacheFlusher())
    return _FLUSHER[0]


# Untimed runs before the first sample: at least WARMUP_MS of them, FIRST_WARMUP_MS in a
# process's first timing. In a freshly forked process the thread pool's new worker joined no
# loop for its first ~50 ms: a BERT dense ran at one thread's speed (1.6 against 0.8 ms), and
# the tuner's first candidate, usually the default, looked 2x slower than every later one.
WARMUP_MS = 20.0
FIRST_WARMUP_MS = 100.0
_WARMED = [False]  # has this process timed a module yet

# Timed runs in one cold sample at most. Each follows an eviction (``FLUSH_BYTES`` written:
# 30-45 ms on a loaded 2-vCPU VM), so a small kernel filling ``min_repeat_ms`` with runs paid
# hundreds of evictions: a 0.07 ms dense took 5-12 s per candidate, almost all of it
# evicting. The median of a few individually timed runs is as steady.
COLD_MAX_RUNS = 5


def _warm_up(gm) -> None:
    budget = (WARMUP_MS if _WARMED[0] else FIRST_WARMUP_MS) / 1000.0
    _WARMED[0] = True
    end = time.perf_counter() + budget
    gm.run()
    while time.perf_counter() < end:
        gm.run()


def time_module(gm, repeat: int = 5, min_repeat_ms: float = 10.0, cold: bool = False
                ) -> list[float]:
    """Seconds per run of ``gm``: ``repeat`` samples, each the median of the runs (timed one by
    one, at least 3) that fill ``min_repeat_ms`` of run time, after untimed warm-up runs
    (``WARMUP_MS``); with ``cold``, the caches are evicted before each timed run
    (``CacheFlusher``) and ``gm``'s inputs read back in (its constants stay evicted), and a
    sample has at most ``COLD_MAX_RUNS`` runs.

    Runs are timed one by one and summarized by a median because on a shared machine a
    parallel kernel now and then waits a whole time slice for a descheduled worker: an average
    over back-to-back runs would mostly measure those stalls. A module running on one thread
    is timed by that thread's CPU time, which other processes' load inflates far less.
    """
    from ..runtime import threadpool

    clock = time.thread_time if threadpool.get_num_threads() == 1 else time.perf_counter
    flush = _flusher() if cold else None
    # after an eviction the inputs are read back in: in a model they are the activations the
    # previous kernel has just written, while the weights (constants) come from memory
    inputs = [gm.get_input(n).numpy() for n in getattr(gm, "input_names", ())] if cold else []
    max_runs = max(3, COLD_MAX_RUNS) if cold else 1000
    _warm_up(gm)
    costs = []
    for _ in range(repeat):
        runs: list[float] = []
        spent = 0.0
        while len(runs) < 3 or spent * 1000.0 < min_repeat_ms:
            if flush is not None:
                flush()
                for a in inputs:
                    a.sum()
            t0 = clock()
            gm.run()
            runs.append(clock() - t0)
            spent += runs[-1]
            if len(runs) >= max_runs:
                break
        runs.sort()
        costs.append(runs[len(runs) // 2])
    return costs


@functools.lru_cache(maxsize=8)
def _reference(text: str) -> np.ndarray:
    from .. import relay
    from ..runtime import blas

    mod, inputs = workload_program(json.loads(text))
    with blas.single_threaded():  # (OpenBLAS's idle threads spin: see fused.reference_output)
        return relay.create_executor("debug", mod=mod).evaluate()(*inputs.values()).numpy()


def reference_output(key) -> np.ndarray:
    """The output of workload ``key`` on ``workload_program``'s inputs, by the ops' numpy
    references (kept for the last few workloads: a worker measures one task at a time)."""
    return _reference(key_text(key))


def check_output(gm, key, rtol: float = 1e-3, reference: np.ndarray | None = None) -> None:
    """Raise ``ValueError`` when ``gm``'s output differs from the numpy reference (default:
    ``reference_output(key)``): a candidate that computes the wrong thing is a failure, however
    fast. Non-finite values must match (a fused epilogue may divide by a random input)."""
    out = gm.get_output(0).numpy()
    ref = reference_output(key) if reference is None else reference
    finite = np.isfinite(ref)
    if out.shape != ref.shape or \
            not np.array_equal(out[~finite], ref[~finite], equal_nan=True):
        err = float("inf")
    else:  # (a NaN or infinity where the reference is finite makes err NaN or inf: rejected)
        err = float(np.max(np.abs(out[finite] - ref[finite]), initial=0.0))
    scale = max(1.0, float(np.max(np.abs(ref[finite]), initial=0.0)))
    if not err <= rtol * scale:
        raise ValueError(f"wrong result: max abs error {err:.3g} against the numpy reference "
                         f"(allowed {rtol * scale:.3g})")


# The search's timing: weights evicted from the caches before each run, activations read back
# in (``time_module(cold=True)``), as in a model. Timed warm, BERT-base's 128x3072x768 dense
# chose 32-row blocks (4.8% faster alone, with its weights in L3): each block reads all 9.4 MB
# of weights again, and in the model it was 8% slower. Cold, every BERT workload kept its
# default (tuned 273 against untuned 270 ms at one thread). It takes twice as long (144 s).
COLD_SEARCH = True


def measure_workload(task, knobs: dict, repeat: int = 5, min_repeat_ms: float = 10.0
                     ) -> list[float]:
    """The default candidate measurement: build ``task``'s fused function (``task.program``,
    see ``tune.fused``; without one, its workload alone) with ``knobs``, time it, then check
    its output against the numpy reference."""
    from . import fused

    program = getattr(task, "program", None)
    if program:
        gm, _ = fused.build_fused(program, task.workload, knobs, task.target)
    else:
        gm, _ = build_workload(task.workload, knobs, task.target)
    costs = time_module(gm, repeat, min_repeat_ms, cold=COLD_SEARCH)
    check_output(gm, task.workload,
                 reference=fused.reference_output(program) if program else None)
    return costs

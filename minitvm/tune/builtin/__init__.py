"""The built-in tuning records: per vector ISA, the best measured knobs of common workloads.

``avx2.jsonl`` and ``avx512.jsonl`` in this folder are records files (one JSON object a line, the
format of ``minitvm.tune.records``) with one entry per workload; a CPU of ``CPUS`` (LLVM's name
for it) may have its own, measured on it (``znver4.jsonl``: AVX-512 executed as two 256-bit
halves, where the ISA's constants were measured on Intel's 512-bit units). ``avx512.jsonl``'s
entries were measured on such an Intel core, two 512-bit FMAs a cycle
(``benchmarks/bench_fma_units.py``), which its hypervisor reports as a Rocket Lake (LLVM's
"rocketlake": a client core with one 512-bit FMA unit), so they are the ISA's, not a CPU's
table. Their kernels saved 7-32% alone (cold caches); in the whole models, at one thread, the
table on against off is within the noise (``bench_whole_models.py --defaults``, 21 rounds:
ResNet-50 53.4 -> 52.9 ms, BERT-base 153.9 -> 155.0; MobileNetV2, which has no entry, 6.22 ->
6.17). A build outside any ``apply_history_best`` / ``use_knobs`` block uses the table of the
host's ISA with its CPU's laid over it (``minitvm.schedule.knobs.builtin_table``), so a user
who never tunes still gets tuned knobs; ``apply_history_best`` lays the user's own records over
it (theirs win per workload). ``MINITVM_BUILTIN_KNOBS=0`` or
``PassContext(config={"schedule.use_builtin_knobs": False})`` builds with the schedules'
defaults.

Entries come from tuning runs only::

    python -m minitvm.tune.builtin RECORDS.jsonl [--isa avx2 | --cpu znver4] [--min-gain 0.05]
                                   [--threads 1,2] [--dry-run]

measures each workload's best record of a tuning run against the default knobs again, side by
side (``verify``: interleaved rounds at 1 thread, thread CPU time, and at 2 threads, wall
clock), and ``promote`` adds it to the table when it wins by ``min_gain`` at some thread count
and loses at none; each line keeps the default's costs (``baseline``) and how it was made.
On a machine other processes load, wall clock at 2 threads measures them (a 1 ms kernel timed
at 14 ms); ``--threads 1`` then verifies on the thread's CPU time alone, and the line says so.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable

from ...schedule import knobs as _knobs
from ...schedule.knobs import KnobTable, Space, key_text, use_knobs
from ..records import Record, best_records, load_records
from ..workload import CacheFlusher

ISAS = ("avx2", "avx512")
CPUS = {"znver4": "avx512"}  # CPUs with a table of their own: their vector ISA
NOISE = 0.02  # a relative slowdown below this is measurement noise, not a loss


def builtin_path(isa: str) -> str:
    """The built-in records file of ``isa`` ("avx2" or "avx512") or of a CPU of ``CPUS``."""
    if isa not in ISAS and isa not in CPUS:
        raise ValueError(f"no built-in records for ISA {isa!r}; choose from "
                         f"{list(ISAS) + list(CPUS)}")
    return str(_knobs.BUILTIN_DIR / f"{isa}.jsonl")


def builtin_records(isa: str) -> list[Record]:
    """The records of ``isa``'s (or a CPU's) built-in table (empty when it has none)."""
    path = builtin_path(isa)
    return list(load_records(path)) if os.path.exists(path) else []


def declared_space(workload) -> Space | None:
    """The Space the schedules declare for ``workload`` (built alone once under a tracing
    table), or None when it cannot be rebuilt or declares none."""
    from ... import relay
    from ...transform.context import PassContext
    from ..workload import can_rebuild, workload_program

    if not can_rebuild(workload):
        return None
    mod, _ = workload_program(workload)
    table = KnobTable(trace=True)
    with use_knobs(table), PassContext(opt_level=3):
        relay.build(mod, target="llvm")
    got = table.seen.get(key_text(workload))
    return got[1] if got is not None else None


# ``verify`` runs each kernel with cold caches (``workload.CacheFlusher``): measured warm, three
# BERT-base dense workloads saved 3-16% at one thread and were promoted; in the whole model, with
# them, BERT ran 429 against 362 ms.
def _median_seconds(gm, clock, runs: int, flush: CacheFlusher | None = None) -> float:
    samples = []
    for _ in range(runs):
        if flush is not None:
            flush()
        t0 = clock()
        gm.run()
        samples.append(clock() - t0)
    samples.sort()
    return samples[len(samples) // 2]


def verify(records: str | os.PathLike | Iterable[Record], rounds: int = 15,
           threads: tuple[int, ...] = (1, 2), runs: int = 20, cold: bool = True
           ) -> list[tuple[Record, Record]]:
    """(best, default) records per workload of ``records`` whose best is not the default,
    measured again side by side in this process: ``rounds`` interleaved rounds per thread count,
    each the median of ``runs`` runs (1 thread: the thread's CPU time; more: wall clock), each
    run after the caches were evicted (``cold``; see ``workload.FLUSH_BYTES``). Each record's
    ``costs`` are its median over the rounds per thread count, in ``threads``' order."""
    from ...runtime import threadpool
    from ..workload import build_workload, check_output

    recs = list(load_records(records) if isinstance(records, (str, os.PathLike)) else records)
    flush = CacheFlusher() if cold else None
    out: list[tuple[Record, Record]] = []
    before = threadpool.get_num_threads()
    try:
        for r in best_records(recs).values():
            space = declared_space(r.workload)
            if space is None or r.knobs == space.default():
                continue
            configs = [space.validate(r.knobs), space.default()]
            medians: list[list[float]] = [[], []]
            for n in threads:
                threadpool.set_num_threads(n)  # before the modules: they keep the count
                gms = [build_workload(r.workload, k, r.target)[0] for k in configs]
                for gm in gms:
                    gm.run()
                    check_output(gm, r.workload)  # a wrong result is never promoted
                clock = time.thread_time if n == 1 else time.perf_counter
                costs: list[list[float]] = [[], []]
                for gm in gms:
                    _median_seconds(gm, clock, 3)  # warm up at this thread count
                for _ in range(rounds):
                    for i, gm in enumerate(gms):
                        costs[i].append(_median_seconds(gm, clock, runs, flush))
                for i in range(2):
                    costs[i].sort()
                    medians[i].append(costs[i][len(costs[i]) // 2])
            out.append((Record(list(r.workload), configs[0], medians[0], target=r.target),
                        Record(list(r.workload), configs[1], medians[1], target=r.target)))
    finally:
        threadpool.set_num_threads(before)
    return out


def gains(best: Record, default: Record) -> list[float]:
    """Relative time saved by ``best`` over ``default`` per measurement (1 - best/default)."""
    return [1.0 - b / d for b, d in zip(best.costs, default.costs, strict=True)]


def promote(pairs: Iterable[tuple[Record, Record]], isa: str, min_gain: float = 0.05,
            how: str = "", path: str | None = None) -> list[Record]:
    """Add to ``isa``'s (or a CPU's) built-in table each (best, default) pair's best record
    (``verify``'s output) that saves at least ``min_gain`` at some thread count and loses at
    none (beyond ``NOISE``). A workload's earlier entry is replaced. ``how``: the command that
    made the records, kept on the line; ``path``: write there instead of the package's file.
    Returns the records added."""
    lines: dict[str, str] = {}
    added: list[Record] = []
    for best, default in pairs:
        g = gains(best, default)
        if not g or max(g) < min_gain or min(g) < -NOISE:
            continue
        d = json.loads(best.to_json())
        d.update(baseline=default.costs, how=how)
        lines[best.key] = json.dumps(d, sort_keys=True, separators=(",", ":"))
        added.append(best)
    if not added:
        return []
    path = path or builtin_path(isa)
    old = open(path).read().splitlines() if os.path.exists(path) else []
    keep = [ln for ln in old if ln.strip() and Record.from_json(ln).key not in lines]
    with open(path, "w") as f:
        f.writelines(ln + "\n" for ln in keep + list(lines.values()))
    _knobs._builtin.cache_clear()
    return added

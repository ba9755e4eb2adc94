"""The built-in knob table: loading, precedence under apply_history_best, turning it off, a
build reaching a built-in entry's knobs (and computing the right thing), promotion from
verified tuning records, the tuner trying the built-in entry early, and the shipped tables."""

from __future__ import annotations

import json
import os
import re

import numpy as np
import pytest
from schedule_isa import force_isa
from tune_helpers import DENSE, mlp_reference, small_mlp

from minitvm import relay
from minitvm.runtime import cpu
from minitvm.runtime.graph_executor import GraphModule
from minitvm.schedule import knobs as knobs_mod
from minitvm.schedule.knobs import KnobTable, builtin_table, current_table, key_text, use_knobs
from minitvm.transform import PassContext
from minitvm.tune import Record, apply_history_best, tune_tasks
from minitvm.tune.builtin import (
    CPUS,
    ISAS,
    builtin_path,
    builtin_records,
    declared_space,
    gains,
    promote,
    verify,
)
from minitvm.tune.runner import MeasureResult
from minitvm.tune.task import Task

OTHER = ["dense", 32, 48, 64, "float32"]
BUILTIN_KNOBS = {"impl": "generated", "mr": 4, "nr": 32, "mc": 64, "min_work": 1 << 40,
                 "gemv_split": 4}


def _line(workload, knobs, cost):
    return Record(list(workload), dict(knobs), [cost]).to_json()


@pytest.fixture
def builtin_dir(tmp_path, monkeypatch):
    """A built-in table (both ISAs, so the test is the same on every host) in ``tmp_path``."""
    monkeypatch.setattr(knobs_mod, "BUILTIN_DIR", tmp_path)
    monkeypatch.delenv(knobs_mod.BUILTIN_ENV, raising=False)
    knobs_mod._builtin.cache_clear()
    lines = [_line(DENSE, dict(BUILTIN_KNOBS, mr=8), 2e-3),  # slower: not the entry
             _line(DENSE, BUILTIN_KNOBS, 1e-3),
             _line(OTHER, dict(BUILTIN_KNOBS, nr=16), 1e-3)]
    for isa in ISAS:
        (tmp_path / f"{isa}.jsonl").write_text("\n".join(lines) + "\n\n")
    yield tmp_path
    knobs_mod._builtin.cache_clear()


def _acc_tiles(lib) -> set[tuple[int, int]]:
    """(rows, columns) of the GEMM kernels' register accumulators."""
    out = set()
    for k in lib.get_lib().kernels.values():
        text = k.prim_func.script() if k.prim_func is not None else ""
        out |= {(int(r), int(c)) for r, c in
                re.findall(r"acc\w* = T\.decl_buffer\(\((\d+), (\d+)\)", text)}
    return out


def _build_and_run(mod, x):
    with PassContext(opt_level=3):
        lib = relay.build(mod, "llvm")
    gm = GraphModule(lib["default"](cpu(0)))
    gm.set_input("x", x)
    gm.run()
    return lib, gm.get_output(0).numpy()


def test_builtin_table_loads_the_lowest_cost_entry(builtin_dir):
    for isa in ISAS:
        table = builtin_table(isa)
        assert len(table) == 2
        assert table.lookup(DENSE) == BUILTIN_KNOBS
        assert table.lookup(OTHER)["nr"] == 16
    assert builtin_table("no-such-isa") is None
    assert [r.key for r in builtin_records("avx2")] == [key_text(DENSE)] * 2 + [key_text(OTHER)]
    # outside every use_knobs block builds see the host ISA's table; inside, exactly theirs
    assert current_table().lookup(DENSE) == BUILTIN_KNOBS
    with use_knobs(None):
        assert current_table() is None
    mine = KnobTable()
    with use_knobs(mine):
        assert current_table() is mine


def test_cpu_table_is_laid_over_the_isa_table(builtin_dir, monkeypatch):
    mine = dict(BUILTIN_KNOBS, mr=8)
    (builtin_dir / "testcpu.jsonl").write_text(_line(DENSE, mine, 1e-3) + "\n")
    table = builtin_table("avx2", "testcpu")
    assert table.lookup(DENSE) == mine  # the CPU's entry wins
    assert table.lookup(OTHER)["nr"] == 16  # the ISA's fills in the rest
    assert builtin_table("avx2").lookup(DENSE) == BUILTIN_KNOBS  # no CPU named: the ISA's
    assert builtin_table("no-such-isa", "testcpu").entries == {key_text(DENSE): mine}
    assert builtin_table("avx2", "no-such-cpu").lookup(DENSE) == BUILTIN_KNOBS
    for bad in ("../testcpu", "testcpu.jsonl", "Testcpu", ""):  # never a path
        assert builtin_table("avx2", bad).lookup(DENSE) == BUILTIN_KNOBS
    # the host's: its ISA's table with its CPU's (by LLVM's name) over it
    from minitvm.runtime import jit

    features = jit.host_cpu()[1]
    monkeypatch.setattr(jit, "host_cpu", lambda: ("testcpu", features))
    assert builtin_table().lookup(DENSE) == mine and current_table().lookup(DENSE) == mine
    assert builtin_table().lookup(OTHER)["nr"] == 16
    monkeypatch.setenv(knobs_mod.BUILTIN_ENV, "0")
    assert builtin_table() is None


def test_cpu_tables_are_named_and_promoted_like_isa_tables(tmp_path):
    for name, isa in CPUS.items():
        assert isa in ISAS and builtin_path(name).endswith(f"{name}.jsonl")
    space = declared_space(DENSE)
    best = Record(list(DENSE), dict(space.default(), mr=4, nr=32), [0.5e-3])
    default = Record(list(DENSE), space.default(), [1e-3])
    path = tmp_path / "znver4.jsonl"
    assert promote([(best, default)], "znver4", how="a test", path=str(path)) == [best]
    assert json.loads(path.read_text())["knobs"] == best.knobs


def test_bad_builtin_line_is_a_clear_error(builtin_dir):
    for isa in ISAS:
        (builtin_dir / f"{isa}.jsonl").write_text(_line(DENSE, BUILTIN_KNOBS, 1e-3) +
                                                  '\n{"workload": [1]}\n')
    knobs_mod._builtin.cache_clear()
    with pytest.raises(ValueError, match=r"\.jsonl:2: not a tuning record"):
        builtin_table()
    with pytest.raises(ValueError, match="no built-in records for ISA 'sse2'"):
        builtin_path("sse2")


def test_builtin_table_turned_off(builtin_dir, monkeypatch):
    with PassContext(config={"schedule.use_builtin_knobs": False}):
        assert builtin_table() is None and current_table() is None
    monkeypatch.setenv(knobs_mod.BUILTIN_ENV, "0")
    assert builtin_table() is None and current_table() is None
    monkeypatch.setenv(knobs_mod.BUILTIN_ENV, "1")
    assert current_table().lookup(DENSE) == BUILTIN_KNOBS


def test_user_records_take_precedence(builtin_dir, tmp_path_factory):
    path = tmp_path_factory.mktemp("user") / "records.jsonl"
    mine = dict(BUILTIN_KNOBS, mr=12, nr=16)
    path.write_text(_line(DENSE, mine, 5e-4) + "\n")
    with apply_history_best(path) as ctx:
        assert ctx.table.lookup(DENSE) == mine  # the user's record, not the built-in one
        assert ctx.table.lookup(OTHER)["nr"] == 16  # the built-in table fills in the rest
        assert current_table() is ctx.table
    with apply_history_best(path, builtin=False) as ctx:
        assert ctx.table.lookup(DENSE) == mine and ctx.table.lookup(OTHER) is None


def test_build_uses_the_builtin_knobs_and_stays_right(builtin_dir, monkeypatch):
    mod = small_mlp()
    x = np.random.default_rng(3).standard_normal((16, 64)).astype("float32")
    ref = mlp_reference(mod, x)
    lib, out = _build_and_run(mod, x)
    # the dense kernel got the built-in 4 x 32 register tile, not the default tile
    assert (4, 32) in _acc_tiles(lib)
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)
    monkeypatch.setenv(knobs_mod.BUILTIN_ENV, "0")
    lib_off, out_off = _build_and_run(mod, x)
    assert (4, 32) not in _acc_tiles(lib_off)
    np.testing.assert_allclose(out_off, ref, rtol=1e-4, atol=1e-4)


def test_promote_keeps_only_clear_wins(tmp_path):
    path = tmp_path / "avx2.jsonl"
    path.write_text(_line(OTHER, BUILTIN_KNOBS, 1e-3) + "\n" + _line(DENSE, BUILTIN_KNOBS, 1e-3)
                    + "\n")
    default = {"impl": "generated", "mr": 6, "nr": 16, "mc": 144, "min_work": 1 << 23,
               "gemv_split": 4}

    def pair(workload, best_costs, default_costs, **kn):
        return (Record(list(workload), dict(BUILTIN_KNOBS, **kn), best_costs),
                Record(list(workload), default, default_costs))

    added = promote([pair(DENSE, [0.9e-3, 1.0e-3], [1.0e-3, 1.0e-3], mr=8),   # 10% at 1 thread
                     pair(OTHER, [0.8e-3, 1.1e-3], [1.0e-3, 1.0e-3], mr=8)],  # loses at 2
                    "avx2", min_gain=0.05, how="a test", path=str(path))
    assert [r.key for r in added] == [key_text(DENSE)]
    lines = [json.loads(ln) for ln in path.read_text().splitlines()]
    assert [ln["workload"] for ln in lines] == [OTHER, DENSE]  # DENSE's old entry replaced
    assert lines[0]["knobs"] == BUILTIN_KNOBS
    assert lines[1]["knobs"]["mr"] == 8 and lines[1]["how"] == "a test"
    assert lines[1]["baseline"] == [1.0e-3, 1.0e-3]
    assert promote([pair(DENSE, [0.99e-3], [1e-3], mr=8)], "avx2", path=str(path)) == []


class _FakeRunner:
    """Measures nothing: the candidates' order is what the test looks at."""

    def __init__(self):
        self.seen: list[dict] = []

    def run(self, task, candidates):
        self.seen += candidates
        return [MeasureResult([1e-3 * (1 + len(self.seen) + i)]) for i in range(len(candidates))]


def test_tuner_tries_the_builtin_entry_right_after_the_default(builtin_dir):
    space = declared_space(DENSE)
    runner = _FakeRunner()
    tune_tasks([Task(list(DENSE), space)], None, trials=4, runner=runner, progress="none",
               confirm=0)
    assert runner.seen[0] == space.default() and runner.seen[1] == BUILTIN_KNOBS
    assert len({json.dumps(c, sort_keys=True) for c in runner.seen}) == 4


@pytest.fixture
def schedules_for(monkeypatch):
    """``schedules_for(isa, cpu=None)``: every schedule sizes its tiles and picks its switches
    as on ``isa`` (the code generator keeps the host's features), and its per-host settings
    (``common.host_switch``) as on ``cpu``, or on a CPU with no entries of its own; kernels
    built meanwhile are forgotten."""
    from minitvm.backend import kernel_cache

    def force(isa, cpu=None):
        force_isa(monkeypatch, isa, cpu)

    yield force
    kernel_cache.clear_cache()


@pytest.mark.parametrize("isa", ISAS + tuple(CPUS))
def test_shipped_tables_are_declared_configurations(isa, schedules_for):
    """Every shipped entry (of an ISA's table or a CPU's) names a workload the schedules
    declare (on the table's ISA: the tiles differ), knobs inside its space, not the defaults,
    a measured cost below its baseline's, and the command that made it."""
    schedules_for(CPUS.get(isa, isa), cpu=isa if isa in CPUS else None)
    knobs_mod._builtin.cache_clear()
    path = builtin_path(isa)
    text = open(path).read() if os.path.exists(path) else ""
    lines = [json.loads(ln) for ln in text.splitlines() if ln.strip()]
    assert len({key_text(d["workload"]) for d in lines}) == len(lines)  # one entry a workload
    for d in lines:
        space = declared_space(d["workload"])
        assert space is not None, d["workload"]
        assert space.validate(d["knobs"]) == d["knobs"] != space.default()
        assert min(b / c for b, c in zip(d["baseline"], d["costs"], strict=True)) > 0.98
        assert d["how"]


def test_verify_measures_best_and_default_side_by_side():
    space = declared_space(DENSE)
    best = dict(space.default(), mr=4, nr=32)
    recs = [Record(list(DENSE), space.default(), [2e-3]), Record(list(DENSE), best, [1e-3]),
            Record(list(OTHER), dict(space.default(), mr=8), [], error="crashed")]
    pairs = verify(recs, rounds=2, threads=(1, 2), runs=2)
    assert len(pairs) == 1  # the failed record's workload has no best to check
    b, d = pairs[0]
    assert b.knobs == best and d.knobs == space.default() and b.key == key_text(DENSE)
    assert len(b.costs) == len(d.costs) == 2 and min(b.costs + d.costs) > 0
    assert len(gains(b, d)) == 2
    # a run whose best is the default has nothing to verify
    assert verify([Record(list(DENSE), space.default(), [1e-3])], rounds=1, runs=1) == []


@pytest.mark.parametrize("cold", [True, False])
def test_verify_evicts_the_caches_before_each_timed_run(monkeypatch, cold):
    """Measured warm, a kernel alone finds its weights in L3, where a model streams them from
    memory: ``verify`` writes a buffer larger than the caches before each timed run (and,
    asked for warm runs, never)."""
    from minitvm.tune import builtin, workload

    calls = []
    monkeypatch.setattr(workload, "FLUSH_BYTES", 1 << 16)  # (a small buffer: a quick test)
    real_call = builtin.CacheFlusher.__call__
    monkeypatch.setattr(builtin.CacheFlusher, "__call__",
                        lambda self: (calls.append(self.buf.nbytes), real_call(self)))
    space = declared_space(DENSE)
    recs = [Record(list(DENSE), dict(space.default(), mr=4, nr=32), [1e-3])]
    pairs = verify(recs, rounds=2, threads=(1,), runs=3, cold=cold)
    assert len(pairs) == 1
    # 2 rounds x 2 configurations x 3 timed runs (the warm-up runs are not flushed)
    assert calls == ([1 << 16] * 12 if cold else [])
    flusher = builtin.CacheFlusher(1 << 16)
    flusher()
    first = int(flusher.buf[0])
    flusher()
    assert int(flusher.buf[0]) != first  # every line written anew each time


def test_relax_build_consults_the_builtin_table(monkeypatch):
    import minitvm as tvm
    from minitvm import relax
    from minitvm.script import ir as I
    from minitvm.script import relax as R

    @I.ir_module
    class Mlp:
        @R.function
        def main(x: R.Tensor((16, 64), "float32"), w: R.Tensor((64, 48), "float32")
                 ) -> R.Tensor((16, 48), "float32"):
            with R.dataflow():
                y = R.matmul(x, w)
                R.output(y)
            return y

    matmul = ["matmul", 16, 48, 64, False, "float32"]
    table = KnobTable({key_text(matmul): {"mr": 4, "nr": 32, "mc": 32}}, trace=True)
    monkeypatch.setattr(knobs_mod, "builtin_table", lambda isa=None: table)
    ex = relax.build(Mlp, "llvm")
    assert list(table.seen) == [key_text(matmul)]  # relax.build looked the workload up there
    rng = np.random.default_rng(0)
    x = rng.standard_normal((16, 64)).astype("float32")
    w = rng.standard_normal((64, 48)).astype("float32")
    out = relax.VirtualMachine(ex, tvm.cpu())["main"](tvm.nd.array(x), tvm.nd.array(w))
    np.testing.assert_allclose(out.numpy(), x @ w, rtol=1e-4, atol=1e-4)


def test_the_confirmation_round_decides_the_best():
    """A configuration that looked best once during the search (a lucky, low-biased sample)
    loses to the default when the confirmation round measures both again."""
    from minitvm.tune import best_records

    lucky, default = {"mr": 8}, {"mr": 6}
    recs = [Record(DENSE, default, [2e-3], cpu="a"), Record(DENSE, lucky, [1e-3], cpu="a"),
            Record(DENSE, lucky, [2.2e-3], cpu="a", confirm=True),
            Record(DENSE, default, [2.0e-3], cpu="a", confirm=True),
            Record(OTHER, lucky, [1e-3], cpu="a")]  # no confirmation round: all records count
    best = best_records(recs, cpu="a")
    assert best[key_text(DENSE)].knobs == default and best[key_text(DENSE)].costs == [2.0e-3]
    assert best[key_text(OTHER)].knobs == lucky
    back = Record.from_json(recs[2].to_json())
    assert back.confirm and back == recs[2]
    assert '"confirm"' not in recs[0].to_json()  # plain records keep their format


@pytest.mark.parametrize("cold", [True, False])
def test_time_module_can_time_with_cold_caches(monkeypatch, cold):
    """``workload.time_module(cold=True)`` evicts the caches before every timed run, not before
    the warm-up; its run-time budget counts the runs, not the evictions. (The tuner's search
    times warm, its default.)"""
    from minitvm.tune import workload

    calls = []

    class Module:
        def run(self):
            calls.append("run")

    monkeypatch.setattr(workload, "_FLUSHER", [])
    monkeypatch.setattr(workload, "FLUSH_BYTES", 1 << 16)
    monkeypatch.setattr(workload, "_WARMED", [True])
    monkeypatch.setattr(workload, "WARMUP_MS", 0.0)  # one warm-up run
    real_call = workload.CacheFlusher.__call__
    monkeypatch.setattr(workload.CacheFlusher, "__call__",
                        lambda self: (calls.append("flush"), real_call(self)))
    costs = workload.time_module(Module(), repeat=2, min_repeat_ms=0.0, cold=cold)
    assert len(costs) == 2 and min(costs) >= 0
    # a warm-up run, then 2 samples of 3 timed runs, each after an eviction when cold
    assert calls == ["run"] + (["flush", "run"] if cold else ["run"]) * 6


def test_a_cold_sample_stops_after_a_few_runs(monkeypatch):
    """A cold sample of a kernel far shorter than ``min_repeat_ms`` has ``COLD_MAX_RUNS`` runs
    (each costs an eviction), where a warm one runs on until the budget is filled."""
    from minitvm.tune import workload

    calls = []

    class Module:
        def run(self):
            calls.append("run")

    monkeypatch.setattr(workload, "_FLUSHER", [])
    monkeypatch.setattr(workload, "FLUSH_BYTES", 1 << 16)
    monkeypatch.setattr(workload, "_WARMED", [True])
    monkeypatch.setattr(workload, "WARMUP_MS", 0.0)
    monkeypatch.setattr(workload, "COLD_MAX_RUNS", 4)
    real_call = workload.CacheFlusher.__call__
    monkeypatch.setattr(workload.CacheFlusher, "__call__",
                        lambda self: (calls.append("flush"), real_call(self)))
    workload.time_module(Module(), repeat=2, min_repeat_ms=1e6, cold=True)
    assert calls == ["run"] + ["flush", "run"] * 2 * 4
    calls.clear()
    workload.time_module(Module(), repeat=1, min_repeat_ms=1e6, cold=False)
    assert calls.count("run") == 1 + 1000 and "flush" not in calls  # (warm: the run cap)


def test_time_module_warms_a_fresh_process_longer(monkeypatch):
    """The first timing in a process runs its module untimed for ``FIRST_WARMUP_MS`` (a new
    thread pool's worker joins no loop at first), later ones for ``WARMUP_MS``."""
    import types

    from minitvm.tune import workload

    # (the module's clocks advance 1 ms a run: a real 1 ms sleep can take the whole 40 ms
    # warm-up on a loaded machine, which then makes a single warm-up run)
    now = [0.0]
    runs = []

    class Module:
        def run(self):
            runs.append(now[0])
            now[0] += 0.001

    monkeypatch.setattr(workload, "time", types.SimpleNamespace(
        perf_counter=lambda: now[0], thread_time=lambda: now[0]))
    monkeypatch.setattr(workload, "_WARMED", [False])
    monkeypatch.setattr(workload, "FIRST_WARMUP_MS", 40.0)
    monkeypatch.setattr(workload, "WARMUP_MS", 0.0)
    t0 = now[0]
    workload.time_module(Module(), repeat=1, min_repeat_ms=0.0)
    first_timed = runs[-3]  # one sample of 3 timed runs after the warm-up
    assert first_timed - t0 >= 0.040 and len(runs) > 1 + 3  # several warm-up runs
    runs.clear()
    workload.time_module(Module(), repeat=1, min_repeat_ms=0.0)
    assert len(runs) == 1 + 3  # warmed already: a single warm-up run


def test_cold_timing_reads_the_inputs_back_after_each_eviction(monkeypatch):
    """Cold, the weights come from memory but the inputs (a model's fresh activations) do not:
    each eviction is followed by a read of every input, then the timed run."""
    from minitvm.tune import workload

    calls = []

    class Input:
        def __init__(self, name):
            self.name = name

        def numpy(self):
            return self

        def sum(self):
            calls.append(self.name)

    class Module:
        input_names = ["a", "b"]

        def get_input(self, name):
            return Input(name)

        def run(self):
            calls.append("run")

    monkeypatch.setattr(workload, "_FLUSHER", [])
    monkeypatch.setattr(workload, "FLUSH_BYTES", 1 << 16)
    monkeypatch.setattr(workload, "_WARMED", [True])
    monkeypatch.setattr(workload, "WARMUP_MS", 0.0)
    real_call = workload.CacheFlusher.__call__
    monkeypatch.setattr(workload.CacheFlusher, "__call__",
                        lambda self: (calls.append("flush"), real_call(self)))
    workload.time_module(Module(), repeat=1, min_repeat_ms=0.0, cold=True)
    assert calls == ["run"] + ["flush", "a", "b", "run"] * 3
    assert workload.COLD_SEARCH  # the tuner's search times this way


def test_cli_measures_at_the_thread_counts_asked_for(tmp_path, monkeypatch, capsys):
    """``--threads 1`` (a loaded machine, where wall clock at 2 threads is noise) verifies at
    one thread only, promotes on that measurement and says so on the line; a bad list is a
    clear error."""
    from minitvm.tune.builtin import __main__ as cli

    monkeypatch.setattr(knobs_mod, "BUILTIN_DIR", tmp_path)
    knobs_mod._builtin.cache_clear()
    records = tmp_path / "run.jsonl"
    records.write_text(_line(DENSE, BUILTIN_KNOBS, 1e-3) + "\n")
    seen = {}

    def fake_verify(recs, rounds, threads, runs, cold):
        seen.update(threads=threads, n=len(recs))
        return [(Record(list(DENSE), BUILTIN_KNOBS, [0.9e-3]),
                 Record(list(DENSE), dict(BUILTIN_KNOBS, mr=6), [1.0e-3]))]

    monkeypatch.setattr(cli, "verify", fake_verify)
    assert cli.main([str(records), "--isa", "avx2", "--threads", "1", "--how", "a test"]) == 0
    assert seen == {"threads": (1,), "n": 1}
    assert "(1 threads); saved +10.0%" in capsys.readouterr().out
    (line,) = [json.loads(ln) for ln in (tmp_path / "avx2.jsonl").read_text().splitlines()]
    assert line["knobs"] == BUILTIN_KNOBS and line["baseline"] == [1.0e-3]
    assert "threads=1 " in line["how"] and line["how"].startswith("a test; verified:")
    for bad in ("one", "0", "1,,2"):
        with pytest.raises(SystemExit):
            cli.main([str(records), "--isa", "avx2", "--threads", bad])
    knobs_mod._builtin.cache_clear()


def test_bert_attention_scores_take_the_default_tile_on_avx512():
    """BERT's ``q @ k^T`` (12 x 128 x 128 x 64) has no avx512 entry: its tuned 6 x 64 tile,
    promoted before B^T was packed through 16 x 16 transposes, re-verified at +1.2% cold and
    -7.4% warm against the default 12 x 32 (``python -m minitvm.tune.builtin``, one thread),
    under the table's 5% bar; ``scores @ v`` (B^T 12 x 64 x 128) keeps its entry."""
    lines = [json.loads(ln) for ln in open(builtin_path("avx512")) if ln.strip()]
    keys = {key_text(d["workload"]) for d in lines}
    assert key_text(["batch_matmul", [12, 128, 64], [12, 128, 64], True, "float32"]) not in keys
    assert key_text(["batch_matmul", [12, 128, 128], [12, 64, 128], True, "float32"]) in keys

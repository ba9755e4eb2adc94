"""Long fuzzing run (issue 15): random programs through every registered Relay pass,
relay.optimize at opt levels 0-3 and relay.build; parser mutations; damaged library files.

    python scripts/fuzz_long.py --programs 5000 --parser 20000 --library 300 --ieee --seed 0

Two processes side by side (each takes every 2nd program and half the parser/library cases):

    python scripts/fuzz_long.py ... --shard 0/2 --out a.json &
    python scripts/fuzz_long.py ... --shard 1/2 --out b.json &
    python scripts/fuzz_long.py --merge a.json b.json --out all.json

Relax (the same report; shards split these too):

    python scripts/fuzz_long.py --programs 0 --parser 0 --library 0 --relax-programs 1000 \
        --relax-parser 5000 --relax-library 100 --out relax.json

Relay programs with ``relay.Any()`` dimensions, each compiled ONCE by relay.vm.compile and run
at a schedule of batch sizes against the interpreter (symbolic kernels, shape-valued inputs,
while loops, vm.update_row; ``dynamic_differential``); Relax programs with a symbolic batch
likewise at several sizes:

    python scripts/fuzz_long.py --programs 0 --parser 0 --library 0 --dyn-programs 5000 \
        --relax-sizes-programs 500 --seed 0 --out dyn.json

The same programs from executables saved / exported and loaded back (``--saved-programs``), and
Relax programs with recursive loops, vm.builtin.update_row and passes before the build
(``--relax-loop-programs``, ``relax_loop_generator``).

Relay programs through the graph executor and the VM under a random opt_level and disabled_pass
set (``--build-programs``, ``build_matrix``), Relax programs through random sequences of passes
before relax.build (``--relax-pass-programs``, ``relax_pass_sequences``), and chains of float16 /
int8 / uint8 / bool casts fed values at their jumps, compared exactly (``--cast-programs``,
``cast_generator``), and quantized programs (qnn quantize / requantize / conv2d / dense / add,
int8 and uint8) against a numpy oracle of the quantization rules (``--qnn-programs``,
``qnn_generator``); Relax programs over two symbolic dimensions, one relax.build run at three
(n, m) pairs (``--relax-symbolic-programs``, ``relax_symbolic_generator``). Relay programs printed and parsed
back in four forms (``--text-programs``, ``text_round_trip``); Relax programs through LegalizeOps,
AnnotateTIROpPattern, FuseOps and FuseTIR by hand, built, and exported / loaded back
(``--relax-lowered-programs``, ``relax_lowered_sequences``). Random ONNX graphs through the
Relay and Relax importers at opt_level 0 and 3 against ONNX Runtime (``--onnx-programs``,
``onnx_differential``; needs onnx and onnxruntime). Random PyTorch programs through five paths
(TorchScript -> Relay, torch.export -> Relay and -> Relax, torch.onnx.export -> Relay's and
Relax's ONNX importers) at opt_level 0 and 3 against eager (``--torch-programs``, ``torch_differential``; needs torch); ``--torch-batches``
checks them eight to a module (seed s: programs 8s .. 8s+7): 2-3.5x cheaper per program
(1.5-2.5 s against 5-6.5 s one by one, on a loaded 2-core host).

Re-run particular programs (after a fix): ``--seeds 17,4242``; ranges ``--seeds 100:199`` (both
ends included; ``199:100`` walks down, so a second pair of processes can work a range from its
end while the first pair works from its start -- ``--merge`` counts each seed once).

The report (a summary and every finding) is rewritten to --out as JSON after every finding and
every 25 programs, so a killed run keeps what it found. Exit status 1 when any check failed.
Findings in passes listed with --known are counted separately (known bugs whose fix belongs to
another part) and do not fail the run; so are "order-dependent" IEEE differences (a sum of
products over huge finite inputs overflowing differently under FMA contraction/reassociation,
see ``differential.check_build``), which are reported but are not wrong answers.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import sys
import tempfile
import time
import warnings

MAX_FINDINGS = 300
# ("exporter": a difference torch.onnx.export wrote into the file, ORT shares it; not ours)
TOLERATED = {"order-dependent", "rewrite-dependent", "boundary-dependent", "exporter"}


class Report:
    """The JSON report, written atomically to ``path`` whenever it changes."""

    def __init__(self, path: str, command: str):
        self.path = path
        self.data: dict = {"command": command, "status": "running", "program_findings": []}
        self.counts: collections.Counter = collections.Counter()

    def add_finding(self, f) -> None:
        self.keep(f, "", self.counts)
        self.write()

    def keep(self, f, tag: str, counts: collections.Counter) -> None:
        """Count finding ``f`` in ``counts`` and keep it (its pass named after ``tag``) in the
        report's list, up to ``MAX_FINDINGS``."""
        counts[(f.kind, f.pass_name)] += 1
        if len(self.data["program_findings"]) < MAX_FINDINGS:
            self.data["program_findings"].append(
                {"kind": f.kind, "pass": tag + f.pass_name, "seed": f.seed,
                 "detail": f.detail[:500], "program": f.program[:4000]})

    def keep_found(self, found: list, findings: list, tag: str, label: str,
                   counts: collections.Counter, stats: dict, features, width: int) -> None:
        """Keep each finding of ``found`` (``keep``; appended to ``findings``), print it under
        ``label`` (its detail cut at ``width``), and refresh the run's finding counts and
        feature tallies in ``stats``."""
        for f in found:
            findings.append(f)
            self.keep(f, tag, counts)
            print(f"  {label} finding: [{f.kind}] {f.pass_name} seed {f.seed}: "
                  f"{f.detail[:width]}", flush=True)
        stats["findings"] = {f"{a} / {b}": v for (a, b), v in counts.items()}
        stats["features"] = dict(features)

    def write(self) -> None:
        if "programs" in self.data:
            self.data["programs"]["findings"] = {f"{k[0]} / {k[1]}": v
                                                 for k, v in self.counts.items()}
        tmp = self.path + ".tmp"
        with open(tmp, "w") as fh:
            json.dump(self.data, fh, indent=1)
        os.replace(tmp, self.path)


def run_library_fuzz(report: Report, key: str, fuzz, n: int, seed: int):
    """Run one damaged-archive fuzzer (``fuzz(n, workdir, seed=...)``) in a temporary
    directory and record its counts under ``key`` in the report."""
    t0 = time.time()
    with tempfile.TemporaryDirectory() as d:
        r = fuzz(n, d, seed=seed)
    report.data[key] = {
        "summary": str(r), "total": r.total, "loaded_ok": r.loaded_ok,
        "value_errors": r.value_errors, "seconds": round(time.time() - t0, 1),
        "failures": r.failures}
    report.write()
    return r


def parse_seeds(text: str) -> list[int]:
    seeds: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if ":" in part:
            a, b = (int(x) for x in part.split(":"))
            seeds.extend(range(a, b + 1) if a <= b else range(a, b - 1, -1))
        elif part:
            seeds.append(int(part))
    return seeds


def program_seeds(args) -> list[int]:
    if args.seeds:
        seeds = parse_seeds(args.seeds)
    else:
        seeds = [args.seed + k for k in range(args.programs)]
    k, n = args.shard
    return seeds[k::n]


def check_one(seed: int, names: list[str], ieee: bool) -> tuple[list, int]:
    """Every check on the program of ``seed``: (findings, relay.build runs)."""
    from minitvm.testing.fuzz import generate_program
    from minitvm.testing.fuzz.differential import check_build, check_pass, check_pipeline

    prog = generate_program(seed, bounded=True)
    found = []
    for name in names:
        found += check_pass(prog, name)
    found += check_pipeline(prog, special=False)
    builds = 1 if prog.graph_compatible else 0
    # the same seed without control flow / closures / ADTs: relay.build can run it
    flat = dict(control_flow=False, closures=False, adts=False)
    if not prog.graph_compatible:
        dataflow = generate_program(seed, **flat)
        if dataflow.graph_compatible:
            builds += 1
            found += check_pipeline(dataflow, opt_levels=())
    if ieee:  # unbounded operators, inf/nan/huge inputs, through relay.build
        raw = generate_program(seed, bounded=False, **flat)
        if raw.graph_compatible:
            builds += 1
            for f in check_build(raw, raw.inputs(special=True)):
                f.pass_name += " [ieee]"
                found.append(f)
    return found, builds


def run_programs(args, report: Report) -> list:
    from minitvm.testing.fuzz.differential import NOT_APPLICABLE, relay_pass_names

    names = [n for n in relay_pass_names() if n not in NOT_APPLICABLE]
    seeds = program_seeds(args)
    findings = []
    stats = report.data["programs"] = {"count": 0, "planned": len(seeds), "passes": len(names),
                                       "pass_runs": 0, "builds": 0, "seconds": 0.0,
                                       "last_seed": None, "findings": {}, "builds_by_seed": {}}
    t0 = time.time()
    for k, seed in enumerate(seeds):
        if args.time_budget and time.time() - t0 > args.time_budget:
            print(f"  time budget reached after {k} programs", flush=True)
            break
        found, builds = check_one(seed, names, args.ieee)
        stats.update(count=k + 1, pass_runs=stats["pass_runs"] + len(names),
                     builds=stats["builds"] + builds, last_seed=seed,
                     seconds=round(time.time() - t0, 1))
        stats["builds_by_seed"][str(seed)] = builds
        for f in found:
            findings.append(f)
            report.add_finding(f)
            print(f"  finding: [{f.kind}] {f.pass_name} seed {f.seed}: {f.detail[:200]}",
                  flush=True)
        if (k + 1) % 25 == 0:
            report.write()
            print(f"  {k + 1}/{len(seeds)} programs, {time.time() - t0:.0f} s, findings "
                  f"{len(findings)}", flush=True)
    report.write()
    return findings


def run_relax_programs(args, report: Report) -> list:
    """Random Relax programs: every standalone Relax pass, the build pipeline stage by stage,
    relax.build + VM at two values of the symbolic dimension (``relax_differential``)."""
    from minitvm.testing.fuzz.relax_differential import (
        check_relax_build,
        check_relax_program,
        standalone_pass_names,
    )
    from minitvm.testing.fuzz.relax_generator import generate_relax_program

    os.environ.setdefault("MINITVM_DISABLE_DISK_CACHE", "1")  # random kernels: no reuse
    k, n = args.shard
    seeds = ([args.seed + i for i in range(args.relax_programs)] if not args.relax_seeds
             else parse_seeds(args.relax_seeds))[k::n]
    names = standalone_pass_names()
    stats = report.data["relax_programs"] = {
        "count": 0, "planned": len(seeds), "passes": len(names), "pass_runs": 0, "builds": 0,
        "seconds": 0.0, "last_seed": None, "findings": {}, "features": {}}
    findings, counts = [], collections.Counter()
    features: collections.Counter = collections.Counter()
    t0 = time.time()
    for i, seed in enumerate(seeds):
        if args.time_budget and time.time() - t0 > args.time_budget:
            print(f"  time budget reached after {i} Relax programs", flush=True)
            break
        prog = generate_relax_program(seed)
        features.update(prog.features | ({"symbolic"} if prog.symbolic else set()))
        found = check_relax_program(prog, sample=args.relax_sample)
        builds = 1
        if args.ieee:  # unbounded operators, inf/nan/huge/zero-size inputs
            raw = generate_relax_program(seed, bounded=False)
            found += check_relax_build(raw, special=True)
            builds += 1
        stats.update(count=i + 1, pass_runs=stats["pass_runs"] + len(names),
                     builds=stats["builds"] + builds, last_seed=seed,
                     seconds=round(time.time() - t0, 1))
        report.keep_found(found, findings, "relax:", "relax", counts, stats, features, 200)
        if found or (i + 1) % 10 == 0:
            report.write()
        if (i + 1) % 25 == 0:
            print(f"  {i + 1}/{len(seeds)} Relax programs, {time.time() - t0:.0f} s, "
                  f"findings {len(findings)}", flush=True)
    report.write()
    return findings


def run_dynamic_programs(args, report: Report) -> list:
    """Relay programs with Any dimensions: one relay.vm.compile, several batch sizes."""
    from minitvm.testing.fuzz.dynamic_differential import check_dynamic
    from minitvm.testing.fuzz.dynamic_generator import generate_dynamic_program

    os.environ.setdefault("MINITVM_DISABLE_DISK_CACHE", "1")  # random kernels: no reuse
    k, n = args.shard
    seeds = ([args.seed + i for i in range(args.dyn_programs)] if not args.dyn_seeds
             else parse_seeds(args.dyn_seeds))[k::n]
    foci = [None, "loops", "shape-values", "selection"]  # by seed, in turn
    return _run_generated(args, report, "dyn_programs", "dyn:", seeds,
                          lambda s: generate_dynamic_program(s, focus=foci[s % 4]),
                          check_dynamic)


def run_saved_programs(args, report: Report) -> list:
    """The dynamic Relay programs and the Relax sizes programs through an executable saved /
    exported and loaded back (``check_dynamic(saved=True)``, ``check_relax_sizes(saved=True)``),
    in turn by seed."""
    from minitvm.testing.fuzz.dynamic_differential import check_dynamic
    from minitvm.testing.fuzz.dynamic_generator import generate_dynamic_program
    from minitvm.testing.fuzz.relax_differential import check_relax_sizes
    from minitvm.testing.fuzz.relax_generator import generate_relax_program

    os.environ.setdefault("MINITVM_DISABLE_DISK_CACHE", "1")
    k, n = args.shard
    seeds = [args.seed + i for i in range(args.saved_programs)][k::n]
    foci = [None, "loops", "shape-values", "selection"]

    def generate(s):
        if s % 2:
            return generate_relax_program(s, symbolic=True)
        return generate_dynamic_program(s, focus=foci[(s // 2) % 4])

    def check(prog):
        if hasattr(prog, "min_size"):
            return check_dynamic(prog, saved=True)
        return check_relax_sizes(prog, saved=True)

    return _run_generated(args, report, "saved_programs", "saved:", seeds, generate, check)


#: The generated-program runs that need only their module's generator and checker: report
#: section -> (the attribute of its --option, the ``minitvm.testing.fuzz`` module, its
#: generate and check functions). Relax loops: recursive loops, passes, one relax.build (every
#: other seed exported and loaded back), a schedule of lengths; relay build: the graph executor
#: and the VM vs the interpreter under the seed's opt_level and disabled_pass set; Relax
#: passes: the seed's sequence of high-level passes, then relax.build at a schedule of sizes;
#: casts: Relay through every executor (even seeds), Relax through relax.build (odd); qnn:
#: every Relay executor vs the numpy oracle; Relax (n, m): one relax.build, three size pairs.
MODULE_RUNS = {
    "relax_loop_programs": ("relax_loop_programs", "relax_loop_generator",
                            "generate_loop_program", "check_relax_loops"),
    "relay_build_programs": ("build_programs", "build_matrix", "generate_build_program",
                             "check_build_matrix"),
    "relax_pass_programs": ("relax_pass_programs", "relax_pass_sequences",
                            "generate_pass_program", "check_relax_sequence"),
    "cast_programs": ("cast_programs", "cast_generator", "generate_cast_program",
                      "check_cast_program"),
    "qnn_programs": ("qnn_programs", "qnn_generator", "generate_qnn_program",
                     "check_qnn_program"),
    "relax_symbolic_programs": ("relax_symbolic_programs", "relax_symbolic_generator",
                                "generate_symbolic_program", "check_symbolic_program"),
    "text_programs": ("text_programs", "text_round_trip", "generate_text_program",
                      "check_text_program"),
    "relax_lowered_programs": ("relax_lowered_programs", "relax_lowered_sequences",
                               "generate_lowered_program", "check_lowered_program"),
    "onnx_programs": ("onnx_programs", "onnx_differential", "generate_onnx_program",
                      "check_onnx_program"),
    "torch_programs": ("torch_programs", "torch_differential", "generate_torch_program",
                       "check_torch_program"),
    "torch_batches": ("torch_batches", "torch_differential", "generate_torch_batch",
                      "check_torch_batch"),
}


def run_module_programs(args, report: Report, key: str) -> list:
    """The programs of run ``key`` of ``MODULE_RUNS`` (seeds from --seed, sharded), generated
    and checked by its module (``_run_generated``)."""
    import importlib

    option, module, generate, check = MODULE_RUNS[key]
    mod = importlib.import_module(f"minitvm.testing.fuzz.{module}")
    os.environ.setdefault("MINITVM_DISABLE_DISK_CACHE", "1")  # random kernels: no reuse
    k, n = args.shard
    seeds = [args.seed + i for i in range(getattr(args, option))][k::n]
    return _run_generated(args, report, key, GENERATED_TAGS[key], seeds,
                          getattr(mod, generate), getattr(mod, check))


def run_relax_size_programs(args, report: Report) -> list:
    """Relax programs with a symbolic batch: one relax.build, a schedule of sizes."""
    from minitvm.testing.fuzz.relax_differential import check_relax_sizes
    from minitvm.testing.fuzz.relax_generator import generate_relax_program

    os.environ.setdefault("MINITVM_DISABLE_DISK_CACHE", "1")
    k, n = args.shard
    seeds = [args.seed + i for i in range(args.relax_sizes_programs)][k::n]
    return _run_generated(args, report, "relax_size_programs", "relax-sizes:", seeds,
                          lambda s: generate_relax_program(s, symbolic=True),
                          check_relax_sizes)


def _run_generated(args, report: Report, key: str, tag: str, seeds: list, generate,
                   check) -> list:
    """Generate and check the program of each seed; counts (and features) under ``key``."""
    stats = report.data[key] = {"count": 0, "planned": len(seeds), "seconds": 0.0,
                                "last_seed": None, "findings": {}, "features": {},
                                "generator_errors": 0}
    findings, counts = [], collections.Counter()
    features: collections.Counter = collections.Counter()
    t0 = time.time()
    for i, seed in enumerate(seeds):
        if args.time_budget and time.time() - t0 > args.time_budget:
            print(f"  time budget reached after {i} programs ({key})", flush=True)
            break
        try:
            prog = generate(seed)
        except Exception as err:  # noqa: BLE001 - a generator bug: counted, and shown
            stats["generator_errors"] += 1
            print(f"  {key}: generator failed on seed {seed}: {type(err).__name__}: {err}",
                  flush=True)
            continue
        features.update(getattr(prog, "features", ()))
        try:
            found = check(prog)
        except Exception as err:  # noqa: BLE001 - the checker (its oracle) failed: a finding
            from minitvm.testing.fuzz.differential import Finding

            found = [Finding("checker-error", key, seed, f"{type(err).__name__}: {err}",
                             "")]
        stats.update(count=i + 1, last_seed=seed, seconds=round(time.time() - t0, 1))
        report.keep_found(found, findings, tag, tag, counts, stats, features, 300)
        if found or (i + 1) % 25 == 0:
            report.write()
        if (i + 1) % 100 == 0:
            print(f"  {i + 1}/{len(seeds)} {key}, {time.time() - t0:.0f} s, findings "
                  f"{len(findings)}", flush=True)
    report.write()
    return findings


def run_relax_fuzzers(args, report: Report) -> bool:
    """The Relax TVMScript parser and executable-file fuzzers; True when any failed."""
    failed = False
    shard_seed = args.seed + 7919 * args.shard[0]
    parser_n = _share(args.relax_parser, args.shard)
    library_n = _share(args.relax_library, args.shard)
    if parser_n:
        from minitvm.testing.fuzz.relax_parser_fuzz import fuzz_relax_parser

        t0 = time.time()
        r = fuzz_relax_parser(parser_n, seed=shard_seed)
        report.data["relax_parser"] = {
            "summary": str(r), "total": r.total, "parsed": r.parsed,
            "parse_errors": r.parse_errors, "seconds": round(time.time() - t0, 1),
            "failures": [m for _, m in r.failures[:50]]}
        report.write()
        failed |= bool(r.failures)
        print(r, flush=True)
    if library_n:
        from minitvm.testing.fuzz.relax_library_fuzz import fuzz_relax_library

        r = run_library_fuzz(report, "relax_library", fuzz_relax_library, library_n, shard_seed)
        failed |= bool(r.failures)
        print(r, flush=True)
    return failed


def _share(n: int, shard: tuple[int, int]) -> int:
    k, count = shard
    return n // count + (1 if k < n % count else 0)


def merge(paths: list[str], out: str) -> int:
    """Combine the reports of several shards into one: each section of ``SECTION_MERGERS``
    that any shard has, by its merger, and the findings (a seed two reports both checked is
    reported once)."""
    parts = [json.load(open(p)) for p in paths]
    merged: dict = {"command": [p["command"] for p in parts], "status":
                    "done" if all(p.get("status") == "done" for p in parts) else "incomplete",
                    "program_findings": []}
    seen = set()
    for p in parts:
        for f in p["program_findings"]:
            key = (f["kind"], f["pass"], f["seed"], f["detail"])
            if key not in seen:
                seen.add(key)
                merged["program_findings"].append(f)
    for key, merge_section in SECTION_MERGERS.items():
        got = [p for p in parts if key in p]
        if got:
            merged[key] = merge_section(got, key, merged)
    with open(out, "w") as fh:
        json.dump(merged, fh, indent=1)
    print(json.dumps({k: v for k, v in merged.items() if k != "program_findings"}, indent=1))
    print(f"{len(merged['program_findings'])} program findings; written to {out}")
    bad = any(f["kind"] not in TOLERATED for f in merged["program_findings"]) or any(
        merged.get(k, {}).get("failures") for k in FUZZER_KEYS)
    return 1 if bad else 0


def _merge_relay_programs(parts: list[dict], key: str, merged: dict) -> dict:
    """The Relay programs' section: each seed counted once (shards and re-runs may overlap),
    its relay.build runs from the per-seed counts; finding counts from the merged findings
    list when no shard's list was cut at ``MAX_FINDINGS``."""
    counts: collections.Counter = collections.Counter()
    done: dict = {}  # seed -> relay.build runs (each seed counted once)
    unknown_builds = 0
    for part in parts:
        p = part[key]
        counts.update(p["findings"])
        seeds = _seeds_done(p, part["command"])
        per_seed = p.get("builds_by_seed")
        if per_seed is None:  # a report without per-seed counts: its total, minus repeats
            unknown_builds += p["builds"]
            for s in seeds:
                done.setdefault(s, None)
        else:
            for s in seeds:
                done[s] = per_seed.get(str(s), 0)
    progs = [part[key] for part in parts]
    passes = progs[0]["passes"]
    section = {
        "count": len(done), "passes": passes, "pass_runs": len(done) * passes,
        "builds": unknown_builds + sum(v for v in done.values() if v is not None),
        "seeds": _ranges(sorted(done)), "seconds": max(p["seconds"] for p in progs),
        "findings": dict(counts)}
    if all(sum(p["findings"].values()) <= MAX_FINDINGS for p in progs):
        section["findings"] = dict(collections.Counter(
            f"{f['kind']} / {f['pass']}" for f in merged["program_findings"]
            if not f["pass"].startswith(RUN_TAGS)))
    return section


def _tally(values: list) -> dict:
    total: collections.Counter = collections.Counter()
    for v in values:
        total.update(v)
    return dict(total)


def _concat(values: list) -> list:
    return [x for v in values for x in v]


def _by_fields(rules: dict):
    """A section merger from ``rules``: output field -> (the shards' field, its default where
    a shard lacks it, how the shards' values combine); a rule whose default is ``_OPTIONAL``
    gives its field only where a shard has it."""
    def merge_section(parts: list[dict], key: str, merged: dict) -> dict:
        got = [p[key] for p in parts]
        return {out: combine([g.get(src, default) for g in got])
                for out, (src, default, combine) in rules.items()
                if default is not _OPTIONAL or any(src in g for g in got)}
    return merge_section


_OPTIONAL = object()


def _first(values: list):
    return values[0]


def _sum_present(values: list):
    return sum(v for v in values if v is not _OPTIONAL)


#: The report sections of the generated-program runs (``_run_generated``), in run order,
#: and the tags of the findings of those run by ``run_module_programs``.
GENERATED_KEYS = ("dyn_programs", "relax_size_programs", "saved_programs",
                  "relax_loop_programs", "relay_build_programs", "relax_pass_programs",
                  "cast_programs", "qnn_programs", "relax_symbolic_programs",
                  "text_programs", "relax_lowered_programs", "onnx_programs",
                  "torch_programs", "torch_batches")
GENERATED_TAGS = {"relax_loop_programs": "relax-loops:", "relay_build_programs": "build:",
                  "relax_pass_programs": "relax-passes:", "cast_programs": "casts:",
                  "qnn_programs": "qnn:", "relax_symbolic_programs": "relax-nm:",
                  "text_programs": "text:", "relax_lowered_programs": "relax-lowered:",
                  "onnx_programs": "onnx:", "torch_programs": "torch:",
                  "torch_batches": "torch:"}
#: The parser and damaged-file fuzzers' sections.
FUZZER_KEYS = ("parser", "library", "relax_parser", "relax_library")

#: How each report section merges over shards, which work disjoint seeds and cases: counts,
#: plans, pass runs, builds and errors summed, finding and feature tallies added, the longest
#: shard's seconds, every shard's last seed, summary and failures.
SECTION_MERGERS = {
    "programs": _merge_relay_programs,
    "relax_programs": _by_fields({
        "count": ("count", 0, sum), "passes": ("passes", None, _first),
        "pass_runs": ("pass_runs", 0, sum), "builds": ("builds", 0, sum),
        "seconds": ("seconds", 0.0, max), "findings": ("findings", {}, _tally),
        "features": ("features", {}, _tally)}),
    **dict.fromkeys(GENERATED_KEYS, _by_fields({
        "count": ("count", 0, sum), "planned": ("planned", 0, sum),
        "seconds": ("seconds", 0.0, max), "last_seed": ("last_seed", None, list),
        "generator_errors": ("generator_errors", 0, sum),
        "findings": ("findings", {}, _tally), "features": ("features", {}, _tally)})),
    **dict.fromkeys(FUZZER_KEYS, _by_fields({
        "summaries": ("summary", "", list), "failures": ("failures", [], _concat),
        **{f: (f, _OPTIONAL, _sum_present) for f in (
            "total", "parsed", "parse_errors", "type_errors", "loaded_ok", "value_errors")}})),
}

#: The tags that name the other runs' findings in ``program_findings`` (a Relay program's
#: finding has none).
RUN_TAGS = ("relax:", "dyn:", "relax-sizes:", "saved:", "relax-loops:", "build:",
            "relax-passes:", "casts:", "qnn:", "relax-nm:", "text:", "relax-lowered:", "onnx:",
            "torch:")


def _seeds_done(stats: dict, command: str) -> list[int]:
    """The seeds a (possibly killed) report checked: its first ``count`` of its plan."""
    ap = _parser()
    args = ap.parse_args(command.split()[1:])
    return program_seeds(args)[:stats["count"]]


def _ranges(seeds: list[int]) -> str:
    out, start, prev = [], None, None
    for s in seeds:
        if start is None:
            start = prev = s
        elif s == prev + 1:
            prev = s
        else:
            out.append(f"{start}:{prev}" if prev != start else str(start))
            start = prev = s
    if start is not None:
        out.append(f"{start}:{prev}" if prev != start else str(start))
    return ",".join(out)


def _shard(text: str) -> tuple[int, int]:
    k, _, n = text.partition("/")
    k, n = int(k), int(n or 1)
    if not 0 <= k < n:
        raise argparse.ArgumentTypeError(f"--shard K/N needs 0 <= K < N, got {text!r}")
    return k, n


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--programs", type=int, default=1000)
    ap.add_argument("--parser", type=int, default=20000)
    ap.add_argument("--library", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--seeds", default="", help="comma-separated program seeds to run instead")
    ap.add_argument("--shard", type=_shard, default=(0, 1), metavar="K/N",
                    help="run the K-th of N interleaved shares of the work (K from 0)")
    ap.add_argument("--ieee", action="store_true",
                    help="also build each program with unbounded values and inf/nan inputs")
    ap.add_argument("--known", action="append", default=[],
                    help="a pass whose findings are known bugs (repeatable)")
    ap.add_argument("--relax-programs", type=int, default=0,
                    help="random Relax programs through every Relax pass, the build "
                         "pipeline and relax.build + VM")
    ap.add_argument("--relax-seeds", default="",
                    help="comma-separated Relax program seeds (ranges a:b) to run instead")
    ap.add_argument("--relax-parser", type=int, default=0,
                    help="mutated Relax TVMScript texts")
    ap.add_argument("--relax-library", type=int, default=0,
                    help="damaged Relax VM executables (export_library)")
    ap.add_argument("--relax-sample", type=int, default=3,
                    help="determinism and round-trip checks of each Relax pass on one "
                         "program in K (every other check on every program)")
    ap.add_argument("--dyn-programs", type=int, default=0,
                    help="random Relay programs with Any dimensions: one relay.vm.compile, "
                         "run at a schedule of batch sizes against the interpreter")
    ap.add_argument("--dyn-seeds", default="",
                    help="comma-separated seeds (ranges a:b) of those programs to run instead")
    ap.add_argument("--relax-sizes-programs", type=int, default=0,
                    help="random Relax programs with a symbolic batch: one relax.build, run "
                         "at a schedule of sizes against the numpy reference")
    ap.add_argument("--saved-programs", type=int, default=0,
                    help="dynamic Relay programs (even seeds) and Relax sizes programs (odd) "
                         "run from an executable saved / exported and loaded back")
    ap.add_argument("--relax-loop-programs", type=int, default=0,
                    help="random Relax programs with recursive loops (vm.builtin.update_row, "
                         "recurrences, closures): one relax.build, a schedule of lengths, "
                         "built and exported / loaded")
    ap.add_argument("--build-programs", type=int, default=0,
                    help="random Relay programs through relay.build + graph executor and "
                         "relay.vm.compile + VM vs the interpreter, each under a random "
                         "opt_level 0-3 and disabled_pass set")
    ap.add_argument("--relax-pass-programs", type=int, default=0,
                    help="random Relax programs through a random subset of Relax passes "
                         "before legalization, then relax.build, vs the numpy reference")
    ap.add_argument("--cast-programs", type=int, default=0,
                    help="random programs casting between float16 / int8 / uint8 / bool at "
                         "the jumps of the casts (boundaries), Relay (even seeds: every "
                         "executor) and Relax (odd seeds: relax.build)")
    ap.add_argument("--qnn-programs", type=int, default=0,
                    help="random quantized Relay programs (qnn quantize / dequantize / "
                         "requantize / conv2d / dense / add, int8 / uint8, random scales and "
                         "zero points) through the interpreter, relay.build and the VM vs a "
                         "numpy oracle, compared exactly")
    ap.add_argument("--relax-symbolic-programs", type=int, default=0,
                    help="random Relax programs over two symbolic dimensions (n, m): one "
                         "relax.build, run at three (n, m) pairs against the numpy reference")
    ap.add_argument("--text-programs", type=int, default=0,
                    help="random Relay programs (graph form, A-normal form, fused, fused + "
                         "A-normal form) printed and parsed back: structurally equal, the "
                         "same text again, the same interpreter values exactly")
    ap.add_argument("--relax-lowered-programs", type=int, default=0,
                    help="random Relax programs through high-level passes, LegalizeOps and "
                         "a prefix of AnnotateTIROpPattern / FuseOps / FuseTIR with clean-ups, "
                         "relax.build vs the numpy reference; the exported and loaded "
                         "executable vs the in-memory one, bit for bit")
    ap.add_argument("--onnx-programs", type=int, default=0,
                    help="random ONNX graphs (elementwise, broadcasting, reductions, data "
                         "movement, MatMul / Gemm / Conv / pools, float16 / int8 / uint8 / "
                         "bool) through the Relay and Relax importers at opt_level 0 and 3 vs "
                         "ONNX Runtime (needs onnx and onnxruntime)")
    ap.add_argument("--torch-programs", type=int, default=0,
                    help="random PyTorch programs (elementwise with type promotion, "
                         "reductions, indexing, views and joins, matmuls / convolutions / "
                         "pools, normalizations, sorts, in-place writes) through TorchScript "
                         "-> Relay, torch.export -> Relay and -> Relax, torch.onnx.export -> "
                         "both ONNX importers at opt_level 0 and 3 vs eager (needs torch; "
                         "onnx / onnxruntime for the ONNX paths)")
    ap.add_argument("--torch-batches", type=int, default=0,
                    help="the same PyTorch programs, torch_differential.BATCH of them merged "
                         "into one module per seed (one export, import and build per path; "
                         "a path that fails or refuses the batch checks them one by one)")
    ap.add_argument("--out", default="fuzz_long_report.json")
    ap.add_argument("--merge", nargs="+", metavar="REPORT",
                    help="merge the JSON reports of shards into --out and exit")
    ap.add_argument("--time-budget", type=float, default=0,
                    help="stop generating programs after this many seconds (0: no limit)")
    return ap


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    if args.merge:
        return merge(args.merge, args.out)
    warnings.simplefilter("ignore")
    command = " ".join([os.path.basename(sys.argv[0])] + (argv or sys.argv[1:]))
    report = Report(args.out, command)
    report.write()
    failed = False
    findings = run_programs(args, report) if (args.programs or args.seeds) else []
    unknown = [f for f in findings if f.pass_name.split(" ")[0] not in args.known
               and f.kind not in TOLERATED]
    failed |= bool(unknown)
    parser_n, library_n = _share(args.parser, args.shard), _share(args.library, args.shard)
    shard_seed = args.seed + 7919 * args.shard[0]  # distinct mutations per shard
    if parser_n:
        from minitvm.testing.fuzz.parser_fuzz import fuzz_parser

        t0 = time.time()
        r = fuzz_parser(parser_n, seed=shard_seed)
        report.data["parser"] = {
            "summary": str(r), "total": r.total, "parsed": r.parsed,
            "parse_errors": r.parse_errors, "type_errors": r.type_errors,
            "seconds": round(time.time() - t0, 1),
            "failures": [m for _, m in r.failures[:50]]}
        report.write()
        failed |= bool(r.failures)
        print(r, flush=True)
    if library_n:
        from minitvm.testing.fuzz.library_fuzz import fuzz_library

        r = run_library_fuzz(report, "library", fuzz_library, library_n, shard_seed)
        failed |= bool(r.failures)
        print(r, flush=True)
    relax_unknown = []
    if args.relax_programs or args.relax_seeds:
        relax_unknown = [f for f in run_relax_programs(args, report)
                         if f.kind not in TOLERATED]
        failed |= bool(relax_unknown)
    failed |= run_relax_fuzzers(args, report)
    for wanted, run in ((args.dyn_programs or args.dyn_seeds, run_dynamic_programs),
                        (args.relax_sizes_programs, run_relax_size_programs),
                        (args.saved_programs, run_saved_programs),
                        *((getattr(args, MODULE_RUNS[key][0]),
                           lambda a, r, key=key: run_module_programs(a, r, key))
                          for key in MODULE_RUNS)):
        if wanted:
            failed |= any(f.kind not in TOLERATED for f in run(args, report))
    report.data["status"] = "done"
    report.write()
    if "relax_programs" in report.data:
        p = report.data["relax_programs"]
        print(f"{p['count']} Relax programs x {p['passes']} passes = {p['pass_runs']} pass "
              f"runs, the build pipeline stage by stage and {p['builds']} relax.build runs "
              f"(two symbolic sizes each), {p['seconds']} s")
        for key, v in sorted(p["findings"].items(), key=lambda kv: -kv[1]):
            print(f"  {v:6d}  {key}")
        print(f"  unexpected Relax findings: {len(relax_unknown)}")
    if "programs" in report.data:
        p = report.data["programs"]
        print(f"{p['count']} programs x {p['passes']} passes = {p['pass_runs']} pass runs, "
              f"relay.optimize 0-3 on each, {p['builds']} relay.build runs, {p['seconds']} s")
        for key, v in sorted(p["findings"].items(), key=lambda kv: -kv[1]):
            print(f"  {v:6d}  {key}")
        print(f"  unexpected (not --known, not {'/'.join(sorted(TOLERATED))}): {len(unknown)}")
    for key in GENERATED_KEYS:
        if key in report.data:
            p = report.data[key]
            print(f"{p['count']} {key} ({p['generator_errors']} generator errors), "
                  f"{p['seconds']} s, features {p['features']}")
            for k, v in sorted(p["findings"].items(), key=lambda kv: -kv[1]):
                print(f"  {v:6d}  {k}")
    print(f"report written to {args.out}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

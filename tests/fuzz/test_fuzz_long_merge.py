"""``scripts/fuzz_long.py --merge``: the shards' generated-program sections (dynamic Relay, Relax
sizes, saved executables, Relax loops and the generators added since) survive the merge, summed;
before, merging dropped them and kept only their findings, which the Relay programs' finding
counts then included."""

import importlib.util
import json
import pathlib

import pytest

_SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "scripts" / "fuzz_long.py"


@pytest.fixture(scope="module")
def fuzz_long():
    spec = importlib.util.spec_from_file_location("fuzz_long_script", _SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _shard(k: int, key: str, tag: str, count: int, finding_kind: str | None) -> dict:
    findings = [] if finding_kind is None else [
        {"kind": finding_kind, "pass": tag + "relax.build", "seed": 10 + k, "detail": "d",
         "program": ""}]
    return {
        "command": f"fuzz_long.py --programs 2 --parser 0 --library 0 --shard {k}/2",
        "status": "done", "program_findings": findings + [
            {"kind": "mismatch", "pass": "FoldConstant", "seed": k, "detail": "x",
             "program": ""}],
        "programs": {"count": 1, "planned": 1, "passes": 3, "pass_runs": 3, "builds": 1,
                     "seconds": 1.0, "last_seed": k, "findings": {"mismatch / FoldConstant": 1},
                     "builds_by_seed": {str(k): 1}},
        key: {"count": count, "planned": count + 1, "seconds": 2.0 + k, "last_seed": 10 + k,
              "findings": {} if finding_kind is None else {f"{finding_kind} / relax.build": 1},
              "features": {"loop": count}, "generator_errors": k},
    }


@pytest.mark.parametrize("key", ["dyn_programs", "relax_size_programs", "saved_programs",
                                 "relax_loop_programs", "relay_build_programs",
                                 "relax_pass_programs", "cast_programs", "qnn_programs",
                                 "relax_symbolic_programs", "text_programs",
                                 "relax_lowered_programs"])
def test_generated_sections_are_merged(fuzz_long, tmp_path, key):
    assert key in fuzz_long.GENERATED_KEYS
    tag = {"dyn_programs": "dyn:", "relax_size_programs": "relax-sizes:",
           "saved_programs": "saved:", "relax_loop_programs": "relax-loops:"}.get(
               key, fuzz_long.GENERATED_TAGS.get(key, "x:"))
    paths = []
    for k in range(2):
        path = tmp_path / f"r{k}.json"
        path.write_text(json.dumps(_shard(k, key, tag, 3 + k, "mismatch" if k else None)))
        paths.append(str(path))
    out = tmp_path / "all.json"
    assert fuzz_long.merge(paths, str(out)) == 1  # a mismatch in a generated run fails it
    merged = json.loads(out.read_text())
    got = merged[key]
    assert got["count"] == 7 and got["planned"] == 9 and got["generator_errors"] == 1
    assert got["findings"] == {"mismatch / relax.build": 1}
    assert got["features"] == {"loop": 7} and got["seconds"] == 3.0
    # the Relay programs' counts are their own findings, not the generated run's
    assert merged["programs"]["findings"] == {"mismatch / FoldConstant": 2}
    assert merged["programs"]["count"] == 2
    assert len(merged["program_findings"]) == 3


def test_tolerated_generated_findings_do_not_fail_the_merge(fuzz_long, tmp_path):
    paths = []
    for k in range(2):
        shard = _shard(k, "saved_programs", "saved:", 2, "boundary-dependent")
        shard["program_findings"] = [f for f in shard["program_findings"]
                                     if f["pass"].startswith("saved:")]
        shard["programs"]["findings"] = {}
        path = tmp_path / f"r{k}.json"
        path.write_text(json.dumps(shard))
        paths.append(str(path))
    assert fuzz_long.merge(paths, str(tmp_path / "all.json")) == 0

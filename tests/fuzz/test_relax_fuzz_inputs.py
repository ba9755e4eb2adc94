"""Relax fuzzers, CI-sized: TVMScript parser mutations, damaged executables (in a subprocess),
VM call abuse — "a clear error or a correct result, never anything else"."""

import random

import pytest

from minitvm.testing.fuzz.relax_executor_fuzz import fuzz_relax_executor
from minitvm.testing.fuzz.relax_library_fuzz import fuzz_relax_library
from minitvm.testing.fuzz.relax_parser_fuzz import check_script, fuzz_relax_parser, mutate_script


@pytest.fixture(autouse=True, scope="module")
def _no_disk_cache():
    mp = pytest.MonkeyPatch()
    mp.setenv("MINITVM_DISABLE_DISK_CACHE", "1")
    yield
    mp.undo()


def test_relax_parser_mutations():
    r = fuzz_relax_parser(300, seed=11, programs=8)
    assert r.total == 300 and r.parse_errors > 100
    assert not r.failures, "\n\n".join(f"{m}\n{(t or '')[:1500]}" for t, m in r.failures[:3])


def test_mutations_are_deterministic():
    text = "@R.function\ndef main(x: R.Tensor((2,), 'float32')):\n    return x\n"
    a = [mutate_script(text, random.Random(5)) for _ in range(3)]
    b = [mutate_script(text, random.Random(5)) for _ in range(3)]
    assert a == b


def test_check_script_accepts_a_valid_module():
    text = ("from tvm.script import relax as R\n\n@R.function\n"
            "def main(x: R.Tensor((2,), dtype='float32')) -> R.Tensor((2,), dtype='float32'):\n"
            "    y: R.Tensor((2,), dtype='float32') = R.add(x, x)\n    return y\n")
    assert check_script(text)[0] == "parsed"
    outcome, err = check_script(text.replace("R.add", "R.ad"))
    assert outcome == "parse_error" and err.lineno == 5 and err.col == 42


def test_relax_library_damage(tmp_path):
    r = fuzz_relax_library(24, str(tmp_path), seed=3)
    assert r.total == 24
    assert not r.failures, r.failures[:5]


def test_relax_vm_call_abuse():
    r = fuzz_relax_executor(250, seed=4)
    assert r.ok > 10 and r.clear_errors > 100
    assert not r.failures, r.failures[:5]

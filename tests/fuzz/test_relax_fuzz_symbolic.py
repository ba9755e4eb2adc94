"""CI sample of the two-symbolic-dimension Relax fuzzer (``fuzz_long --relax-symbolic-programs``):
programs over an ``(n, m)`` and an ``(m, k)`` tensor, one relax.build, run at three (n, m)
pairs (one with an empty axis) against the numpy reference; a planted wrong kernel is found."""

import numpy as np
import pytest

from minitvm.testing.fuzz import relax_symbolic_generator
from minitvm.testing.fuzz.relax_symbolic_generator import (
    SIZE_PAIRS,
    check_symbolic_program,
    generate_symbolic_program,
)


@pytest.mark.parametrize("seed", [0, 4, 9])
def test_programs_agree_at_every_size_pair(seed):
    prog = generate_symbolic_program(seed)
    text = prog.mod.script()
    assert 'T.int64()' in text and '"n"' in text and '"m"' in text
    sizes = prog.sizes()
    assert len(set(sizes)) == 3 and any(0 in s for s in sizes)
    assert check_symbolic_program(prog) == []


def test_generation_is_deterministic_and_covers_the_symbolic_axes():
    assert generate_symbolic_program(3).mod.script() == generate_symbolic_program(3).mod.script()
    features = set().union(*(generate_symbolic_program(s).features for s in range(40)))
    for feat in ("matmul over m", "softmax over m", "concat along n", "flatten",
                 "permute_dims"):
        assert feat in features, feat
    assert any(f.endswith("over n") for f in features)
    assert set(SIZE_PAIRS) >= {(0, 3), (2, 0)}


def test_a_wrong_result_is_found(monkeypatch):
    real = relax_symbolic_generator.flatten
    calls = []

    def off_by_one(values):  # planted: the VM's first float result (not the reference's)
        out = real(values)
        calls.append(1)
        if len(calls) % 2 == 0 and out[0].size:
            out[0] = out[0] + np.float32(1.0)
        return out

    monkeypatch.setattr(relax_symbolic_generator, "flatten", off_by_one)
    prog = generate_symbolic_program(0)
    found = check_symbolic_program(prog)
    assert len(found) == 1 and found[0].kind == "mismatch" and "n=" in found[0].detail


def test_flatten_shapes_are_told_apart():
    """Seeds 900227 / 900991 / 903079 of the first long run: the generator called a flatten of
    ``(m, 1)`` and one of ``(n, m)`` the same shape and subtracted them; the struct info (rightly)
    could not prove ``n * m == m``, so the build refused the op with its clear error. The
    generator now labels a flatten by its factors."""
    prog = generate_symbolic_program(900227)
    assert 'ndim=1)' not in prog.mod.script()
    assert check_symbolic_program(prog) == []

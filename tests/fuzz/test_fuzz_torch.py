"""CI sample of the random PyTorch program fuzzer (``torch_differential``): generation is
deterministic, covers the grammar's families and dtypes, every program runs eagerly; a fixed
program agrees through an importer; a planted wrong value is found."""

import numpy as np
import pytest

pytest.importorskip("torch", reason="the fuzzer generates PyTorch programs")

from minitvm.testing.fuzz.torch_differential import check_torch_program  # noqa: E402
from minitvm.testing.fuzz.torch_generator import generate_torch_program  # noqa: E402

SEEDS = range(6)


def test_generation_is_deterministic_and_covers_the_families():
    progs = [generate_torch_program(s) for s in SEEDS]
    again = generate_torch_program(SEEDS[-1])
    assert again.source == progs[-1].source
    assert all(np.array_equal(a, b) for a, b in zip(again.expected, progs[-1].expected,
                                                      strict=True))
    features = set().union(*(p.features for p in progs))
    families = {f.split()[0] for f in features}
    assert {"binary", "unary", "reduce", "index", "shape", "misc", "dtype"} <= families, families
    assert all(p.expected and p.source.startswith("def forward(self, x0") for p in progs)


def test_a_generated_program_agrees_and_a_wrong_value_is_found():
    prog = generate_torch_program(3)
    assert check_torch_program(prog, ("torchscript->relay",), (3,)) == []
    prog.expected[0] = prog.expected[0].copy()
    flat = prog.expected[0].reshape(-1)
    flat[0] = (not flat[0]) if flat.dtype == bool else flat[0] + 7
    found = check_torch_program(prog, ("torchscript->relay",), (3,))
    assert [f.kind for f in found] == ["mismatch"]


def test_a_merged_batch_agrees_and_names_the_program_of_a_wrong_value():
    from minitvm.testing.fuzz.torch_differential import check_torch_batch, merge_programs

    progs = [generate_torch_program(s) for s in (1, 2)]
    batch = merge_programs(progs)
    assert len(batch.expected) == sum(len(p.expected) for p in progs)
    assert set(batch.feeds) == {f"p{k}_{n}" for k, p in enumerate(progs) for n in p.feeds}
    assert check_torch_batch(batch, ("torchscript->relay",), (3,)) == []
    bad = progs[1].expected[0] = progs[1].expected[0].copy()
    flat = bad.reshape(-1)
    flat[0] = (not flat[0]) if flat.dtype == bool else flat[0] + 7
    found = check_torch_batch(merge_programs(progs), ("torchscript->relay",), (3,))
    assert [(f.kind, f.seed) for f in found] == [("mismatch", 2)]


def test_an_onnx_path_tells_an_exporter_difference_from_ours():
    """Seed 3 writes through a view (``v2.view(25).copy_(x2)``); torch.onnx.export's file
    drops the write, ONNX Runtime gives the importers' answer: an ``exporter`` note, not a
    mismatch of ours."""
    pytest.importorskip("onnx", reason="the path imports an ONNX file")
    pytest.importorskip("onnxruntime", reason="ORT tells the exporter's differences")
    from minitvm.testing.fuzz.torch_differential import NOT_OURS

    prog = generate_torch_program(3)
    found = check_torch_program(prog, ("onnx->relax",), (0,))
    assert found and {f.kind for f in found} == {NOT_OURS}, [str(f) for f in found]

"""CI sample of the random ONNX graph fuzzer (``fuzz_long --onnx-programs``): generated graphs
through both importers at opt_level 0 and 3 agree with ONNX Runtime; generation is
deterministic and covers the operator families; a planted wrong value is found by all four
runs; the generator's ONNX Slice lengths are ONNX Runtime's."""

import numpy as np
import pytest

pytest.importorskip("onnx", reason="the fuzzer generates ONNX models")
pytest.importorskip("onnxruntime", reason="ONNX Runtime gives the expected outputs")
from onnx import TensorProto as P  # noqa: E402
from onnx import helper  # noqa: E402

from minitvm.testing import onnx_graphs as og  # noqa: E402
from minitvm.testing.fuzz import onnx_generator  # noqa: E402
from minitvm.testing.fuzz.onnx_differential import (  # noqa: E402
    check_onnx_program,
    generate_onnx_program,
)


@pytest.mark.parametrize("seed", [3, 16, 45])  # (small graphs: a few nodes each)
def test_generated_graphs_agree_with_onnx_runtime(seed):
    prog = generate_onnx_program(seed)
    assert prog.expected and prog.features
    assert check_onnx_program(prog) == []


def test_generation_is_deterministic_and_covers_the_families():
    a, b = onnx_generator._build(5), onnx_generator._build(5)
    assert a[0].SerializeToString() == b[0].SerializeToString()
    assert all(np.array_equal(a[1][k], b[1][k]) for k in a[1])
    features = set().union(*(onnx_generator._build(s)[3] for s in range(80)))
    for op in ("Add", "MatMul", "Gemm", "Conv", "MaxPool", "AveragePool", "ReduceSum",
               "ArgMax select_last_index=1", "Softmax", "Gather", "Slice step", "Concat",
               "Reshape", "Transpose", "Where", "Cast float32->int8", "Mod fmod=0",
               "Div int", "Split", "Expand", "opset 13", "opset 18"):
        assert any(f.startswith(op) for f in features), op
    dtypes = {vi.type.tensor_type.elem_type for s in range(40)
              for vi in onnx_generator._build(s)[0].graph.input}
    assert {P.FLOAT, P.FLOAT16, P.INT8, P.UINT8, P.INT32, P.INT64, P.BOOL} <= dtypes


def test_a_wrong_value_is_found_by_every_run():
    prog = generate_onnx_program(3)
    prog.expected[0] = prog.expected[0].copy()
    prog.expected[0].flat[0] = 7 if prog.expected[0].dtype.kind != "b" else \
        not prog.expected[0].flat[0]
    found = check_onnx_program(prog)
    assert sorted(f.pass_name for f in found) == [
        "onnx->relax opt_level=0", "onnx->relax opt_level=3", "onnx->relay opt_level=0",
        "onnx->relay opt_level=3"]
    assert all(f.kind == "mismatch" for f in found)


def test_slice_lengths_follow_onnx_clamping():
    """A start before the first element stepping down clamps to 0 (Python's slice would be
    empty); ends past either side clamp; the generator's lengths are ONNX Runtime's."""
    cases = [(5, -8, -2 ** 62, -1), (5, 7, 1, -2), (5, -7, 4, 1), (4, 1, 2 ** 62, 3),
             (3, 0, -1, -1), (0, 0, 3, 1), (5, 3, -9, -2)]
    for d, s, e, step in cases:
        m = og.model([helper.make_node("Slice", ["x", "s", "e", "a", "p"], ["y"])],
                     [og.vi("x", P.FLOAT, [d])], ["y"],
                     {"s": np.array([s]), "e": np.array([e]), "a": np.array([0]),
                      "p": np.array([step])})
        got = og.ort_run(m, {"x": np.arange(d, dtype="float32")})[0]
        assert onnx_generator._slice_len(d, s, e, step) == len(got), (d, s, e, step)

"""CI sample of the quantized-program fuzzer (``fuzz_long --qnn-programs``): generated qnn
programs (quantize / dequantize / requantize / conv2d / dense / add, int8 and uint8) through
the interpreter, relay.build and the VM agree exactly with the numpy oracle; a planted wrong
oracle value and a planted wrong rounding are found."""

import numpy as np
import pytest

from minitvm.testing.fuzz import qnn_generator
from minitvm.testing.fuzz.qnn_generator import check_qnn_program, generate_qnn_program


@pytest.mark.parametrize("seed", [0, 3, 7])
def test_generated_programs_agree_with_the_oracle(seed):
    prog = generate_qnn_program(seed)
    assert prog.features and prog.expected
    assert check_qnn_program(prog) == []


def test_generation_is_deterministic_and_covers_the_ops():
    a, b = generate_qnn_program(5), generate_qnn_program(5)
    assert a.mod.astext() == b.mod.astext()
    assert all(np.array_equal(x, y) for x, y in zip(a.expected, b.expected, strict=True))
    features = set().union(*(generate_qnn_program(s).features for s in range(30)))
    for op in ("quantize int8", "quantize uint8", "requantize UPWARD", "requantize TONEAREST",
               "conv2d", "conv2d per-channel", "dense", "add", "dequantize",
               "requantize near tie", "requantize tie of 1/d"):
        assert op in features, op


def test_a_wrong_value_is_found_by_every_executor():
    prog = generate_qnn_program(3)
    prog.expected[0] = prog.expected[0].copy()
    prog.expected[0].flat[0] += 1
    found = check_qnn_program(prog)
    assert {f.pass_name.split(" ")[0] for f in found} == {
        "interpreter", "relay.build+graph", "relay.vm.compile"}
    assert all(f.kind == "mismatch" for f in found)


def test_the_oracle_rounds_requantize_as_the_mode_says():
    """Half up vs half away from zero differ at -2.5: an oracle that rounded every mode the
    same way would be caught on the programs that requantize negative ties."""
    half = 0.5
    assert [qnn_generator.fixed_point_requant(x, half, "UPWARD") for x in (-5, -3, 5, 1)] == \
        [-2, -1, 3, 1]
    assert [qnn_generator.fixed_point_requant(x, half, "TONEAREST") for x in (-5, -3, 5, 1)] \
        == [-3, -2, 3, 1]
    q = np.array([-5, 5], "int8")  # (q - 0) * 0.5 = -2.5, 2.5
    assert qnn_generator._requant(q, np.float32(1.0), 0, np.float32(2.0), 0, 1, "UPWARD",
                                  "int8").tolist() == [-2, 3]

"""Findings of the PyTorch program fuzzer's ONNX paths (``torch_differential``: programs written
by ``torch.onnx.export`` into both dialects' ``from_onnx``; stop 65), each reduced to the nodes
the exporter wrote: both importers at opt_level 0 and 3 against ONNX Runtime. And the bfloat16
cast the fuzzer's grammar now draws: Relay's torch.export importer refuses it where it is made."""

import numpy as np
import pytest

pytest.importorskip("onnx", reason="the graphs are ONNX models")
pytest.importorskip("onnxruntime", reason="ONNX Runtime gives the expected outputs")
from onnx import TensorProto as P  # noqa: E402
from onnx import helper  # noqa: E402

from minitvm.testing import onnx_graphs as og  # noqa: E402
from minitvm.testing.fuzz.onnx_differential import check_onnx_program  # noqa: E402
from minitvm.testing.fuzz.onnx_generator import OnnxProgram  # noqa: E402


def check(nodes, inputs, outputs, feeds, want, inits=None, opset=17):
    """``nodes`` through both importers at both opt levels give ONNX Runtime's outputs, which
    are ``want`` (eager PyTorch's, for the program the graph was exported from)."""
    m = og.model(nodes, inputs, outputs, inits, opset)
    m.ir_version = 8
    ref = [np.asarray(x) for x in og.ort_run(m, feeds)]
    for r, w in zip(ref, want, strict=True):
        np.testing.assert_array_equal(r, w)
    found = check_onnx_program(OnnxProgram(0, m, feeds, ref, opset))
    assert not found, "\n".join(str(f) for f in found)


def test_sign_of_nan_is_zero():
    """``torch.sign`` exports as Sign; ORT (as eager and TVM's ``topi.sign``) gives 0 at NaN.
    Both importers mapped Sign to their dialect's ``sign``, which keeps NaN (seed 272)."""
    x = np.array([np.nan, -0.5, 0.0, 2.0], "float16")
    check([helper.make_node("Sign", ["x"], ["y"])], [og.vi("x", P.FLOAT16, [4])],
          [og.vi("y", P.FLOAT16, [4])], {"x": x}, [np.array([0, -1, 0, 1], "float16")])


def _scatter(red, x, idx, upd):
    return ([helper.make_node("ScatterElements", ["x", "i", "u"], ["y"], axis=0,
                              reduction=red)],
            [og.vi("x", P.BOOL, list(x.shape)), og.vi("u", P.BOOL, list(upd.shape))],
            [og.vi("y", P.BOOL, list(x.shape))], {"x": x, "u": upd}, {"i": idx})


@pytest.mark.parametrize("red", ["add", "mul"])
def test_scatter_elements_reducing_bools(red):
    """``scatter_reduce(bool, 0, idx, src, 'sum' / 'prod')`` exports as ScatterElements of
    bools: add is or, mul is and. Both importers added in one bit (True + True was False, seed
    301); Relay's mul crashed on its padding slot's integer extreme of bool (seed 292)."""
    x = np.array([[True, False], [True, True], [False, True]])
    upd = np.array([[True, True]])
    idx = np.array([[1, 2]], "int64")
    want = x.copy()
    for j in range(2):
        want[idx[0, j], j] = (x[idx[0, j], j] | upd[0, j]) if red == "add" else \
            (x[idx[0, j], j] & upd[0, j])
    nodes, ins, outs, feeds, inits = _scatter(red, x, idx, upd)
    check(nodes, ins, outs, feeds, [want], inits)


def test_scatter_nd_adding_bools():
    """ScatterND's add of bools (the same one-bit sum, by a run-time index) is an or."""
    x = np.array([True, False, True])
    check([helper.make_node("ScatterND", ["x", "i", "u"], ["y"], reduction="add")],
          [og.vi("x", P.BOOL, [3]), og.vi("i", P.INT64, [2, 1]), og.vi("u", P.BOOL, [2])],
          [og.vi("y", P.BOOL, [3])],
          {"x": x, "i": np.array([[0], [1]], "int64"), "u": np.array([True, False])},
          [np.array([True, False, True])])


def test_reduce_log_sum_exp_of_integers():
    """``torch.logsumexp`` of an int64 tensor exports as ReduceLogSumExp of int64 (ONNX allows
    it; ORT answers in int64, eager in float32: the exporter's difference). Relax's importer
    crashed: its ``exp`` takes floats only (seed 330); then it truncated only the end, where
    ORT (and Relay) truncate each exp and the log (seed 8135: 1, not 2)."""
    x = np.array([[3, 3, 0, 5], [3, 1, 1, 5], [1, 0, 1, 5]], "int64")
    m = x.max(0)
    want = m + np.log(np.trunc(np.exp(x - m)).sum(0)).astype("int64")
    check([helper.make_node("ReduceLogSumExp", ["x"], ["y"], axes=[0], keepdims=0)],
          [og.vi("x", P.INT64, [3, 4])], [og.vi("y", P.INT64, [4])], {"x": x}, [want])


def test_a_cast_to_bfloat16_is_refused_where_it_is_made():
    """``x.to(torch.bfloat16)`` then arithmetic: Relay's torch.export importer made the cast
    and the next converter failed on numpy's missing bfloat16 (a TypeError in ``mul``); it
    refuses the cast, a refusal the fuzzer reads as one (no importer computes bfloat16)."""
    torch = pytest.importorskip("torch", reason="the program is a torch.export")
    from minitvm.relay.frontend.common import ImportError_
    from minitvm.relay.frontend.pytorch import from_exported_program
    from minitvm.testing.fuzz.torch_differential import is_refusal

    class M(torch.nn.Module):
        def forward(self, x):
            return (x.to(torch.bfloat16) * 1.5).float()

    ep = torch.export.export(M(), (torch.ones(2, 3),))
    with pytest.raises(ImportError_, match="bfloat16 is not supported") as err:
        from_exported_program(ep)
    assert is_refusal(err.value)


@pytest.mark.parametrize("op", ["ReduceL2", "ReduceLogSum"])
def test_integer_reductions_through_a_float_function(op):
    """``linalg.vector_norm`` of an integer value exported as ReduceL2 of int64; Relax's
    importer crashed in ``sqrt`` (seed 625), as in ReduceLogSum's ``log``: both compute in
    float64 and truncate back, as ORT's (and Relay's) answers."""
    x = np.array([[1, 4, 2], [3, 0, 5]], "int64")
    want = {"ReduceL2": np.sqrt((x * x).sum(0)), "ReduceLogSum": np.log(x.sum(0))}[op]
    check([helper.make_node(op, ["x"], ["y"], axes=[0], keepdims=0)],
          [og.vi("x", P.INT64, [2, 3])], [og.vi("y", P.INT64, [3])], {"x": x},
          [want.astype("int64")])


@pytest.mark.parametrize("reduce", ["amax", "amin"])
def test_bool_scatter_reduce_without_self_starts_from_bools_identity(reduce):
    """``scatter_reduce(bool, .., 'amax', include_self=False)``: the landed positions start from
    the reduction's identity, False for amax (True for amin). Relax's torch.export importer
    cast -inf to bool, True, so every landed position read True (seed 8031)."""
    torch = pytest.importorskip("torch", reason="the program is a torch.export")
    from minitvm.testing.fuzz.torch_differential import check_torch_program
    from minitvm.testing.fuzz.torch_generator import program_from_source

    src = ("def forward(self, x0, x1):\n"
           f"    return (torch.scatter_reduce(x0, 1, self.w0, x1, '{reduce}', "
           "include_self=False),)\n")
    prog = program_from_source(
        src, {"x0": np.array([[True, False, False, True], [False, True, False, False]]),
              "x1": np.array([[False, True, False], [True, False, True]])},
        {"w0": torch.tensor([[3, 1, 2], [0, 1, 3]])})
    found = check_torch_program(prog, ("export->relax",), (0,))
    assert not found, "\n".join(str(f) for f in found)

"""Regressions the random PyTorch program fuzzer (``torch_differential``) found: each program,
reduced from a generated one, through the importers it broke, against eager (values, shapes
and dtypes). Each test names the importers that were wrong and how."""

import numpy as np
import pytest

pytest.importorskip("torch", reason="the programs are PyTorch modules")

from minitvm.testing.fuzz.torch_differential import check_torch_program  # noqa: E402
from minitvm.testing.fuzz.torch_generator import program_from_source  # noqa: E402

TS, EP_RELAY, EP_RELAX = "torchscript->relay", "export->relay", "export->relax"
# (Relay's TorchScript and torch.export importers share their ATen converters: the TorchScript
# one stands for both unless the export path differs)


def _agree(source: str, importers, **feeds):
    prog = program_from_source(source, feeds)
    found = check_torch_program(prog, importers, opt_levels=(3,))
    assert found == [], "\n".join(str(f) for f in found)


def test_softmax_dtype_argument_casts_first():
    """``softmax(x, dim, dtype=float32)`` of float16: Relay returned float16 (the dtype ignored)."""
    _agree("def forward(self, x):\n"
           "    return (torch.softmax(x, 0, dtype=torch.float32),\n"
           "            torch.log_softmax(x, -1, dtype=torch.float32))\n",
           (TS, EP_RELAX), x=np.array([[1.5, -0.5], [0.0, 2.0]], "float16"))


def test_float_functions_of_integers_and_bools_are_float32():
    """tanh / erf / exp / logsumexp of bool or int tensors are float32 in torch: Relay kept the
    bool / int dtype (silently wrong values), Relax refused to build (StructInfoError)."""
    _agree("def forward(self, b, i):\n"
           "    return (torch.tanh(b), torch.erf(b), torch.exp(i), torch.sqrt(i.abs()),\n"
           "            torch.logsumexp(b, 0), torch.sigmoid(i))\n",
           (TS, EP_RELAX), b=np.array([True, False, True]),
           i=np.array([-2, 0, 3], "int32"))


def test_reciprocal_of_integers_divides_as_float():
    """``1.5 / (x.abs() + 1)`` of an int32 x traces to ``reciprocal`` of an int tensor, float32 in
    torch: all three importers divided in integers (0 for every |x| > 0)."""
    _agree("def forward(self, x):\n    return (1.5 / (x.abs() + 1), torch.reciprocal(x))\n",
           (TS, EP_RELAX), x=np.array([[-3, 3, 1], [4, -1, 2]], "int32"))


def test_round_with_decimals():
    """``round(x, decimals=1)``: Relay ignored ``decimals`` (0.5 -> 0.0)."""
    _agree("def forward(self, x):\n"
           "    return (torch.round(x, decimals=1), torch.round(x, decimals=-1))\n",
           (TS, EP_RELAY), x=np.array([0.5, -0.35, 1.25, 15.0, -25.0, 2.0], "float32"))


def test_adding_bools_is_logical_or():
    """``bool + bool`` is ``or`` in torch: Relay and Relax added in one bit (True + True =
    False)."""
    _agree("def forward(self, a, b):\n    return (a + b, a + b[0])\n",
           (TS, EP_RELAX), a=np.array([[True, False], [True, True]]),
           b=np.array([[True, True], [False, False]]))


def test_relax_integer_division_rounding_modes_and_promotion():
    """Relax's ``div(rounding_mode=...)``: integer floor division truncated (-7 // 2 = -3), and
    operands of two dtypes (int by float, bool by a Python int) were not promoted (a build
    error, or a bool quotient)."""
    _agree("def forward(self, a, b, f, m):\n"
           "    return (torch.div(a, b, rounding_mode='floor'), a // b,\n"
           "            torch.div(a, b, rounding_mode='trunc'),\n"
           "            torch.div(a, f, rounding_mode='floor'), m // 2,\n"
           "            torch.div(a, 2.5, rounding_mode='trunc'))\n",
           (EP_RELAX,), a=np.array([-7, -3, 3, 7, 0]), b=np.array([2, -2, 2, -2, 3]),
           f=np.array([1.5, -2.0, 2.0, -0.5, 3.0], "float32"),
           m=np.array([True, False, True, True, False]))


def test_relax_add_with_alpha_of_two_dtypes():
    """``torch.add(int_tensor, float_tensor, alpha=2)``: Relax's converter read the dtype of an
    unbound promoted operand (TorchImportError)."""
    _agree("def forward(self, a, b):\n    return (torch.add(a, b, alpha=2),)\n",
           (EP_RELAX,), a=np.array([1, -2, 3]), b=np.array([0.5, 1.5, -1.0], "float32"))


def test_ceil_mode_pools_drop_a_window_starting_past_the_input():
    """Ceil-mode pools: torch drops a last window that would start past the input and its
    padding; all three importers kept it (an extra column: a wrong shape)."""
    _agree("def forward(self, x, y):\n"
           "    return (F.avg_pool2d(x, (3, 1), 2, 0, ceil_mode=True, count_include_pad=False),\n"
           "            F.max_pool2d(x, 2, 2, 1, ceil_mode=True),\n"
           "            F.max_pool1d(y, 2, 2, 1, ceil_mode=True),\n"
           "            F.avg_pool1d(y, 2, 2, 1, ceil_mode=True))\n",
           (TS, EP_RELAX),
           x=(np.arange(2 * 2 * 7 * 4) % 7 * 0.5 - 1).astype("float32").reshape(2, 2, 7, 4),
           y=(np.arange(2 * 3 * 5) % 5 * 0.5).astype("float32").reshape(2, 3, 5))

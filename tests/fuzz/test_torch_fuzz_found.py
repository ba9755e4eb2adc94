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


def test_writes_through_views_reach_every_alias():
    """A write through a view (``select`` -> ``permute`` -> ``relu_`` -> a slice assignment;
    ``mT`` then ``+=``): TorchScript->Relay tracked writes only through slice / select and
    never refreshed other views (the earlier view read stale values); torch.export->Relay
    returned the mutated input as an extra output; Relax refused the slice ``-5:`` of a 3-long
    axis (its start not clamped to 0)."""
    _agree("def forward(self, x, y):\n"
           "    v1 = x[3]\n"
           "    v2 = v1.permute(-1)\n"
           "    v3 = torch.relu_(v2)\n"
           "    v3[-2:4:1] = 0\n"
           "    w = y.mT\n"
           "    w[-5::1] += 1\n"
           "    u = y.view(9)\n"
           "    u[1:3] = 0\n"
           "    return (v1, v2, y.select(-2, 0), w)\n",
           (TS, EP_RELAY, EP_RELAX),
           x=np.array([[-2, 3, 4, 2], [-2, -2, -1, -3], [0, -1, 1, -3], [1, -2, -3, 2]],
                      "int32"),
           y=np.array([[0.5, -0.5, -2.0], [-0.5, -1.0, -2.0], [0.5, -1.5, 1.0]], "float32"))


def test_cat_and_stack_of_several_dtypes_promote():
    """``cat([floats, bools])`` is float32, ``stack([floats, int64s])`` float32: every importer
    refused to build (mismatched dtypes); Relax's ``atan2`` of an int64 and a float 0-d tensor
    read an unbound promoted operand."""
    _agree("def forward(self, f, b, i):\n"
           "    return (torch.cat([f, b], -1), torch.stack([f, i], 0),\n"
           "            torch.cat([i, f.half()], 1), torch.atan2(i, f[0, 0]))\n",
           (TS, EP_RELAX), f=np.array([[0.5, 1.5], [-1.0, 2.0]], "float32"),
           b=np.array([[True], [False]]), i=np.array([[1, -2], [3, 4]]))


def test_clamp_and_bitwise_with_python_numbers_promote():
    """``mask.clamp(min=-1)`` is int64, ``ints.clamp(0.5)`` float32, ``mask ^ -1`` int64: all
    three importers kept bool / int (a wrong dtype; ``^ -1`` a wrong value). Relay's unbounded
    clamp side was float32's max: float16 could not hold it and infinities were clipped.
    (``hardtanh``, converted with clamp, keeps an integer input's dtype.)"""
    _agree("def forward(self, b, i, f):\n"
           "    return (b.all() ^ -1, b ^ 2, 3 & b, torch.clamp(b, 1, 2), b.clamp(min=-1),\n"
           "            torch.clamp(b, -0.5, 1.5), i.clamp(0.5), i.clamp(-1, 2), f.clamp(max=1),\n"
           "            f.clamp(min=0), F.hardtanh(i, -1.5, 2.0))\n",
           (TS, EP_RELAX), b=np.array([[True, False, False]]), i=np.array([-2, 0, 3], "int32"),
           f=np.array([0.5, np.inf, -np.inf, 2.0], "float16"))


def test_relax_logical_functions_of_numbers_are_bool():
    """``logical_not`` / ``logical_and`` of float or integer tensors are bool in torch: Relax
    applied them to the numbers themselves (LLVM rejected ``xor float``, or a float mask reached
    ``where``)."""
    _agree("def forward(self, i, f, h):\n"
           "    return (torch.logical_not(f), torch.logical_and(i, f[0]),\n"
           "            torch.logical_not(i).sum(0, dtype=torch.float32),\n"
           "            torch.logical_and(h, h), torch.logical_not(h))\n",
           (EP_RELAX,), i=np.array([[4, 0], [-2, 3]], "int32"),
           f=np.array([0.0, -1.5], "float32"), h=np.array([0.0, 2.0, -0.5], "float16"))


def test_relax_bitwise_of_two_dtypes_promotes():
    """``int64 ^ int32 0-d`` (and ``bool & int64``): Relax refused (mismatched dtypes) where
    torch promotes as for any binary op."""
    _agree("def forward(self, i, s, b):\n    return (i ^ s, b & i, s | b[0])\n",
           (EP_RELAX,), i=np.array([1, -2, 3]), s=np.array(5, "int32"),
           b=np.array([True, False, True]))


def test_relay_elementwise_max_min_of_two_dtypes_promotes():
    """``torch.max(mask, ints)`` / ``torch.min(ints, halfs)``: Relay refused (mismatched dtypes)
    where torch promotes as for any binary op."""
    _agree("def forward(self, b, i, f):\n"
           "    return (torch.max(b, i), torch.min(i, f), torch.max(f, b))\n",
           (TS,), b=np.array([[True, False, True]]), i=np.array([[-3]]),
           f=np.array([0.5, -1.5, 2.0], "float16"))


def test_torchscript_in_place_chain_imports_in_linear_time():
    """A chain of in-place ops (each returning its target, a view of it) keeps only the views
    a later node reads: the importer's view bookkeeping stays at most 3 entries at any length
    (it grew with the chain, in quadratic time: 2,000 ops took 37 s), and the result is
    eager's."""
    import torch

    from minitvm import relay
    from minitvm.relay.frontend.pytorch import torchscript

    class Chain(torch.nn.Module):
        def forward(self, x):
            y = x[1:]
            for _ in range(40):
                y = y.add_(0.5).relu_()
            return x, y.permute(1, 0)

    x = torch.arange(-6.0, 6.0).reshape(4, 3)
    sizes = []
    real = torchscript._Views.prune

    def prune(self, index):
        real(self, index)
        sizes.append(len(self))

    traced = torch.jit.trace(Chain(), x.clone())
    try:
        torchscript._Views.prune = prune
        mod, params = relay.frontend.from_pytorch(traced, [("x", ((4, 3), "float32"))])
    finally:
        torchscript._Views.prune = real
    assert max(sizes) <= 3
    want = [t.numpy() for t in Chain()(x.clone())]
    got = relay.create_executor("graph", mod=mod).evaluate()(x.numpy())
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g.numpy(), w)

"""More regressions of the PyTorch importer fuzzer (``torch_differential``), stop 64: each a
program reduced from a generated one, through the importers it broke, against eager."""

import numpy as np
import pytest

pytest.importorskip("torch", reason="the programs are PyTorch modules")

from minitvm.testing.fuzz.torch_differential import check_torch_program  # noqa: E402
from minitvm.testing.fuzz.torch_generator import program_from_source  # noqa: E402

TS, EP_RELAY, EP_RELAX = "torchscript->relay", "export->relay", "export->relax"


def _agree(source: str, importers, weights=None, **feeds):
    prog = program_from_source(source, feeds, weights)
    found = check_torch_program(prog, importers, opt_levels=(3,))
    assert found == [], "\n".join(str(f) for f in found)


def test_relax_masks_made_by_logical_ops_of_numbers_are_bool():
    """A ``masked_fill`` mask that is ``logical_and(int64, float 0-d)`` (Relax: ``where`` got a
    float32 condition), and ``all(int64)`` added to float16 (Relax: ``not_equal(bool, int64
    0-d)``): the logical ops of numbers kept the numbers' dtype (fuzz63 seeds 11000, 11021)."""
    _agree("def forward(self, x0, x1, x2, x3):\n"
           "    v1 = torch.logical_and(x0, x1)\n"
           "    v2 = x1.unsqueeze(0).masked_fill(v1, -3)\n"
           "    v3 = torch.all(x2, 2, keepdim=True) + x3\n"
           "    return (torch.round(v2), torch.flatten(v3, 0, -1), F.softmax(v3, 1))\n",
           (EP_RELAX,), x0=np.array([3, 1, 0, 4, -4]), x1=np.array(-1.5, "float32"),
           x2=np.arange(-15, 15).reshape(2, 3, 5) % 4,
           x3=np.array([0.0, -1.0, 2.0], "float16").reshape(1, 3, 1))


def test_torchscript_writes_through_reshape_flatten_expand_views():
    """``reshape`` / ``flatten`` / ``contiguous`` return a view where the input's strides allow
    it (a copy otherwise), ``expand`` / ``view_as`` always: TorchScript->Relay treated them all
    as copies, so a write through one never reached its source (and an ``expand`` of a value
    later written read the old value). The traced strides decide, as in eager."""
    _agree("def forward(self, x):\n"
           "    y = x + 0\n"
           "    r = y.reshape(4, 3)\n"
           "    r[1] = 7\n"
           "    f = torch.flatten(y[1:])\n"
           "    f.mul_(2)\n"
           "    e = y[0:1].expand(3, 4)\n"
           "    y.view_as(r)[0] = -1\n"
           "    t = y.t() + 1\n"
           "    c = t.reshape(-1)\n"
           "    c.add_(3)\n"
           "    torch.relu_(y.contiguous())\n"
           "    return (y, e, t, c)\n",
           (TS, EP_RELAY, EP_RELAX), x=(np.arange(12).reshape(3, 4) % 5 - 2).astype("float32"))


def test_write_into_an_empty_slice_changes_nothing():
    """``v[1:1] = -1`` writes nothing: both Relay importers crashed building the write
    (``take`` from an empty axis; fuzz seed 8063)."""
    _agree("def forward(self, x):\n"
           "    v = x * 2\n"
           "    v[1:1] = -1\n"
           "    v[:, 5:] = 3\n"
           "    return (v,)\n",
           (TS, EP_RELAY, EP_RELAX), x=np.array([[0.5, -1.0, 2.0], [1.5, 0.0, -2.0]], "float16"))


def test_torchscript_writes_through_movedim_and_swapaxes():
    """``movedim`` / ``swapaxes`` return views: a write through one (``v3[-3:-1:2] += 2``)
    never reached the source in TorchScript->Relay (fuzz seed 8307)."""
    _agree("def forward(self, x, y):\n"
           "    v2 = x // 1\n"
           "    v3 = torch.movedim(v2, 0, 0)\n"
           "    v3[-3:-1:2] += 2\n"
           "    w = y * 1\n"
           "    m = torch.movedim(w, (0, 2), (2, 0))\n"
           "    m[0] = 0\n"
           "    torch.swapaxes(w, 0, 1)[1] = -1\n"
           "    return (v2, w)\n",
           (TS,), x=np.array([0.5, -1.5, -0.5], "float16"),
           y=(np.arange(24).reshape(2, 3, 4) % 7 - 3).astype("float32"))


def test_torchscript_chain_through_reshape_views_keeps_the_view_table_small():
    """A chain of writes through ``reshape`` / ``flatten`` views (each a view by the traced
    strides) keeps at most a few live views at any length: the table stays linear in the
    program, and the writes reach the source."""
    import torch

    from minitvm import relay
    from minitvm.relay.frontend.pytorch import torchscript

    class Chain(torch.nn.Module):
        def forward(self, x):
            y = x[1:]
            for _ in range(40):
                y = torch.flatten(y.reshape(3, 3).add_(0.5)).relu_().view(3, 3)
            return x, y

    x = torch.arange(-6.0, 6.0).reshape(4, 3)
    sizes = []
    real = torchscript._Views.prune

    def prune(self, index):
        real(self, index)
        sizes.append(len(self))

    traced = torch.jit.trace(Chain(), x.clone())
    try:
        torchscript._Views.prune = prune
        mod, _ = relay.frontend.from_pytorch(traced, [("x", ((4, 3), "float32"))])
    finally:
        torchscript._Views.prune = real
    assert max(sizes) <= 4, max(sizes)
    want = [t.numpy() for t in Chain()(x.clone())]
    got = relay.create_executor("graph", mod=mod).evaluate()(x.numpy())
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g.numpy(), w)


def test_scatters_into_bools_and_integer_extremes():
    """``scatter_reduce(ints, 'amax' / 'amin', include_self=False)``: Relay wrote an infinite
    identity into an integer tensor (OverflowError; fuzz seeds 16011, 16092); an accumulating
    ``index_put`` / ``index_add`` / ``scatter_add`` into a bool tensor: Relay refused (no bool
    add kernel: "Invalid integer data type 'b'"; seeds 16025, 16042), Relax added in one bit
    (True + True was False). Bools accumulate as or."""
    import torch

    src = ("def forward(self, x, s, b, u, m):\n"
           "    return (torch.scatter_reduce(x, 1, self.w0, s, 'amax', include_self=False),\n"
           "            torch.scatter_reduce(x, 1, self.w0, s, 'amin', include_self=False),\n"
           "            torch.index_add(b, 0, self.w1, u),\n"
           "            b.index_put((self.w1,), u, accumulate=True),\n"
           "            torch.scatter_add(b, 1, self.w2, m))\n")
    weights = dict(w0=torch.tensor([[[4], [1], [2]]]), w1=torch.tensor([2, 1]),
                   w2=torch.tensor([[1, 1], [0, 2]]))
    _agree(src, (TS, EP_RELAY, EP_RELAX), weights,
           x=np.arange(-20, 20).reshape(2, 5, 4).astype("int32") % 7,
           s=np.array([4, -4, -1], "int32").reshape(1, 3, 1),
           b=np.array([[True, False, False], [False, False, True], [False, True, False]]),
           u=np.array([[False, True, False], [True, True, False]]),
           m=np.array([[True, False], [False, True]]))


def test_relax_number_base_power_promotes():
    """``torch.pow(2, mask)`` is int64 (2 ** True = 2): Relax raised the base cast to bool
    (``power(True, mask)``: LLVM has no integer ``pow``; fuzz seed 16139); a float base over
    integers stays float32."""
    _agree("def forward(self, x, i):\n"
           "    return (torch.pow(2, x), torch.pow(3, i), 2 ** i, torch.pow(1.5, i))\n",
           (TS, EP_RELAX), x=np.array([[True, False], [False, True]]),
           i=np.array([0, 1, 3, 4], "int32"))


def test_torchscript_in_place_result_keeps_its_target_dtype():
    """``half.add_(float)`` stays float16: TorchScript->Relay gave the promoted float32 to the
    value and its later readers (fuzz seed 16686)."""
    _agree("def forward(self, x, y):\n"
           "    v = torch.round(x)\n"
           "    w = v.add_(y)\n"
           "    return (torch.remainder(w, 0.5), v, w * 2)\n",
           (TS, EP_RELAX), x=np.array([[[2.0, 2.0, 2.5, 1.0]]], "float16"),
           y=np.array([[[0.0, 1.0, -1.0, 1.5]]], "float32"))


def test_square_of_bools_is_int64():
    """``torch.square(mask)`` is int64 (``pow(mask, 2)``): both Relay importers kept bool
    (fuzz seed 17601)."""
    _agree("def forward(self, b):\n    return (torch.square(b), torch.square(b[0]))\n",
           (TS, EP_RELAY, EP_RELAX), b=np.array([[True, False], [False, True]]))

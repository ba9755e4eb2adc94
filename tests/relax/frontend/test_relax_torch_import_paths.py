"""relax.frontend.torch.from_exported_program on ops the new-user models reach only through
torch.export (benchmarks/sweep_import_paths.py): ``clamp`` with tensor bounds (the siamese
net's cosine similarity), a global average pool of a channels-last tensor (ConvNeXt's, which
torch's default decomposition turns into mean + as_strided). Built and run on the Relax VM
against PyTorch eager."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")


from .exported_program_run import run_exported as _run  # noqa: E402

nn = torch.nn


def _rand(*shape, seed=0):
    return torch.from_numpy(np.random.default_rng(seed).standard_normal(shape).astype("float32"))


@pytest.mark.parametrize("name,fn", [
    ("both", lambda x, lo, hi: torch.clamp(x, lo, hi)),
    ("min_only", lambda x, lo, hi: torch.clamp(x, min=lo)),
    ("max_only", lambda x, lo, hi: torch.clamp(x, max=hi)),
])
def test_clamp_tensor_bounds(name, fn):
    x, lo = _rand(3, 5), _rand(1, 5, seed=1) - 0.5
    text = _run(fn, x, lo, lo + 1.0)
    assert ("maximum" in text) == (name != "max_only")
    assert ("minimum" in text) == (name != "min_only")


def test_clamp_tensor_bound_broadcast_int_promotes():
    """A float x clamped by an int64 tensor bound: the result stays float32."""
    x = _rand(2, 4) * 3
    lo = torch.tensor([-1, 0, 1, 2])
    _run(lambda x, lo: torch.clamp(x, min=lo), x, lo)


def test_cosine_similarity_clamps_norms():
    """F.cosine_similarity records clamp with a tensor bound (the product of norms vs eps)."""
    a, b = _rand(4, 16), _rand(4, 16, seed=1)
    _run(lambda a, b: nn.functional.cosine_similarity(a, b, dim=1), a, b)


def test_global_pool_of_channels_last():
    """The permute-back of a channels-last block makes adaptive_avg_pool2d's input channels-last;
    kept whole, it is one mean (no as_strided)."""
    def fn(x):
        y = x.permute(0, 2, 3, 1).contiguous() * 2.0  # (N, H, W, C) in memory
        return nn.functional.adaptive_avg_pool2d(y.permute(0, 3, 1, 2), 1).flatten(1)

    text = _run(fn, _rand(2, 8, 5, 6))
    assert "R.mean" in text and "as_strided" not in text


@pytest.mark.parametrize("name,fn", [
    ("max3d", lambda x: nn.functional.max_pool3d(x, (1, 2, 2))),
    ("max3d_pad_stride", lambda x: nn.functional.max_pool3d(x, 3, stride=(1, 2, 2), padding=1)),
    ("max3d_ceil", lambda x: nn.functional.max_pool3d(x, 2, ceil_mode=True)),
    ("avg3d", lambda x: nn.functional.avg_pool3d(x, (2, 2, 2))),
    ("avg3d_pad_exclude", lambda x: nn.functional.avg_pool3d(x, 3, 2, 1,
                                                             count_include_pad=False)),
    ("max2d_pad", lambda x: nn.functional.max_pool2d(x.flatten(1, 2), 3, 2, 1)),
])
def test_pool3d(name, fn):
    """3-D pooling (video3d's C3D stem), which torch.export records as max_pool3d_with_indices
    / avg_pool3d; 2-D pooling goes through the same converter."""
    text = _run(fn, _rand(2, 3, 5, 7, 6))
    assert ("pool3d" in text) == ("3d" in name)


@pytest.mark.parametrize("name,fn,make", [
    ("float_base", lambda x: 10000.0 ** (x / 8), lambda: _rand(4, 8)),
    ("float_base_int_exp", lambda i: 2.0 ** i, lambda: torch.arange(-3, 5)),
    ("int_base_int_exp", lambda i: 3 ** i, lambda: torch.arange(0, 6)),
    ("rope_freqs", lambda i: 1.0 / (10000 ** (i.float() / 16)), lambda: torch.arange(0, 16, 2)),
])
def test_pow_scalar_base(name, fn, make):
    """A number raised to a tensor (torch.export: pow.Scalar), as a RoPE decoder's inverse
    frequencies; the result dtype is torch's."""
    _run(fn, make())


class _Bag(nn.Module):
    def __init__(self, **kw):
        super().__init__()
        torch.manual_seed(0)
        self.bag = nn.EmbeddingBag(20, 6, **kw)

    def forward(self, *xs):
        return self.bag(*xs)


@pytest.mark.parametrize("kw,offsets", [
    ({"mode": "sum"}, [0, 3, 3, 7]),  # an empty bag
    ({"mode": "mean"}, [0, 2, 5, 9]),
    ({"mode": "max"}, [0, 4, 4, 8]),
    ({"mode": "sum", "include_last_offset": True}, [0, 2, 6, 10]),
    ({"mode": "mean", "padding_idx": 3}, [0, 5, 8, 9]),
])
def test_embedding_bag_runtime_offsets(kw, offsets):
    """nn.EmbeddingBag with offsets as an input (DLRM's): each mode, an empty bag, the
    include_last_offset and padding_idx forms."""
    idx = torch.tensor([3, 1, 4, 1, 5, 9, 2, 6, 5, 3])
    text = _run(_Bag(**kw), idx, torch.tensor(offsets))
    assert "matmul" in text or kw["mode"] == "max"


def test_embedding_bag_2d_input():
    """A (batch, ids) input without offsets (the recommender's mean bag): torch makes the
    offsets inside the graph."""
    _run(_Bag(mode="mean"), torch.randint(0, 20, (4, 5), generator=torch.Generator().manual_seed(2)))


def test_embedding_bag_per_sample_weights():
    idx, off = torch.tensor([3, 1, 4, 1, 5, 9]), torch.tensor([0, 2, 2])
    _run(_Bag(mode="sum"), idx, off, _rand(6))


@pytest.mark.parametrize("name,fn", [
    ("src", lambda x, i, s: x.scatter(1, i, s)),
    ("src_larger", lambda x, i, s: torch.zeros(4, 6).scatter(1, i, torch.cat([s, s], 1))),
    ("value", lambda x, i, s: x.scatter(1, i, 2.5)),
    ("src_add", lambda x, i, s: x.scatter(1, i, s, reduce="add")),
    ("moe_gate", lambda x, i, s: torch.zeros_like(x).scatter(-1, i, s.softmax(-1))),
])
def test_scatter(name, fn):
    """Tensor.scatter (torch.export: scatter.src / .value / .reduce): an MoE's top-k routing
    weights written into a dense (tokens, experts) gate. Indices distinct per row."""
    x, s = _rand(4, 6), _rand(4, 2, seed=1)
    i = torch.tensor([[0, 3], [5, 1], [2, 4], [1, 0]])
    text = _run(fn, x, i, s)
    assert "scatter_elements" in text


@pytest.mark.parametrize("mode,padding,align", [("bilinear", "zeros", False),
                                                ("bilinear", "border", True),
                                                ("nearest", "zeros", False)])
def test_affine_grid_sample(mode, padding, align):
    """A spatial transformer's resampling: F.affine_grid (decomposed by torch.export) then
    F.grid_sample (grid_sampler_2d), some sample points outside the image."""
    def fn(x, theta):
        g = nn.functional.affine_grid(theta, [2, 3, 5, 6], align_corners=align)
        return nn.functional.grid_sample(x, g * 1.3, mode=mode, padding_mode=padding,
                                         align_corners=align)

    theta = torch.eye(2, 3).repeat(2, 1, 1) + 0.3 * _rand(2, 2, 3, seed=2)
    text = _run(fn, _rand(2, 3, 7, 9), theta)
    assert "gather_elements" in text


def test_grid_sample_bicubic_imports():
    """Bicubic grid sampling (once refused) runs on the shared native kernel, as eager."""
    def fn(x, g):
        return nn.functional.grid_sample(x, g, mode="bicubic", align_corners=False)

    _run(fn, _rand(1, 2, 5, 6), _rand(1, 3, 4, 2, seed=3))

"""The second round of new-user architectures through relay.frontend.from_pytorch: the
converters their import was missing (3-D convolutions, ``nn.EmbeddingBag``, ``torch.meshgrid``)
checked against eager PyTorch, and reduced-size end-to-end models that import through them (a
3-D video net, a DLRM-like recommender, a YOLO detection head), every kernel native."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

from frontend_models import compare_traced  # noqa: E402
from torch import nn  # noqa: E402

from minitvm import relay  # noqa: E402


def _run(model, *inputs, rtol=1e-5, atol=1e-5, fallback_ok=()):
    """Trace under no_grad, import, build at opt_level 3, compare with eager; every kernel but
    those named in ``fallback_ok`` must be native. Returns the lib."""
    model = model.eval()
    with torch.no_grad():
        ref = model(*inputs).numpy()
        traced = torch.jit.trace(model, inputs)
    lib = compare_traced(traced, inputs, ref, rtol, atol)
    fallback = [k for k, v in lib.get_lib().kernels.items() if v.kind != "native"]
    assert [k for k in fallback if not any(a in k for a in fallback_ok)] == []
    return lib


def _randn(*shape):
    return torch.from_numpy(np.random.default_rng(len(shape) + sum(shape)).standard_normal(
        shape).astype("float32"))


# ------------------------------------------------------------------ 3-D convolutions
@pytest.mark.parametrize("module, shape", [
    (lambda: nn.Conv3d(3, 8, (3, 5, 5), (1, 2, 2), (1, 2, 2)), (1, 3, 4, 12, 12)),
    (lambda: nn.Conv3d(4, 6, 3, padding=2, dilation=2, groups=2, bias=False), (2, 4, 5, 7, 6)),
    (lambda: nn.ConvTranspose3d(4, 6, 3, 2, 1, output_padding=1), (1, 4, 3, 4, 5)),
    (lambda: nn.ConvTranspose3d(4, 6, 2, 2, groups=2), (1, 4, 3, 3, 2)),
], ids=["conv3d_strided", "conv3d_dilated_grouped", "conv_transpose3d_output_padding",
        "conv_transpose3d_grouped"])
def test_conv3d_matches_torch(module, shape):
    torch.manual_seed(0)
    _run(module(), _randn(*shape))


def test_functional_conv3d_matches_torch():
    w = _randn(5, 2, 3, 3, 3)

    class M(nn.Module):
        def forward(self, x):
            return nn.functional.conv3d(x, w, stride=2, padding=1)

    _run(M(), _randn(1, 2, 5, 6, 7))


# ------------------------------------------------------------------ nn.EmbeddingBag
class _Bags(nn.Module):
    def __init__(self, **kw):
        super().__init__()
        self.bag = nn.EmbeddingBag(30, 4, **kw)

    def forward(self, *args):
        return self.bag(*args)


_IDS = torch.tensor([3, 7, 7, 0, 29, 12, 3, 5, 8])


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("case", ["2d", "offsets", "include_last_offset", "padding_idx"])
def test_embedding_bag_matches_torch(mode, case):
    torch.manual_seed(1)
    if case == "2d":
        _run(_Bags(mode=mode), torch.randint(0, 30, (3, 5)))
    elif case == "offsets":  # uneven bags, one of them empty (0 in torch)
        _run(_Bags(mode=mode), _IDS, torch.tensor([0, 2, 2, 7]))
    elif case == "include_last_offset":
        _run(_Bags(mode=mode, include_last_offset=True), _IDS, torch.tensor([0, 4, 4, 9]))
    else:  # the padding id is left out of every bag (and of a mean's count)
        _run(_Bags(mode=mode, padding_idx=3), torch.tensor([[3, 3, 1], [2, 3, 5], [3, 3, 3]]))


def test_embedding_bag_per_sample_weights():
    torch.manual_seed(2)
    _run(_Bags(mode="sum"), _IDS, torch.tensor([0, 3, 6]), torch.rand(9))


def test_embedding_bag_equal_bags_are_a_reshape_and_reduce():
    torch.manual_seed(3)
    model, ids = _Bags(mode="mean").eval(), torch.randint(0, 30, (4, 6))
    mod, _ = relay.frontend.from_pytorch(torch.jit.trace(model, ids), [("ids", ((4, 6), "int64"))])
    text = mod.astext()
    assert "mean(" in text and "nn.dense" not in text


# ------------------------------------------------------------------ torch.meshgrid
@pytest.mark.parametrize("indexing", ["ij", "xy"])
def test_meshgrid_matches_torch(indexing):
    class M(nn.Module):
        def forward(self, a, b):
            g = torch.meshgrid(a, b, torch.arange(3.0), indexing=indexing)
            return g[0] * 100 + g[1] * 10 + g[2]

    _run(M(), _randn(4), _randn(5))


# ------------------------------------------------------------------ end to end, reduced size
def test_video3d_net():
    def cbr(i, o, k, s, p):
        return [nn.Conv3d(i, o, k, s, p, bias=False), nn.BatchNorm3d(o), nn.ReLU()]

    torch.manual_seed(4)
    model = nn.Sequential(*cbr(3, 8, (3, 5, 5), (1, 2, 2), (1, 2, 2)),
                          nn.MaxPool3d((1, 3, 3), (1, 2, 2), (0, 1, 1)), *cbr(8, 16, 3, 1, 1),
                          nn.MaxPool3d(2, 2), nn.AdaptiveAvgPool3d(1), nn.Flatten(),
                          nn.Linear(16, 5))
    model[1].running_var.uniform_(0.5, 1.5)
    _run(model, _randn(1, 3, 4, 24, 24))


def test_recommender_with_embeddings_and_a_bag():
    class Rec(nn.Module):
        def __init__(self):
            super().__init__()
            self.tables = nn.ModuleList([nn.Embedding(n, 8) for n in (50, 20)])
            self.bag = nn.EmbeddingBag(40, 8, mode="mean")
            self.bottom = nn.Linear(5, 8)
            self.top = nn.Sequential(nn.Linear(32, 16), nn.ReLU(), nn.Linear(16, 1))

        def forward(self, dense, ids, bag):
            embs = [t(ids[:, i]) for i, t in enumerate(self.tables)]
            return torch.sigmoid(self.top(torch.cat([self.bottom(dense), *embs, self.bag(bag)],
                                                    1)))

    torch.manual_seed(5)
    ids = torch.stack([torch.randint(0, 50, (6,)), torch.randint(0, 20, (6,))], 1)
    _run(Rec(), _randn(6, 5), ids, torch.randint(0, 40, (6, 3)))


def test_yolo_style_head_decodes_anchors_on_a_meshgrid():
    class Head(nn.Module):
        def __init__(self, na=2, no=7):
            super().__init__()
            self.na, self.no = na, no
            self.c1, self.c2 = nn.Conv2d(3, 8, 3, 2, 1), nn.Conv2d(8, 8, 3, 2, 1)
            self.det = nn.Conv2d(16, na * no, 1)
            self.register_buffer("anchors", torch.tensor([[10.0, 13.0], [33.0, 23.0]]).view(
                1, na, 1, 1, 2))

        def forward(self, x):
            a = torch.relu(self.c1(x))
            b = torch.relu(self.c2(a))
            f = torch.cat([nn.functional.interpolate(b, scale_factor=2.0, mode="nearest"), a],
                          1)
            y = self.det(f)
            n, _, h, w = y.shape
            y = y.view(n, self.na, self.no, h, w).permute(0, 1, 3, 4, 2).sigmoid()
            gy, gx = torch.meshgrid(torch.arange(h), torch.arange(w), indexing="ij")
            grid = torch.stack((gx, gy), 2).view(1, 1, h, w, 2).float()
            xy = (y[..., :2] * 2 - 0.5 + grid) * 4
            wh = (y[..., 2:4] * 2) ** 2 * self.anchors
            return torch.cat((xy, wh, y[..., 4:]), -1).view(n, -1, self.no)

    torch.manual_seed(6)
    _run(Head(), _randn(1, 3, 16, 24))

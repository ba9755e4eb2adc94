"""The Relay PyTorch importers (TorchScript and torch.export) on the ops the sixteenth round
of new-user models found missing: ``take_along_dim`` (a Mixture-of-Depths router picking its
top-k rows, the indices broadcast against the input as torch does), ``rot90`` (a U-Net++
averaged over rotated inputs, test-time augmentation), ``count_nonzero`` (SASRec's last real
position in right-padded sequences), and ``masked_scatter`` (a VLM merging image features
into its token embeddings), which a probe of ops near the round's found missing too; checked
against eager with every kernel native, plus the errors for shapes torch itself refuses."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

from frontend_models import Fn  # noqa: E402
from frontend_models import check_both_importers as _check  # noqa: E402
from frontend_models import seeded_ints as _ints  # noqa: E402
from frontend_models import seeded_randn as _randn  # noqa: E402

from minitvm.frontend_common.torch_rot90 import rot90_plan  # noqa: E402
from minitvm.frontend_common.torch_take_along import take_along_plan  # noqa: E402
from minitvm.relay.frontend.common import ImportError_  # noqa: E402


@pytest.mark.parametrize("fn", [
    lambda x, i: torch.take_along_dim(x, i, 2),
    lambda x, i: torch.take_along_dim(x, i[:, :1, :3], -1),
    lambda x, i: torch.take_along_dim(x[:, :1], i, 2),
    lambda x, i: torch.take_along_dim(x, i[..., :1] * 2 - 3, 1),
    lambda x, i: torch.take_along_dim(x, i[0] * 5 + 7),
], ids=["same-shape", "broadcast-indices", "broadcast-input", "negative", "flattened"])
def test_take_along_dim(fn):
    _check(Fn(fn), _randn(2, 6, 8), _ints(4, 2, 6, 8))


def test_take_along_dim_router_rows():
    """Rows of a (batch, tokens, d) tensor at a top-k's sorted indices (``top_i[..., None]``:
    the index broadcast over the features)."""
    def fn(x, w):
        top = w.topk(3, -1)[1].sort(-1)[0]
        return torch.take_along_dim(x, top[..., None], 1)

    mod = _check(Fn(fn), _randn(2, 7, 5), _randn(2, 7, seed=1))
    assert "broadcast_to(" in mod.astext()


def test_take_along_dim_shapes_torch_refuses_are_refused():
    """(torch refuses these while tracing, so the plan both importers share is checked.)"""
    with pytest.raises(ImportError_, match="must have the same rank"):
        take_along_plan((2, 3), (2, 3, 1), 1, ImportError_)
    with pytest.raises(ImportError_, match="do not broadcast off dim 1"):
        take_along_plan((2, 3, 4), (3, 2, 4), 1, ImportError_)


@pytest.mark.parametrize("k,dims", [(1, (0, 1)), (2, (1, 2)), (3, (2, 1)), (-1, (-2, -1)),
                                    (4, (0, 2)), (5, (1, -1))])
def test_rot90(k, dims):
    _check(Fn(lambda x: torch.rot90(x, k, dims)), _randn(2, 3, 4))


def test_rot90_test_time_augmentation_round_trip():
    """A map averaged over the four rotations of its input, each rotated back."""
    class Averaged(torch.nn.Module):
        def __init__(self):
            super().__init__()
            torch.manual_seed(2)
            self.conv = torch.nn.Conv2d(2, 3, 3, padding=1)

        def forward(self, x):
            outs = [torch.rot90(self.conv(torch.rot90(x, k, (2, 3))), -k, (2, 3))
                    for k in range(4)]
            return torch.stack(outs).mean(0)

    mod = _check(Averaged(), _randn(1, 2, 5, 5), rtol=1e-5, atol=1e-5)
    assert "reverse(" in mod.astext()


def test_rot90_dims_torch_refuses_are_refused():
    """(torch refuses these while tracing, so the plan both importers share is checked.)"""
    with pytest.raises(ImportError_, match="name the same axis twice"):
        rot90_plan(3, 1, (1, -2), ImportError_)
    with pytest.raises(ImportError_, match="dims must name two axes"):
        rot90_plan(3, 1, (0,), ImportError_)


@pytest.mark.parametrize("fn", [
    lambda x: torch.count_nonzero(x),
    lambda x: torch.count_nonzero(x, 1),
    lambda x: torch.count_nonzero(x, (0, 2)),
    lambda x: torch.count_nonzero(x > 0, -1),
], ids=["all", "dim", "dims", "bool"])
def test_count_nonzero(fn):
    x = torch.relu(_randn(3, 4, 5))
    _check(Fn(fn), x)


def test_count_nonzero_picks_last_item_of_right_padded_sequences():
    """SASRec with right padding: the last real position is ``count_nonzero(seq, 1) - 1``."""
    def fn(seq, h):
        last = (torch.count_nonzero(seq, 1) - 1).clamp(min=0)
        return h.gather(1, last[:, None, None].expand(-1, 1, h.shape[-1])).squeeze(1)

    seq = _ints(9, 3, 6) + 1
    seq[0, 4:] = 0
    seq[1, 1:] = 0
    _check(Fn(fn), seq, _randn(3, 6, 4))


def test_masked_scatter_broadcast_mask():
    """A VLM writing projected image features over the embeddings of its image tokens (the
    mask one column wide, broadcast over the features)."""
    def fn(emb, ids, feats):
        return emb.masked_scatter((ids == 3)[..., None], feats)

    ids = _ints(5, 2, 7)
    ids[0, 1:4] = 3
    n = int((ids == 3).sum())
    _check(Fn(fn), _randn(2, 7, 4), ids, _randn(n + 2, 4, seed=1))


def test_masked_scatter_full_mask():
    mod = _check(Fn(lambda x: x.masked_scatter(x > 0, x.flip(0) * 10)), _randn(3, 4, 5))
    assert "cumsum(" in mod.astext()

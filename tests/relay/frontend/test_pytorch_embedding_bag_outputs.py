"""``aten::embedding_bag``'s four outputs through the PyTorch importer: besides the bags,
``offset2bag``, ``bag_size`` and ``max_indices`` as PyTorch's CPU kernel returns them, for sum,
mean and max, equal-length bags (2-D input), offsets with empty bags, include_last_offset,
padding_idx and int32 ids; each extra output is only computed where the model reads it."""

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the reference results come from `torch`")

from frontend_models import build_and_run  # noqa: E402

from minitvm import relay  # noqa: E402

_IDS = torch.tensor([3, 7, 7, 0, 29, 12, 3, 5, 8, 3, 1])
_OFF = torch.tensor([0, 2, 2, 6, 9])  # bag 1 is empty


class _AllOutputs(torch.nn.Module):
    def __init__(self, mode, include_last=False, padding_idx=None, outputs=(0, 1, 2, 3)):
        super().__init__()
        torch.manual_seed(0)
        self.w = torch.nn.Parameter(torch.randn(30, 5))
        self.mode, self.include_last, self.padding_idx = mode, include_last, padding_idx
        self.outputs = outputs

    def forward(self, ids, offsets):
        r = torch.embedding_bag(self.w, ids, offsets, False, self.mode, False, None,
                                self.include_last, self.padding_idx)
        return tuple(r[k] for k in self.outputs)


def _compare(model, ids, offsets):
    ids_np, off_np = ids.numpy(), offsets.numpy()
    traced = torch.jit.trace(model, (ids, offsets))
    infos = [("ids", (tuple(ids.shape), str(ids.dtype)[6:])),
             ("offsets", (tuple(offsets.shape), str(offsets.dtype)[6:]))]
    mod, params = relay.frontend.from_pytorch(traced, infos)
    got = build_and_run(mod, params, {"ids": ids_np, "offsets": off_np})
    with torch.no_grad():
        want = model(ids, offsets)
    want = (want,) if isinstance(want, torch.Tensor) else want
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.shape == tuple(w.shape) and g.dtype == w.numpy().dtype
        np.testing.assert_allclose(g, w.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("mode", [0, 1, 2])
@pytest.mark.parametrize("case", ["offsets", "include_last_offset", "padding_idx", "int32"])
def test_all_outputs_match_torch(mode, case):
    ids, off = _IDS, _OFF
    kw = {}
    if case == "include_last_offset":
        off, kw = torch.cat([off, torch.tensor([11])]), {"include_last": True}
    elif case == "padding_idx":
        kw = {"padding_idx": 3}
    elif case == "int32":
        ids, off = ids.int(), off.int()
    _compare(_AllOutputs(mode, **kw), ids, off)


@pytest.mark.parametrize("mode", [0, 1, 2])
def test_equal_length_bags(mode):
    ids = torch.tensor([4, 9, 4, 1, 0, 2, 2, 2, 7, 29, 11, 6])  # (3 bags of 4)
    _compare(_AllOutputs(mode), ids, torch.tensor([0, 4, 8]))


def test_max_ties_take_the_first_id():
    class Tied(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.tensor([[1.0, 1.0], [1.0, 0.0], [0.0, 1.0]]))

        def forward(self, ids, offsets):
            return torch.embedding_bag(self.w, ids, offsets, False, 2, False, None, False)[3]

    _compare(Tied(), torch.tensor([1, 0, 2, 2, 1]), torch.tensor([0, 3]))


def test_unread_outputs_are_not_computed():
    traced = torch.jit.trace(_AllOutputs(2, outputs=(0,)), (_IDS, _OFF))
    mod, _ = relay.frontend.from_pytorch(traced, [("ids", ((11,), "int64")),
                                                  ("offsets", ((5,), "int64"))])
    text = mod.astext()
    assert "argmax" not in text and "less_equal" not in text

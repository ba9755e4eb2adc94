"""The ATen gaps the eighth round of new-user models found, through both Relay PyTorch importers
(TorchScript and torch.export): a constant pad with negative widths, which crops (RWKV's token
shift ``F.pad(x, (0, 0, 1, -1))``), ``repeat_interleave`` (grouped-query attention's key/value
heads) and ``cumprod`` (NeRF's transmittance); built at opt_level 3 against eager PyTorch, every
kernel native, plus the errors of what stays unsupported."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

import torch.nn.functional as F  # noqa: E402
from frontend_models import Fn, check_both_importers  # noqa: E402
from frontend_models import seeded_randn as _randn  # noqa: E402

from minitvm import relay  # noqa: E402
from minitvm.relay.frontend import ImportError_  # noqa: E402


def _check(fn, *inputs, exported=True):
    """``fn`` through both importers, equal to eager (``check_both_importers``)."""
    return check_both_importers(Fn(fn), *inputs, exported=exported)


@pytest.mark.parametrize("pad", [
    (0, 0, 1, -1),        # RWKV's token shift: one step later in time, the last step dropped
    (-2, 1),              # crop the front, pad the back of one axis
    (-1, -2, 3, -1),      # crops on two axes and a pad
    (0, 0, -1, -1),       # only crops: no pad at all
])
def test_constant_pad_negative_crops(pad):
    _check(lambda x: F.pad(x, pad, value=0.5), _randn(2, 5, 6))


def test_constant_pad_negative_only_crop_has_no_pad():
    mod = _check(lambda x: F.pad(x, (-1, -1)), _randn(3, 7), exported=False)
    assert "nn.pad" not in mod.astext()


def test_negative_pad_in_reflect_mode_is_an_error():
    """torch itself refuses a negative reflect pad; the importer's converter says which mode."""
    from minitvm.relay.frontend.pytorch.aten_pad import _pad_expr

    class Ctx:
        op_name = "pad"

        @staticmethod
        def shape(e):
            return (2, 5)

        def fail(self, detail):
            return ImportError_(f"aten::pad: {detail}")

    x = relay.var("x", shape=(2, 5))
    with pytest.raises(ImportError_, match="negative padding.*'reflect'"):
        _pad_expr(Ctx(), x, [-1, 1], "reflect", None)


@pytest.mark.parametrize("name,fn", [
    ("int_dim1", lambda x: x.repeat_interleave(3, 1)),
    ("int_neg_dim", lambda x: torch.repeat_interleave(x, 2, dim=-1)),
    ("int_flat", lambda x: x.repeat_interleave(2)),
    ("gqa_heads", lambda x: x.view(1, 2, 3, 4).repeat_interleave(2, 1) * 2.0),
])
def test_repeat_interleave_int(name, fn):
    _check(fn, _randn(2, 3, 4))


def test_repeat_interleave_constant_tensor_repeats():
    """Per-slice repeats held by the model: a take of the repeated indices (TorchScript)."""
    reps = torch.tensor([1, 0, 3])
    mod = _check(lambda x: x.repeat_interleave(reps, dim=0) + 1.0, _randn(3, 4), exported=False)
    assert "take" in mod.astext()


def test_repeat_interleave_data_dependent_repeats_is_an_error():
    model = Fn(lambda x, r: x.repeat_interleave(r, dim=0)).eval()
    x, r = _randn(3, 2), torch.tensor([1, 2, 1])
    traced = torch.jit.trace(model, (x, r))
    with pytest.raises(ImportError_, match="data-dependent shape"):
        relay.frontend.from_pytorch(traced, [("x", ((3, 2), "float32")), ("r", ((3,), "int64"))])


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cumprod_float(dim):
    _check(lambda x: torch.cumprod(x, dim), _randn(3, 4, 5) * 0.5 + 1.0)


def test_cumprod_int_accumulates_in_int64():
    """torch multiplies int32 (and bool) inputs in int64, as it sums them."""
    x = torch.from_numpy(np.random.default_rng(3).integers(-3, 4, (4, 6)).astype("int32"))
    _check(lambda x: torch.cumprod(x, 1), x)


def test_nerf_exclusive_transmittance():
    """NeRF's transmittance: an exclusive cumprod of (1 - alpha), the ones column prepended."""
    def fn(sigma):
        alpha = 1 - torch.exp(-torch.relu(sigma) * 0.1)
        t = torch.cumprod(torch.cat([torch.ones_like(alpha[:, :1]), 1 - alpha + 1e-10], -1), -1)
        return alpha * t[:, :-1]

    _check(fn, _randn(8, 16) * 3)

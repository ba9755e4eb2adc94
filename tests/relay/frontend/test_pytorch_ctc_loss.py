"""``torch.nn.functional.ctc_loss`` through from_pytorch (TorchScript; torch.export cannot
trace ATen's ``_ctc_loss``, whose output shape it takes as data-dependent): the CTC kernel
``nn.ctc_log_alpha`` and ``frontend_common.torch_ctc`` against eager for every reduction,
padded and concatenated targets, repeated labels, a nonzero blank, ``zero_infinity`` on an
impossible alignment, an unbatched input and ``_ctc_loss``'s table."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

from frontend_models import Fn, build_and_run  # noqa: E402

from minitvm import relay  # noqa: E402

F = torch.nn.functional


def _inputs(frames=12, batch=3, classes=6, longest=4, seed=0):
    gen = torch.Generator().manual_seed(seed)
    log_probs = torch.randn(frames, batch, classes, generator=gen).log_softmax(2)
    targets = torch.randint(1, classes, (batch, longest), generator=gen)
    targets[0, 1] = targets[0, 0]  # a repeated label needs a blank between its copies
    input_lengths = torch.tensor([frames, frames - 2, frames - 5][:batch])
    target_lengths = torch.tensor([longest, 2, 3][:batch])
    return log_probs, targets, input_lengths, target_lengths


def _run(fn, *xs):
    model = Fn(fn).eval()
    with torch.no_grad():
        ref = model(*xs)
        traced = torch.jit.trace(model, xs)
    ref = [r.numpy() for r in (ref if isinstance(ref, tuple) else (ref,))]
    infos = [(f"x{i}", (tuple(x.shape), str(x.dtype).replace("torch.", "")))
             for i, x in enumerate(xs)]
    mod, params = relay.frontend.from_pytorch(traced, infos)
    out = build_and_run(mod, params, {f"x{i}": x.numpy() for i, x in enumerate(xs)})
    assert len(out) == len(ref)
    return out, ref


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("concatenated", [False, True], ids=["padded", "concatenated"])
def test_ctc_loss_matches_eager(reduction, concatenated):
    log_probs, targets, il, tl = _inputs()
    if concatenated:
        targets = torch.cat([targets[n, :tl[n]] for n in range(len(tl))])
    out, ref = _run(lambda lp, tg, il, tl: F.ctc_loss(lp, tg, il, tl, reduction=reduction),
                    log_probs, targets, il, tl)
    assert out[0].shape == ref[0].shape and out[0].dtype == ref[0].dtype
    np.testing.assert_allclose(out[0], ref[0], rtol=1e-5)


def test_blank_zero_infinity_unbatched_and_the_table():
    """Blank 5 (labels 0-4); a sample whose 4 labels cannot fit in 3 frames (inf, or 0 with
    zero_infinity); one unbatched (T, C) sample; ATen's ``_ctc_loss`` (loss and log_alpha,
    compared where torch's table is finite: it leaves the rest unspecified)."""
    log_probs, targets, il, tl = _inputs(seed=1)
    targets = targets - 1
    il = torch.tensor([12, 3, 9])
    tl = torch.tensor([4, 4, 1])

    def fn(lp, tg, il, tl):
        kept = F.ctc_loss(lp, tg, il, tl, blank=5, reduction="none")
        zeroed = F.ctc_loss(lp, tg, il, tl, blank=5, reduction="sum", zero_infinity=True)
        single = F.ctc_loss(lp[:, 0], tg[0], il[:1], tl[:1], blank=5, reduction="none")
        nll, alpha = torch.ops.aten._ctc_loss.Tensor(lp, tg, il, tl, 5)
        return kept, zeroed, single, nll, alpha

    out, ref = _run(fn, log_probs, targets, il, tl)
    assert np.isinf(ref[0][1]) and np.isinf(out[0][1])
    for o, r in zip(out[:4], ref[:4], strict=True):
        assert o.shape == r.shape
        np.testing.assert_allclose(o, r, rtol=1e-5)
    alpha, ref_alpha = out[4], ref[4]
    assert alpha.shape == (3, 12, 9) and ref_alpha.shape == (3, 12, 9)
    for n in range(3):
        used = ref_alpha[n, :il[n], :2 * tl[n] + 1]
        np.testing.assert_allclose(alpha[n, :il[n], :2 * tl[n] + 1], used, rtol=1e-5,
                                   atol=1e-5)

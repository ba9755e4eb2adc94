"""nn.nll_loss, nn.cross_entropy(_with_logits), nn.fifo_buffer: types, numerics against direct
definitions (and PyTorch's nll_loss where installed), text round trip and relay.build."""

import numpy as np
import pytest
from relay_op_check import _type, run

from minitvm import relay
from minitvm.topi import testing as tt

RNG = np.random.default_rng(4)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_nll_loss(reduction):
    pred = np.log(RNG.dirichlet(np.ones(4), size=(3, 2))).transpose(0, 2, 1).astype("float32")
    tgt = np.array([[0, 3], [2, -100], [1, 1]], "int32")
    w = RNG.uniform(0.5, 2, 4).astype("float32")
    got = run(lambda p, t, ww: relay.nn.nll_loss(p, t, ww, reduction), pred, tgt, w)
    losses = np.zeros((3, 2))
    total = 0.0
    for n in range(3):
        for d in range(2):
            c = tgt[n, d]
            if c != -100:
                losses[n, d] = -pred[n, c, d] * w[c]
                total += w[c]
    want = {"none": losses, "sum": losses.sum(), "mean": losses.sum() / total}[reduction]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(tt.nll_loss(pred, tgt, w, reduction), got, rtol=1e-6)


def test_nll_loss_matches_torch_and_errors():
    torch = pytest.importorskip("torch")
    pred = RNG.standard_normal((5, 3)).astype("float32")
    tgt = np.array([0, 2, 1, 2, 0], "int64")
    w = RNG.uniform(0.5, 2, 3).astype("float32")
    got = run(lambda p, t, ww: relay.nn.nll_loss(p, t, ww), pred, tgt, w)
    want = torch.nn.functional.nll_loss(torch.from_numpy(pred), torch.from_numpy(tgt),
                                        torch.from_numpy(w)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5)
    with pytest.raises(Exception, match="nn.nll_loss: weights .* must have one entry per class"):
        _type(lambda p, t, ww: relay.nn.nll_loss(p, relay.cast(t, "int32"), ww), (5, 3), (5,),
              (4,))


def test_cross_entropy():
    p = RNG.dirichlet(np.ones(5), size=4).astype("float32")
    y = np.eye(5, dtype="float32")[[0, 3, 1, 1]]
    got = run(relay.nn.cross_entropy, p, y)
    np.testing.assert_allclose(got, -np.log(p[np.arange(4), [0, 3, 1, 1]]).mean(), rtol=1e-5)
    got = run(relay.nn.cross_entropy_with_logits, np.log(p), y)
    np.testing.assert_allclose(got, -np.log(p[np.arange(4), [0, 3, 1, 1]]).mean(), rtol=1e-5)
    assert tuple(_type(relay.nn.cross_entropy, (4, 5), (4, 5)).shape) == ()
    with pytest.raises(Exception, match="nn.cross_entropy_with_logits: predictions and targets"):
        _type(relay.nn.cross_entropy_with_logits, (4, 5), (4, 6))


def test_fifo_buffer():
    buf = RNG.standard_normal((2, 5, 3)).astype("float32")
    x = RNG.standard_normal((2, 2, 3)).astype("float32")
    got = run(lambda d, b: relay.nn.fifo_buffer(d, b, axis=1), x, buf)
    np.testing.assert_array_equal(got, np.concatenate([buf[:, 2:], x], axis=1))
    with pytest.raises(Exception, match="nn.fifo_buffer: data .* differ outside axis 1"):
        _type(lambda d, b: relay.nn.fifo_buffer(d, b, axis=1), (2, 2, 4), (2, 5, 3))

"""``nn.avg_pool3d`` without padding (PyTorch's LocalResponseNorm pools a padded square this
way): a plain window sum divided by the constant window size, no masks and no count stage;
against PyTorch for strides, dilation, batch > 1 and odd sizes; padded pools keep the masked
form."""

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the reference results come from `torch`")

from relay_build import build_run  # noqa: E402

from minitvm import relay, te  # noqa: E402
from minitvm.ir.type import TensorType  # noqa: E402
from minitvm.topi.utils import get_compute  # noqa: E402


@pytest.mark.parametrize("shape, pool, strides, dilation", [
    ((2, 3, 9, 7, 5), (5, 1, 1), (1, 1, 1), (1, 1, 1)),
    ((1, 2, 7, 9, 11), (2, 3, 2), (2, 2, 3), (1, 1, 1)),
    ((3, 1, 8, 6, 6), (3, 2, 2), (1, 2, 1), (2, 1, 2)),
])
def test_unpadded_matches_torch(shape, pool, strides, dilation):
    data = np.random.default_rng(0).standard_normal(shape).astype("float32")
    (got,), kinds = build_run(lambda x: relay.nn.avg_pool3d(x, pool, strides, dilation), data)
    assert kinds == ["native"]
    if dilation == (1, 1, 1):
        want = torch.nn.functional.avg_pool3d(torch.from_numpy(data), pool, strides).numpy()
    else:  # (torch's avg_pool3d has no dilation: the window's taps summed by hand)
        out = got.shape[2:]
        want = np.zeros((*shape[:2], *out), "float64")
        for i in np.ndindex(*pool):
            sl = tuple(slice(k * d, k * d + (o - 1) * s + 1, s)
                       for k, d, o, s in zip(i, dilation, out, strides, strict=True))
            want += data[(slice(None), slice(None), *sl)]
        want /= np.prod(pool)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


class _Attrs:
    layout, count_include_pad = "NCDHW", False

    def __init__(self, padding, strides=(1, 1, 1), ceil_mode=False):
        self.pool_size, self.strides, self.dilation, self.padding, self.ceil_mode = \
            (3, 3, 3), strides, (1, 1, 1), padding, ceil_mode


def _stage_names(t):
    seen, stack, out = set(), [t], []
    while stack:
        s = stack.pop()
        if id(s) not in seen:
            seen.add(id(s))
            out.append(s.op.name)
            stack.extend(getattr(s.op, "input_tensors", []))
    return out


def test_count_stage_only_when_padded():
    x = te.placeholder((1, 2, 5, 5, 5), name="x")
    plain = get_compute("nn.avg_pool3d")(_Attrs((0, 0, 0)), [x],
                                         TensorType((1, 2, 3, 3, 3), "float32"))[0]
    padded = get_compute("nn.avg_pool3d")(_Attrs((1, 1, 1)), [x],
                                          TensorType((1, 2, 5, 5, 5), "float32"))[0]
    assert "avg_pool3d_count" not in _stage_names(plain)
    assert "avg_pool3d_count" in _stage_names(padded)
    x6 = te.placeholder((1, 2, 6, 6, 6), name="x6")
    ceil = get_compute("nn.avg_pool3d")(_Attrs((0, 0, 0), (2, 2, 2), True), [x6],
                                        TensorType((1, 2, 3, 3, 3), "float32"))[0]
    assert "avg_pool3d_count" in _stage_names(ceil)  # (its last windows reach past the input)


def test_ceil_mode_matches_torch():
    data = np.random.default_rng(1).standard_normal((2, 2, 5, 7, 5)).astype("float32")
    (got,), _ = build_run(lambda x: relay.nn.avg_pool3d(x, (2, 3, 2), (2, 2, 2), ceil_mode=True),
                          data)
    want = torch.nn.functional.avg_pool3d(torch.from_numpy(data), (2, 3, 2), 2,
                                          ceil_mode=True).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)

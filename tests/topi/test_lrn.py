"""``nn.lrn`` lowered natively (``topi.lrn``): Relay builds it with no numpy kernel, against
PyTorch's LocalResponseNorm (odd and even window sizes, batch > 1, odd sizes) and the numpy
reference over another axis and in float64; a bad size is a clear error."""

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the reference results come from `torch`")

from relay_build import build_run  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relay, te  # noqa: E402
from minitvm.topi.lrn import lrn  # noqa: E402


@pytest.mark.parametrize("shape, size, alpha, beta, bias", [
    ((2, 7, 5, 9), 5, 1e-4, 0.75, 1.0),
    ((1, 6, 3, 17), 4, 2e-2, 0.5, 2.0),
    ((3, 3, 4, 4), 7, 1e-1, 1.3, 0.7),
    ((1, 1, 2, 3), 1, 1.0, 2.0, 1.0),
])
def test_matches_torch(shape, size, alpha, beta, bias):
    data = (np.random.default_rng(0).standard_normal(shape) * 3).astype("float32")
    (out,), kinds = build_run(
        lambda x: relay.nn.lrn(x, size=size, axis=1, alpha=alpha, beta=beta, bias=bias), data)
    assert kinds == ["native"]
    want = torch.nn.functional.local_response_norm(torch.from_numpy(data), size, alpha, beta,
                                                   bias).numpy()
    np.testing.assert_allclose(out, want, rtol=2e-5, atol=1e-6)


@pytest.mark.parametrize("dtype, axis", [("float32", 3), ("float32", -2), ("float64", 1)])
def test_other_axes_and_float64_match_reference(dtype, axis):
    data = np.random.default_rng(1).standard_normal((2, 5, 6, 7)).astype(dtype)
    def fn(v):
        return relay.nn.lrn(v, size=3, axis=axis, alpha=0.1, beta=0.75, bias=1.5)

    (out,), kinds = build_run(fn, data)
    assert kinds == ["native"]
    x = relay.var("x", shape=data.shape, dtype=dtype)
    want = relay.create_executor("debug", mod=tvm.IRModule.from_expr(
        relay.Function([x], fn(x)))).evaluate()(data).numpy()
    np.testing.assert_allclose(out, want, rtol=1e-5 if dtype == "float32" else 1e-12)


def test_bad_size():
    with pytest.raises(ValueError, match="size must be positive"):
        lrn(te.placeholder((1, 4, 2, 2)), 0, 1, 1e-4, 0.75, 1.0)

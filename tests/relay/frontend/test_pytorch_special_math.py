"""relay.frontend.from_pytorch on elementwise maths found missing while probing ops near round
17's objectives: ``logaddexp`` (equal infinities, far-apart operands), ``xlogy`` (0 log 0, NaN
y), ``special.entr`` (0, negatives, NaN), ``logit`` (with and without eps, integer input),
``sinc`` (at 0) and ``copysign`` (a -0.0 sign); built native, compared with eager (NaN where
eager's is NaN)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

from frontend_models import Fn, build_run_native  # noqa: E402

from minitvm import relay  # noqa: E402

_SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, 1e-30, 40.0, -40.0, float("inf"), float("-inf"),
            float("nan"), 3.0, -2.5, 1e-7]


def _pairs():
    a = torch.tensor(_SPECIAL)
    return a.repeat_interleave(len(_SPECIAL)), a.repeat(len(_SPECIAL))


def _check(fn, *inputs):
    with torch.no_grad():
        ref = fn(*inputs).numpy()
        traced = torch.jit.trace(Fn(fn), inputs)
    infos = [(f"i{k}", (tuple(t.shape), str(t.dtype).replace("torch.", "")))
             for k, t in enumerate(inputs)]
    mod, params = relay.frontend.from_pytorch(traced, infos)
    out = build_run_native(mod, params, [n for n, _ in infos], inputs)
    assert out.dtype == ref.dtype
    np.testing.assert_allclose(out, ref, rtol=1e-6, atol=1e-7, equal_nan=True)


def test_logaddexp_xlogy_copysign_special_pairs():
    a, b = _pairs()
    _check(lambda x, y: torch.stack([torch.logaddexp(x, y), torch.xlogy(x, y),
                                     torch.copysign(x, y)]), a, b)


def test_entr_sinc_logit_special_values():
    x = torch.tensor(_SPECIAL + [0.25, 0.999, 0.001])
    _check(lambda v: torch.stack([torch.special.entr(v), torch.sinc(v), torch.logit(v),
                                  torch.logit(v, eps=1e-3)]), x)


def test_integer_operands_promote():
    i = torch.arange(-3, 4)
    _check(lambda v: torch.stack([torch.logit(v), torch.sinc(v), torch.xlogy(v, v + 4),
                                  torch.copysign(v, -v), torch.logaddexp(v, v * 0.5)]), i)

"""``torch.where`` with Python-number branches through relay.frontend.from_pytorch: two numbers
(an additive attention mask ``torch.where(keep, 0.0, -1e9)``, an int pair) take torch's
default dtype of their kind, and a float number against an integer tensor lifts the result to
float32; each built natively and compared with eager, dtype included."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

from frontend_models import Fn, compare_traced  # noqa: E402

from minitvm import relay  # noqa: E402


def _check(fn, *inputs):
    with torch.no_grad():
        ref = fn(*inputs)
        traced = torch.jit.trace(Fn(fn), inputs)
    lib = compare_traced(traced, inputs, ref.numpy(), 0, 0)
    assert [k for k, v in lib.get_lib().kernels.items() if v.kind != "native"] == []
    mod, _ = relay.frontend.from_pytorch(traced, [(f"i{i}", (tuple(t.shape), str(t.dtype)[6:]))
                                                  for i, t in enumerate(inputs)])
    assert mod["main"].checked_type.ret_type.dtype == str(ref.dtype)[6:]


@pytest.mark.parametrize("a, b", [(0.0, -1e9), (1, 0), (2, -0.5)])
def test_where_of_two_numbers_takes_torch_default_dtype(a, b):
    keep = torch.tensor([[True, False, True], [False, False, True]])
    _check(lambda k: torch.where(k, a, b), keep)


def test_where_float_number_lifts_an_int_tensor():
    x = torch.tensor([[3, -1, 4], [1, -5, 9]])
    _check(lambda v: torch.where(v > 0, v, 0.5), x)
    _check(lambda v: torch.where(v > 0, 2, v), x)

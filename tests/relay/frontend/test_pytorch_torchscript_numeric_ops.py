"""ATen calls TorchScript keeps that torch.export decomposes (so from_pytorch refused them with
OpNotImplemented while from_exported_program took them): ``addcmul`` / ``addcdiv``, ``nanmean``,
``kron``, ``linalg.matrix_norm``, ``frac``, ``heaviside``, ``mvlgamma``, ``movedim`` /
``moveaxis``, ``tensor_split``, ``float_power``, ``isin``, ``logaddexp2`` and ``linalg.cross`` /
``cross``. Each through
from_pytorch and the Relay torch.export importer, built native, equal to eager (NaNs and
infinities at the same places)."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

from frontend_models import Fn, build_run_native  # noqa: E402
from frontend_models import check_both_importers as _check  # noqa: E402
from frontend_models import seeded_randn as _randn  # noqa: E402

from minitvm import relay  # noqa: E402


def _with_specials(*shape):
    x = _randn(*shape) * 3
    flat = x.view(-1)
    flat[:6] = torch.tensor([0.0, -0.0, float("inf"), float("-inf"), float("nan"), -2.0])
    return x


def _converts(fn, *inputs, rtol=1e-6, atol=1e-6):
    mod = _check(Fn(fn), *inputs, rtol=rtol, atol=atol)
    return mod.astext()


def test_addcmul_addcdiv_with_value():
    a, b, c = _randn(3, 5), _randn(3, 5, seed=1), _randn(5, seed=2).abs() + 0.5
    _converts(lambda x, y, z: torch.addcmul(x, y, z, value=-0.25), a, b, c)
    _converts(lambda x, y, z: torch.addcdiv(x, y, z, value=2.0), a, b, c)
    _converts(lambda x, y, z: torch.addcdiv(x, y, z), a, b, c)


@pytest.mark.parametrize("dim, keep", [(1, False), ((0, 2), True), (None, False)])
def test_nanmean_skips_nans(dim, keep):
    """A row of NaNs only gives NaN (0 / 0), as torch's."""
    x = _randn(3, 4, 5)
    x[0, 1] = float("nan")
    x[1, :, 2] = float("nan")
    x[2, 0, 0] = float("nan")
    if dim is None:
        _converts(lambda v: torch.nanmean(v), x)
    else:
        _converts(lambda v: torch.nanmean(v, dim, keepdim=keep), x)


@pytest.mark.parametrize("sa, sb", [((2, 3), (4, 5)), ((2, 3), (4,)), ((3,), (2, 2, 2))])
def test_kron_block_products(sa, sb):
    text = _converts(torch.kron, _randn(*sa), _randn(*sb, seed=1))
    assert "multiply" in text


@pytest.mark.parametrize("order", ["fro", 1, -1, math.inf, -math.inf])
@pytest.mark.parametrize("keep", [False, True])
def test_matrix_norm_orders(order, keep):
    _converts(lambda v: torch.linalg.matrix_norm(v, order, keepdim=keep), _randn(2, 4, 6),
              rtol=1e-5)


def test_matrix_norm_spectral_refused_by_name():
    traced = torch.jit.trace(Fn(lambda v: torch.linalg.matrix_norm(v, 2)), (_randn(3, 3),))
    with pytest.raises(Exception, match="singular values"):
        relay.frontend.from_pytorch(traced, [("i0", ((3, 3), "float32"))])


def test_frac_and_heaviside_special_values():
    x = _with_specials(4, 6)
    _converts(torch.frac, x)
    _converts(lambda v, w: torch.heaviside(v, w), x, _randn(6, seed=3))


def test_mvlgamma_order_three():
    x = _randn(4, 5).abs() * 4 + 1.01
    _converts(lambda v: torch.special.multigammaln(v, 3), x, rtol=1e-6, atol=1e-5)


def test_movedim_and_moveaxis():
    x = _randn(2, 3, 4, 5)
    _converts(lambda v: torch.movedim(v, (0, 1), (3, 0)), x)
    _converts(lambda v: torch.moveaxis(v, -1, 1), x)


@pytest.mark.parametrize("how", [3, [1, 5], [-3, 20]], ids=["sections", "indices", "clamped"])
def test_tensor_split_pieces(how):
    x = _randn(4, 8)
    for k in range(3):
        _converts(lambda v, k=k: torch.tensor_split(v, how, dim=1)[k] * 2, x)


def test_float_power_is_float64():
    _converts(lambda v: torch.float_power(v.abs(), 1.5), _randn(3, 4))


def test_isin_tensor_and_number():
    x = torch.arange(12).reshape(3, 4) % 7
    _converts(lambda v, t: torch.isin(v, t), x, torch.tensor([[1, 3], [5, 9]]))
    _converts(lambda v, t: torch.isin(v, t, invert=True), x, torch.tensor([0, 2]))


def test_logaddexp2_with_infinities():
    a, b = _with_specials(3, 8), _with_specials(3, 8).flip(1)
    _converts(torch.logaddexp2, a, b)


@pytest.mark.parametrize("sa, sb, dim", [((4, 3), (4, 3), -1), ((2, 3, 5), (1, 3, 1), 1),
                                         ((1, 3, 4), (2, 3, 4), 1)])
def test_linalg_cross_broadcast_any_axis(sa, sb, dim):
    """linalg.cross (the mesh net's face normals): the operands broadcast, any size-3 axis;
    the IR is slices and products, no gather."""
    text = _converts(lambda a, b: torch.linalg.cross(a, b, dim=dim), _randn(*sa),
                     _randn(*sb, seed=1), rtol=1e-5)
    assert "strided_slice" in text and "take" not in text


def test_cross_without_dim_takes_first_axis_of_size_3():
    a, b = _randn(2, 3, 3), _randn(2, 3, 3, seed=1)
    traced = torch.jit.trace(Fn(lambda x, y: torch.cross(x, y, dim=None)), (a, b))
    mod, params = relay.frontend.from_pytorch(traced, [("i0", ((2, 3, 3), "float32")),
                                                       ("i1", ((2, 3, 3), "float32"))])
    ref = torch.linalg.cross(a, b, dim=1).numpy()
    out = build_run_native(mod, params, ["i0", "i1"], (a, b))
    assert abs(out - ref).max() < 1e-5


def test_cross_names_an_axis_not_of_size_3():
    """Traced on (3, 4) operands, imported at (4, 3): axis 0 no longer has size 3."""
    traced = torch.jit.trace(Fn(lambda x, y: torch.linalg.cross(x, y, dim=0)),
                             (_randn(3, 4), _randn(3, 4, seed=1)))
    with pytest.raises(Exception, match="has size 4, not 3"):
        relay.frontend.from_pytorch(traced, [("i0", ((4, 3), "float32")),
                                             ("i1", ((4, 3), "float32"))])

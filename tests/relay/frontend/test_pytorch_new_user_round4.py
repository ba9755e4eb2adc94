"""The fourth round of new-user architectures through relay.frontend.from_pytorch: the boolean
and bitwise operators (``~mask`` of a T5 padding mask, ``&`` / ``|`` / ``^``, ``logical_*``),
and the transposed convolution of a 1x1 input (a GAN generator's first layer) imported as one
dense, each checked against eager PyTorch with every kernel native."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

from frontend_models import Fn, compare_traced  # noqa: E402
from torch import nn  # noqa: E402

from minitvm import relay  # noqa: E402


def _run(model, *inputs, rtol=1e-5, atol=1e-5):
    model = model.eval()
    with torch.no_grad():
        ref = model(*inputs).numpy()
        traced = torch.jit.trace(model, inputs)
    lib = compare_traced(traced, inputs, ref, rtol, atol)
    assert [k for k, v in lib.get_lib().kernels.items() if v.kind != "native"] == []
    return ref


def _mask(*shape, seed=0):
    return torch.from_numpy(np.random.default_rng(seed).random(shape) > 0.5)


def _ints(*shape, seed=0):
    return torch.from_numpy(np.random.default_rng(seed).integers(-50, 50, shape))


def _inplace_and(a, b):
    a = a.clone()
    a &= b
    return a


_LOGIC = {
    "not_bool": (lambda a, b: ~a, "bb"),
    "not_int": (lambda a, b: ~a, "ii"),
    "and_bool": (lambda a, b: a & b, "bb"),
    "or_xor_bool": (lambda a, b: (a | b) ^ (a & b), "bb"),
    "xor_bool": (lambda a, b: a ^ b, "bb"),
    "and_int": (lambda a, b: a & b, "ii"),
    "or_int_scalar": (lambda a, b: (a | 6) ^ b, "ii"),
    "bool_and_int": (lambda a, b: a & b, "bi"),
    "bitwise_fns": (lambda a, b: torch.bitwise_xor(torch.bitwise_or(a, b), torch.bitwise_and(a, 5)),
                    "ii"),
    "inplace_and": (_inplace_and, "bb"),
    "logical_and_int": (lambda a, b: torch.logical_and(a, b), "ii"),
    "logical_or_mixed": (lambda a, b: torch.logical_or(a, b), "bi"),
    "logical_xor_bool": (lambda a, b: torch.logical_xor(a, b), "bb"),
    "mask_fill_by_not": (lambda a, b: b.masked_fill(~a, -1), "bi"),
}


@pytest.mark.parametrize("name", list(_LOGIC))
def test_boolean_and_bitwise_operators(name):
    fn, kinds = _LOGIC[name]
    make = {"b": _mask, "i": _ints}
    a, b = (make[k](3, 7, seed=s) for k, s in zip(kinds, (0, 1), strict=True))
    ref = _run(Fn(fn), a, b)
    assert ref.dtype == fn(a, b).numpy().dtype


def test_logical_ops_of_floats_give_bool():
    x = torch.tensor([[0.0, 1.5, -2.0], [0.0, 0.0, 3.0]])
    y = torch.tensor([[1.0, 0.0, -1.0], [0.0, 2.0, 0.0]])
    _run(Fn(lambda a, b: torch.logical_xor(a, b) | torch.logical_and(a, b)), x, y)


def test_t5_padding_mask_bias():
    """T5's encoder: a bool padding mask inverted into an additive attention bias."""
    mask = torch.ones(2, 9, dtype=torch.bool)
    mask[1, 5:] = False
    scores = torch.randn(2, 3, 9, 9)
    _run(Fn(lambda s, m: torch.softmax(s + (~m)[:, None, None, :].float() * -1e9, -1)),
         scores, mask)


@pytest.mark.parametrize("cin,cout,k,stride,bias", [
    (16, 32, 4, 1, False),     # DCGAN's first layer
    (8, 6, (3, 5), 2, True),   # the stride does not matter for one input pixel
    (4, 3, 2, 1, True),
])
@pytest.mark.parametrize("batch", [1, 3])
def test_conv_transpose_of_a_1x1_input_is_a_dense(cin, cout, k, stride, bias, batch):
    torch.manual_seed(0)
    model = nn.ConvTranspose2d(cin, cout, k, stride, bias=bias)
    x = torch.randn(batch, cin, 1, 1)
    _run(model, x)
    traced = torch.jit.trace(model.eval(), (x,))
    mod, _ = relay.frontend.from_pytorch(traced, [("i0", (tuple(x.shape), "float32"))])
    text = mod.astext() if hasattr(mod, "astext") else str(mod)
    assert "nn.dense" in text and "conv2d_transpose" not in text


def test_conv_transpose_3d_and_1d_of_a_unit_input():
    torch.manual_seed(1)
    _run(nn.ConvTranspose3d(4, 5, (2, 3, 2)), torch.randn(2, 4, 1, 1, 1))
    _run(nn.ConvTranspose1d(4, 5, 3), torch.randn(2, 4, 1))


@pytest.mark.parametrize("kw", [{"padding": 1}, {"groups": 2}, {"dilation": 2},
                                {"stride": 2, "output_padding": 1}])
def test_conv_transpose_of_a_1x1_input_keeps_the_conv_when_it_must(kw):
    torch.manual_seed(2)
    _run(nn.ConvTranspose2d(4, 6, 3, **kw), torch.randn(2, 4, 1, 1))


@pytest.mark.parametrize("s1,s2,mode,p,by_mm", [
    ((2, 30, 8), (2, 40, 8), "use_mm_for_euclid_dist_if_necessary", 2.0, True),
    ((64, 16), (50, 16), "use_mm_for_euclid_dist_if_necessary", 2.0, True),
    ((10, 4), (12, 4), "use_mm_for_euclid_dist_if_necessary", 2.0, False),  # few rows
    ((3, 10, 4), (3, 12, 4), "use_mm_for_euclid_dist", 2.0, True),
    ((2, 30, 8), (2, 40, 8), "donot_use_mm_for_euclid_dist", 2.0, False),
    ((2, 30, 8), (2, 40, 8), "use_mm_for_euclid_dist_if_necessary", 1.0, False),
    ((1, 30, 8), (2, 40, 8), "use_mm_for_euclid_dist_if_necessary", 2.0, False),  # broadcast
])
def test_cdist_by_matrix_product_where_torch_uses_one(s1, s2, mode, p, by_mm):
    """A Siamese net's patch distances: torch computes a Euclidean cdist of many rows by a
    matrix product, and so does the import (one batch_matmul / dense), else the differences."""
    g = torch.Generator().manual_seed(3)
    x1, x2 = torch.randn(*s1, generator=g), torch.randn(*s2, generator=g)
    # equal rows: zero distances, where the product form's cancellation (torch's too) leaves
    # a square root of rounding noise (about 1e-3), and the clamp keeps it from a NaN
    x2[..., :3, :] = x1[..., :3, :]
    model = Fn(lambda a, b: torch.cdist(a, b, p=p, compute_mode=mode))
    _run(model, x1, x2, rtol=1e-4, atol=3e-3 if by_mm else 1e-4)
    traced = torch.jit.trace(model, (x1, x2))
    mod, _ = relay.frontend.from_pytorch(traced, [("i0", (s1, "float32")),
                                                  ("i1", (s2, "float32"))])
    text = mod.astext() if hasattr(mod, "astext") else str(mod)
    assert ("batch_matmul" in text or "nn.dense" in text) == by_mm


_IDX = torch.tensor([2, 0, 3])
_NEG = torch.tensor([-1, 1, -4])
_INDEXING = {
    "clip_eot_pool": lambda x: x[torch.arange(x.shape[0]), x[..., 0].argmax(-1)],
    "one_tensor": lambda x: x[_IDX],
    "negative": lambda x: x[_NEG, _IDX],
    "three_axes": lambda x: x[_IDX, _NEG, torch.tensor([1, 1, 0])],
    "broadcast": lambda x: x[torch.tensor([[0], [3]]), torch.tensor([1, 2, 0])],
    "after_a_slice": lambda x: x[:, _IDX, torch.tensor([4, 0, 2])],
    "apart": lambda x: x[_IDX, :, torch.tensor([4, 0, 2])],
}


@pytest.mark.parametrize("name", list(_INDEXING))
def test_advanced_indexing_is_a_native_take(name):
    """Integer-tensor indexing (CLIP's ``x[arange(b), ids.argmax(-1)]``) imports as one
    ``take`` of flattened rows: every kernel native, the fused ops before it too."""
    x = torch.from_numpy(np.random.default_rng(4).standard_normal((4, 5, 6)).astype("float32"))
    _run(Fn(lambda v: _INDEXING[name](torch.nn.functional.layer_norm(v, (6,)))), x)

"""The Relay PyTorch importers (TorchScript and torch.export) on three patterns the thirteenth
round of new-user models brought: Hugging Face's static KV cache writes
``k_cache.index_copy_(2, cache_position, k)`` and ``v_cache[:, :, cache_position] = v`` (an
index put through sliced leading axes, ``frontend_common.index_put_plan``), and AWQ / GPTQ
checkpoints unpack 4-bit weights with ``(q >> 4) & 0xF`` (``frontend_common.bit_shift``:
amounts outside [0, bits) shift every bit out, as torch does). Each is built strict-native and
compared with eager; the Relax importer's test is
``tests/relax/frontend/test_relax_torch_sliced_put_shifts.py``."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

from frontend_models import check_both_importers  # noqa: E402
from frontend_models import seeded_randn as _randn  # noqa: E402
from torch import nn  # noqa: E402


class CacheWrite(nn.Module):
    """A static cache updated at ``pos`` both ways, then read (the attention's use)."""

    def forward(self, k_cache, v_cache, k, v, pos):
        k_cache = k_cache.clone()
        k_cache.index_copy_(2, pos, k)
        v_cache = v_cache.clone()
        v_cache[:, :, pos] = v
        return k_cache * 2.0 + v_cache


class ApartPut(nn.Module):
    """Index tensors on axes 1 and 3, a slice between: the indexed dims lead the values."""

    def forward(self, x, v):
        x = x.clone()
        x[:, torch.tensor([2, 0]), :, torch.tensor([1, 3])] = v
        return x


class Unpack(nn.Module):
    """AWQ's nibbles: low and high 4 bits of packed uint8 weights, dequantized."""

    def __init__(self):
        super().__init__()
        g = torch.Generator().manual_seed(0)
        self.register_buffer("q", torch.randint(0, 256, (6, 4), generator=g, dtype=torch.uint8))

    def forward(self, scale):
        w = torch.stack([self.q & 0xF, self.q >> 4], -1).flatten(1)
        return (w.float() - 8.0) * scale


class VariableShift(nn.Module):
    """Tensor shift amounts, some of them outside [0, 32): zero or the sign fill."""

    def forward(self, x, s):
        return torch.stack([x >> s, x << s, torch.bitwise_right_shift(x, 3),
                            torch.bitwise_left_shift(x, 2)])


def _ints(*shape, lo=-1000, hi=1000, dtype=torch.int32, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(lo, hi, shape, generator=g, dtype=dtype)


def test_static_cache_index_copy_and_sliced_put():
    check_both_importers(CacheWrite(), _randn(1, 2, 8, 4), _randn(1, 2, 8, 4, seed=1),
                         _randn(1, 2, 3, 4, seed=2), _randn(1, 2, 3, 4, seed=3),
                         torch.tensor([5, 1, 6]))


def test_put_on_axes_apart():
    check_both_importers(ApartPut(), _randn(2, 3, 4, 5), _randn(2, 2, 4, seed=1))


def test_index_copy_of_a_middle_axis_leading_dims_kept():
    class Middle(nn.Module):
        def forward(self, x, src):
            return x.index_copy(1, torch.tensor([4, 0]), src)

    check_both_importers(Middle(), _randn(3, 5, 2), _randn(3, 2, 2, seed=1))


def test_awq_nibble_unpack():
    check_both_importers(Unpack(), _randn(6, 8))


def test_shift_amounts_out_of_range():
    s = torch.tensor([[0, 1, 31, 32], [-1, 40, 4, 7]], dtype=torch.int32)
    check_both_importers(VariableShift(), _ints(2, 4), s)


def test_constant_amounts_take_the_plain_shift():
    class Nibbles(nn.Module):
        def forward(self, q):
            return torch.stack([q & 0xF, q >> 4, q << 1], -1)

    q = _ints(5, 6, lo=0, hi=256, dtype=torch.uint8)
    text = str(check_both_importers(Nibbles(), q)["main"])
    assert "right_shift" in text and "left_shift" in text and "where" not in text


def test_view_as_and_reshape_as():
    class As(nn.Module):
        def forward(self, x, y):
            return x.view_as(y) + x.t().reshape_as(y)

    check_both_importers(As(), _randn(4, 6), _randn(2, 3, 4, seed=1))


def test_bfloat16_table_widened():
    """A bfloat16 embedding table read and widened with ``.float()``: exact in float32."""

    class Table(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("w", (0.5 * torch.randn(10, 4)).to(torch.bfloat16))

        def forward(self, idx):
            return torch.nn.functional.embedding(idx, self.w).float() * 2.0

    check_both_importers(Table(), torch.tensor([[3, 0, 9], [1, 1, 4]]))


def test_row_put_compares_rows_with_indices_only():
    """``x[idx] = v`` of whole rows: negative indices count from the end; a row written twice
    (with equal values here: torch leaves the winner unspecified) keeps one of them; rows not
    written keep x. Only a (rows, updates) table is compared, not every element."""
    from minitvm.relay.expr import Call
    from minitvm.relay.expr_functor import post_order_visit

    class RowPut(nn.Module):
        def forward(self, x, v, idx):
            x = x.clone()
            x[idx] = v
            return x

    v = _randn(4, 3, 5, seed=1)
    v[3] = v[1]
    mod = check_both_importers(RowPut(), _randn(7, 3, 5), v, torch.tensor([2, -1, 0, 6]))
    compared = []

    def visit(e):
        if isinstance(e, Call) and getattr(e.op, "name", "") == "equal":
            compared.append(tuple(int(d) for d in e.checked_type.shape))

    post_order_visit(mod["main"].body, visit)
    assert compared == [(7, 4)]


class SliceWrites(nn.Module):
    """Writes through partial views: a slice assignment (``copy_``), in-place arithmetic on
    strided slices, ``fill_`` / ``zero_`` of selected rows and columns, a chain of views."""

    def forward(self, x, v):
        x = x.clone()
        x[:, 1:3] = v
        x[:, 0::2] *= 2.0
        x[1, 1:3] += v[0]
        x[:, -1] = 7.0
        row = x[2]
        row.mul_(3.0)
        x[0].zero_()
        return x + 1.0


def test_writes_through_partial_views():
    check_both_importers(SliceWrites(), _randn(3, 5), _randn(3, 2, seed=1))

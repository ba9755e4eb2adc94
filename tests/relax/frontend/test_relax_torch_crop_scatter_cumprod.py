"""relax.frontend.torch.from_exported_program on the gaps the eighth round of new-user models
found (benchmarks/new_user_models_eighth.py): a constant pad with negative widths (RWKV's
token shift crops the last step), ``cumprod`` (NeRF's transmittance), ``scatter_reduce.two``
(a graph attention's per-node max over incoming edges) and ``index_put`` (torch.export's form
of ``index_add``). Built and run on the Relax VM against PyTorch eager, plus the ops' forms in
the imported module and the errors of unsupported variants."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

import torch.nn.functional as F  # noqa: E402

from .exported_program_run import run_exported as _run  # noqa: E402


def _rand(*shape, seed=0):
    return torch.from_numpy(np.random.default_rng(seed).standard_normal(shape).astype("float32"))


@pytest.mark.parametrize("pad", [(0, 0, 1, -1), (-2, 1), (-1, -2, 3, -1), (0, 0, -1, -1)])
def test_constant_pad_negative_crops(pad):
    text = _run(lambda x: F.pad(x, pad, value=0.25), _rand(2, 5, 6))
    assert "strided_slice" in text
    assert ("R.nn.pad" in text) == any(p > 0 for p in pad)


@pytest.mark.parametrize("dim", [0, -1])
def test_cumprod(dim):
    text = _run(lambda x: torch.cumprod(x, dim), _rand(3, 6) * 0.5 + 1.0)
    assert "cumprod" in text


def test_cumprod_int_accumulates_in_int64():
    x = torch.from_numpy(np.random.default_rng(1).integers(-3, 4, (2, 7)).astype("int32"))
    _run(lambda x: torch.cumprod(x, 1), x)


_EDGES = torch.tensor([0, 2, 2, 1, 0, 4, 2, 0])  # destinations; node 3 receives nothing


@pytest.mark.parametrize("reduce", ["amax", "amin", "sum", "prod", "mean"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce(reduce, include_self):
    idx = _EDGES[:, None].expand(-1, 3)

    def fn(base, src):
        return base.scatter_reduce(0, idx, src, reduce, include_self=include_self)

    _run(fn, _rand(5, 3), _rand(8, 3, seed=1))


def test_scatter_reduce_int_amax_without_self():
    """Integers start the scattered positions from their own extremes (no infinities)."""
    idx = _EDGES.to(torch.int64)
    x = torch.from_numpy(np.random.default_rng(2).integers(-50, 50, 5).astype("int32"))
    src = torch.from_numpy(np.random.default_rng(3).integers(-50, 50, 8).astype("int32"))
    _run(lambda x, s: x.scatter_reduce(0, idx, s, "amax", include_self=False), x, src)


def test_scatter_softmax_of_incoming_edges():
    """GAT's softmax over each node's incoming edges: max by scatter_reduce (of an expanded
    index: a scatter_nd of rows), sums and messages by index_add (which torch.export records as
    index_put with accumulate)."""
    dst = _EDGES

    def fn(e, h):
        mx = torch.full((5, 2), -1e9).scatter_reduce(0, dst[:, None].expand(-1, 2), e, "amax")
        w = torch.exp(e - mx[dst])
        den = torch.zeros(5, 2).index_add(0, dst, w)
        return torch.zeros(5, 2, 4).index_add(0, dst, (w / den[dst])[..., None] * h)

    text = _run(fn, _rand(8, 2), _rand(8, 2, 4, seed=1))
    assert "R.scatter_nd(" in text and "index_put" in text


@pytest.mark.parametrize("accumulate", [False, True])
def test_index_put(accumulate):
    idx = torch.tensor([3, 0, 3, 1])

    def fn(x, v):
        return torch.ops.aten.index_put.default(x, [idx], v, accumulate)

    x, v = _rand(5, 3), _rand(4, 3, seed=1)
    if not accumulate:  # repeated indices write in an unspecified order: make them agree
        v[2] = v[0]
    _run(fn, x, v)


def test_index_put_with_skipped_axis():
    """``x[:, idx] += v``: the put with the indexed axis moved first
    (``frontend_common.index_put_plan``; it was refused before the thirteenth round)."""
    idx = torch.tensor([1, 0])
    _run(lambda x, v: torch.ops.aten.index_put.default(x, [None, idx], v, True),
         _rand(3, 4), _rand(3, 2))

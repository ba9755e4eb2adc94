"""The third round of new-user architectures through relay.frontend.from_pytorch: the scatter
family (``scatter``, ``scatter_add``, ``scatter_reduce``, ``index_add``, ``index_put``) a mixture
of experts or a graph network traces to, and the spatial transformer's ``F.affine_grid`` and
``F.grid_sample``, each checked against eager PyTorch with every kernel native where the
converter decomposes the op."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

import torch.nn.functional as F  # noqa: E402
from frontend_models import Fn, compare_traced  # noqa: E402
from torch import nn  # noqa: E402

from minitvm import relay  # noqa: E402


def _run(model, *inputs, rtol=1e-5, atol=1e-5, fallback_ok=(), check_trace=True):
    """Trace under no_grad, import, build at opt_level 3, compare with eager; every kernel but
    those named in ``fallback_ok`` must be native (Relay's scatter_elements runs as its numpy
    reference: the converters avoid it unless the scatter is large and its index unknown)."""
    model = model.eval()
    with torch.no_grad():
        ref = model(*inputs).numpy()
        traced = torch.jit.trace(model, inputs, check_trace=check_trace)
    lib = compare_traced(traced, inputs, ref, rtol, atol)
    fallback = [k for k, v in lib.get_lib().kernels.items() if v.kind != "native"]
    assert [k for k in fallback if not any(a in k for a in fallback_ok)] == []
    return lib


def _randn(*shape, seed=0):
    return torch.from_numpy(np.random.default_rng(seed).standard_normal(shape).astype("float32"))


def _ids(high, *shape, seed=1):
    return torch.from_numpy(np.random.default_rng(seed).integers(0, high, shape))


# ------------------------------------------------------------------ scatter family
# a known index varying along every axis (compared with every position) and one broadcast over
# the rows (the gather plan)
_IDX = {"general": (_ids(5, 3, 4), _ids(3, 2, 5, seed=2)),
        "rows": (_ids(5, 1, 4).expand(3, 4), _ids(3, 2, 1, seed=2).expand(2, 5))}


@pytest.mark.parametrize("kind", ["general", "rows"])
@pytest.mark.parametrize("fn", [
    lambda x, s, i, i0: x.scatter(1, i, s),
    lambda x, s, i, i0: x.scatter(0, i0, s),  # index smaller than src
    lambda x, s, i, i0: x.scatter(1, i, 2.5),
    lambda x, s, i, i0: x.scatter(1, i, s, reduce="add"),
    lambda x, s, i, i0: x.scatter(1, i, s, reduce="multiply"),
    lambda x, s, i, i0: torch.scatter_add(x, 1, i, s),
    lambda x, s, i, i0: x.clone().scatter_add_(-1, i, s),
], ids=["src", "partial_index", "value", "reduce_add", "reduce_multiply", "scatter_add",
        "scatter_add_inplace"])
def test_scatter_matches_torch(fn, kind):
    i, i0 = _IDX[kind]
    _run(Fn(lambda x, s: fn(x, s, i, i0)), _randn(3, 5), _randn(3, 5, seed=1))


@pytest.mark.parametrize("reduce", [None, "add", "multiply"])
def test_scatter_with_a_runtime_index_matches_torch(reduce):
    kw = {"reduce": reduce} if reduce else {}
    idx = torch.from_numpy(np.random.default_rng(3).permutation(5)[:4].reshape(1, 4)
                           .repeat(3, 0).copy())
    _run(Fn(lambda x, i, s: x.scatter(1, i, s, **kw)), _randn(3, 5), idx, _randn(3, 4, seed=1))


@pytest.mark.parametrize("reduce", [None, "sum", "amax"])
def test_large_scatter_with_a_runtime_index_uses_scatter_elements(reduce):
    """Past the comparison budget (64*512 positions x 16 updates) the converter keeps
    scatter_elements, which runs natively in one pass over the updates."""
    idx = _ids(512, 64, 16, seed=4)
    if reduce is None:  # unique targets per row: the written value is defined
        idx = torch.from_numpy(np.stack([np.random.default_rng(r).permutation(512)[:16]
                                         for r in range(64)]))

        def fn(x, i, s):
            return x.scatter(1, i, s)
    else:
        def fn(x, i, s):
            return x.scatter_reduce(1, i, s, reduce)
    lib = _run(Fn(fn), _randn(64, 512), idx, _randn(64, 16, seed=1))
    assert any("scatter_elements" in k for k in lib.get_lib().kernels)


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_matches_torch(reduce, include_self):
    idx = _ids(4, 6, 3)
    _run(Fn(lambda x, s: x.scatter_reduce(0, idx, s, reduce, include_self=include_self)),
         _randn(4, 3), _randn(6, 3, seed=1))
    # the same index broadcast along the rows: the gather plan, every kernel native
    idx_rows = idx[:, :1].expand(6, 3)
    _run(Fn(lambda x, s: x.scatter_reduce(0, idx_rows, s, reduce, include_self=include_self)),
         _randn(4, 3), _randn(6, 3, seed=1), fallback_ok=())


def test_moe_top2_gating_scatter():
    """A mixture of experts' dense combine weights: softmax of the top-2 logits scattered into
    zeros (the index is a runtime tensor from topk)."""
    def gate(logits):
        top, idx = logits.topk(2, dim=-1)
        return torch.zeros_like(logits).scatter(-1, idx, top.softmax(-1))

    _run(Fn(gate), _randn(2, 7, 5))


@pytest.mark.parametrize("dim, alpha", [(0, 1), (1, 1), (-1, 0.5)])
def test_index_add_with_repeated_indices(dim, alpha):
    x = _randn(5, 6, 4)
    n = 9
    idx = _ids(x.shape[dim], n, seed=3)
    shape = list(x.shape)
    shape[dim] = n
    _run(Fn(lambda x, s: x.index_add(dim, idx, s, alpha=alpha)), x, _randn(*shape, seed=4),
         fallback_ok=())
    _run(Fn(lambda x, i, s: x.index_add(dim, i, s, alpha=alpha)), x, idx,
         _randn(*shape, seed=4))  # a runtime index: compared with every position


def test_gcn_message_passing_with_index_add():
    """GCN propagation: index_select the sources, sum into the targets with index_add_."""
    src, dst = _ids(10, 30, seed=5), _ids(10, 30, seed=6)

    def prop(x):
        out = torch.zeros(x.shape[0], 10, x.shape[2])
        return out.index_add_(1, dst, x.index_select(1, src))

    lib = _run(Fn(prop), _randn(2, 10, 8), fallback_ok=())
    assert not any("scatter" in k for k in lib.get_lib().kernels)


@pytest.mark.parametrize("accumulate", [False, True])
def test_index_put_with_index_tensors(accumulate):
    rows, cols = torch.tensor([0, 2, 2, -1]), torch.tensor([1, 0, 0, 3])
    unique_rows = torch.tensor([0, 2, -1])

    def put(x, v):
        y = x.clone()
        y.index_put_((rows, cols), v, accumulate=accumulate)
        if accumulate:
            y[unique_rows] += 1.0  # x[idx] += v: index_put_ with accumulate=False
        return y

    # two index tensors go through scatter_nd (a numpy reference), one through the scatters
    _run(Fn(put), _randn(4, 5), _randn(4, seed=1), fallback_ok=("adv_index", "scatter_nd"))


@pytest.mark.parametrize("accumulate", [False, True])
@pytest.mark.parametrize("known", [False, True])
def test_index_put_with_one_index_tensor_is_native(accumulate, known):
    """x[idx] = v / x.index_put_((idx,), v, accumulate=True): rows of x, a 2-D index."""
    rows = torch.tensor([[4, 0], [2, -1]]) if accumulate else torch.tensor([[4, 0], [2, 1]])

    def put(x, v, *i):
        y = x.clone()
        y.index_put_((i[0] if i else rows,), v, accumulate=accumulate)
        return y

    extra = () if known else (rows,)
    # torch's trace check reruns index_put_ (non-deterministic without accumulate) and fails
    _run(Fn(put), _randn(6, 3), _randn(2, 2, 3, seed=1), *extra, check_trace=False)


def test_index_put_with_a_boolean_mask():
    def put(x):
        y = x.clone()
        y[x > 0.5] = 0.0
        return y

    _run(Fn(put), _randn(3, 6))


def test_index_put_with_a_mask_and_tensor_values_is_refused():
    def put(x, v):
        y = x.clone()
        y[x > 0] = v[x > 0]
        return y

    x = _randn(3, 4)
    with torch.no_grad():
        traced = torch.jit.trace(Fn(put), (x, x))
    with pytest.raises(Exception, match="index_put|data-dependent"):
        relay.frontend.from_pytorch(traced, [("x", ((3, 4), "float32")),
                                             ("v", ((3, 4), "float32"))])


# ------------------------------------------------------------------ spatial transformer
@pytest.mark.parametrize("align", [False, True])
def test_affine_grid_matches_torch(align):
    _run(Fn(lambda t: F.affine_grid(t, [2, 3, 5, 7], align_corners=align)), _randn(2, 2, 3))


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding", ["zeros", "border"])
@pytest.mark.parametrize("align", [False, True])
def test_grid_sample_decomposed_matches_torch(mode, padding, align):
    """Grid points reach past the borders (|g| up to 1.3) so the padding matters."""
    grid = torch.from_numpy(np.random.default_rng(7).uniform(-1.3, 1.3, (2, 6, 9, 2))
                            .astype("float32"))
    _run(Fn(lambda x, g: F.grid_sample(x, g, mode=mode, padding_mode=padding,
                                       align_corners=align)), _randn(2, 3, 7, 8), grid)


@pytest.mark.parametrize("mode, padding", [("bicubic", "zeros"), ("bilinear", "reflection")])
def test_grid_sample_other_modes_match_torch(mode, padding):
    grid = torch.from_numpy(np.random.default_rng(8).uniform(-1.2, 1.2, (1, 4, 5, 2))
                            .astype("float32"))
    _run(Fn(lambda x, g: F.grid_sample(x, g, mode=mode, padding_mode=padding,
                                       align_corners=False)),
         _randn(1, 2, 6, 6), grid, rtol=1e-4, atol=1e-4, fallback_ok=("grid_sample",))


def test_spatial_transformer_end_to_end():
    class STN(nn.Module):
        def __init__(self):
            super().__init__()
            self.loc = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1), nn.ReLU(),
                                     nn.AdaptiveAvgPool2d(2), nn.Flatten(), nn.Linear(32, 6))
            self.head = nn.Conv2d(3, 4, 3, padding=1)

        def forward(self, x):
            theta = self.loc(x).view(-1, 2, 3)
            grid = F.affine_grid(theta, list(x.shape), align_corners=False)
            y = self.head(F.grid_sample(x, grid, align_corners=False))
            return F.interpolate(y, scale_factor=2, mode="bilinear", align_corners=True)

    torch.manual_seed(0)
    _run(STN(), _randn(2, 3, 16, 16), rtol=1e-4, atol=1e-4)

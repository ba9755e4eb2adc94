"""relax.frontend.torch.from_exported_program under a dynamic batch ``Dim`` on ops that needed
static sizes (found by the ep-relax-dyn sweep of benchmarks/sweep_import_paths.py): a conv whose
group count is the batch, indexing several axes one of which is the batch, max pooling's indices,
cummax / cummin, 3-D grid sampling with a batch-sized grid; one build run at several batch sizes
against PyTorch eager."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")
nn = torch.nn
F = torch.nn.functional

import minitvm as tvm  # noqa: E402
from minitvm import relax  # noqa: E402
from minitvm.relax.frontend.torch import from_exported_program  # noqa: E402


def build_dynamic(model, example, max_batch=64):
    """One Relax build of ``model`` exported with axis 0 of ``example`` a batch ``Dim``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ep = torch.export.export(model, (example,),
                                 dynamic_shapes=({0: torch.export.Dim("batch", max=max_batch)},))
    mod = from_exported_program(ep)
    return mod, relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())


def check_batches(model, vm, make, batches=(1, 3), rtol=1e-5, atol=1e-6, outputs=1):
    for b in batches:
        x = make(b)
        with torch.no_grad():
            ref = model(x)
        ref = ref if isinstance(ref, tuple) else (ref,)
        got = vm["main"](x.numpy())
        for i in range(outputs):
            np.testing.assert_allclose(got[i].numpy(), ref[i].numpy(), rtol=rtol, atol=atol,
                                       err_msg=f"batch {b}, output {i}")


class PerSampleConv(nn.Module):
    """Per-sample kernels applied as one conv over the batch folded into channels, with
    ``groups`` the batch (CondConv, hypernetworks)."""

    def __init__(self, c=3, o=4, k=3, stride=1, pad=1, dil=1):
        super().__init__()
        self.c, self.o, self.k, self.stride, self.pad, self.dil = c, o, k, stride, pad, dil
        self.gen = nn.Linear(c, o * c * k * k)
        self.bias = nn.Linear(c, o)

    def forward(self, x):
        b, c, h, w = x.shape
        pooled = x.mean((2, 3))
        wk = self.gen(pooled).reshape(b * self.o, c, self.k, self.k)
        y = F.conv2d(x.reshape(1, b * c, h, w), wk, self.bias(pooled).reshape(b * self.o),
                     stride=self.stride, padding=self.pad, dilation=self.dil, groups=b)
        return y.reshape(b, self.o, y.shape[2], y.shape[3])


@pytest.mark.parametrize("k, stride, pad, dil", [(3, 1, 1, 1), (2, 2, 0, 2)])
def test_conv_grouped_by_the_batch(k, stride, pad, dil):
    """The group count is the symbolic batch (it failed: 'int() argument ... not Var'): one
    matmul per group of its windows, checked at batches 1, 3 and 5 against eager."""
    torch.manual_seed(0)
    model = PerSampleConv(k=k, stride=stride, pad=pad, dil=dil).eval()
    mod, vm = build_dynamic(model, torch.randn(2, 3, 9, 8))
    text = mod.script()
    assert "R.nn.conv2d" not in text and "R.matmul" in text and "R.match_cast" in text
    check_batches(model, vm, lambda b: torch.randn(b, 3, 9, 8), (1, 3, 5), rtol=1e-4,
                  atol=1e-5)


class PerSampleConv1d(nn.Module):
    def forward(self, x):
        b, c, n = x.shape
        w = torch.flip(x[:, :, :3], [2]).repeat(1, 2, 1).reshape(b * 2, c, 3) * 0.5
        return F.conv1d(x.reshape(1, b * c, n), w, padding=1, groups=b)


def test_conv1d_grouped_by_the_batch():
    """The same for a 1-D conv whose kernels come from the input itself."""
    model = PerSampleConv1d()
    _, vm = build_dynamic(model, torch.randn(2, 4, 10))
    check_batches(model, vm, lambda b: torch.randn(b, 4, 10), (1, 3), rtol=1e-4, atol=1e-5)



class GatherTopRows(nn.Module):
    """``x[arange(b)[:, None, None], arange(h)[None, :, None], top]``: three indexed axes, the
    first the batch (Informer's ProbSparse attention picks its top queries this way)."""

    def forward(self, x):
        b, h = x.shape[0], x.shape[1]
        top = x.sum(-1).topk(3, dim=-1).indices
        bi = torch.arange(b)[:, None, None]
        hi = torch.arange(h)[None, :, None]
        return x[bi, hi, top] * 2.0


def test_index_several_axes_with_the_batch():
    """The linear index of several indexed axes takes the symbolic batch's size as a run-time
    scalar (it failed: 'indexing several axes at once needs them static')."""
    torch.manual_seed(0)
    model = GatherTopRows()
    _, vm = build_dynamic(model, torch.randn(2, 4, 7, 5))
    check_batches(model, vm, lambda b: torch.randn(b, 4, 7, 5), (1, 3))


class PoolUnpool(nn.Module):
    """SegNet's encoder / decoder pair: max pooling's indices feed max_unpool2d."""

    def __init__(self, k, stride, pad):
        super().__init__()
        self.k, self.stride, self.pad = k, stride, pad

    def forward(self, x):
        y, idx = F.max_pool2d(x, self.k, self.stride, self.pad, return_indices=True)
        return F.max_unpool2d(y * 3.0, idx, self.k, self.stride, self.pad, x.shape[2:]), idx


@pytest.mark.parametrize("k, stride, pad", [(2, 2, 0), (3, 2, 1)])
def test_max_pool_indices_of_a_symbolic_batch(k, stride, pad):
    """The indices count within each (N, C) plane, so only the spatial dims must be static
    (it failed: 'max-pool indices need a batched input of static shape'); max_unpool2d of
    them, from disjoint windows (gathers) or overlapping ones (an index_put over planes
    counted at run time)."""
    torch.manual_seed(0)
    model = PoolUnpool(k, stride, pad)
    mod, vm = build_dynamic(model, torch.randn(2, 3, 6, 8))
    assert ("R.index_put" in mod.script()) == (k != stride)
    check_batches(model, vm, lambda b: torch.randn(b, 3, 6, 8), (1, 3), outputs=2)


class CumExtremes(nn.Module):
    def forward(self, x):
        hi = torch.cummax(x, dim=2)
        lo = torch.cummin(x, dim=1)
        return hi.values, hi.indices, lo.values, lo.indices


def test_cummax_cummin_of_a_symbolic_batch():
    """A static size along the scanned dim sets the log-step count; the batch stays symbolic
    (it failed: 'needs a static input shape'). Ties (a later equal entry's index) and NaN
    (it takes over and stays) as torch's."""
    model = CumExtremes()
    _, vm = build_dynamic(model, torch.randn(2, 5, 9))

    def make(b):
        x = torch.randint(0, 4, (b, 5, 9)).float()
        x[0, 1, 4] = float("nan")
        return x

    check_batches(model, vm, make, (1, 3), outputs=4)


class VoxelLookup(nn.Module):
    """A learned (1, C, D, H, W) volume sampled at a batch of points (TensoRF's appearance
    grid): the grid's output dims are the symbolic batch."""

    def __init__(self, padding_mode):
        super().__init__()
        self.padding_mode = padding_mode
        self.vol = nn.Parameter(torch.randn(1, 4, 5, 6, 7))

    def forward(self, pts):
        n = pts.shape[0]
        out = F.grid_sample(self.vol, pts.view(1, n, 1, 1, 3), align_corners=True,
                            padding_mode=self.padding_mode)
        return out.view(4, n).t()


@pytest.mark.parametrize("padding_mode", ["zeros", "reflection"])
def test_grid_sample_3d_at_a_batch_of_points(padding_mode):
    """The native kernel's output dims may be symbolic; the image's must be static (it
    failed: 'the image's and grid's spatial dims must be known')."""
    torch.manual_seed(0)
    model = VoxelLookup(padding_mode)
    _, vm = build_dynamic(model, torch.rand(2, 3) * 2.4 - 1.2)
    check_batches(model, vm, lambda b: torch.rand(b, 3) * 2.4 - 1.2, (1, 3, 7), rtol=1e-5,
                  atol=1e-5)


class KernelRegression(nn.Module):
    """Exact GP regression on a batch of training points (the dkl_gp pattern): the (b, b)
    kernel matrix's Cholesky factor, cholesky_solve and a triangular solve."""

    def forward(self, x):
        k = torch.exp(-0.5 * torch.cdist(x, x).pow(2)) + 0.1 * torch.eye(x.shape[0])
        chol = torch.linalg.cholesky(k)
        alpha = torch.cholesky_solve(x[:, :1], chol)
        v = torch.linalg.solve_triangular(chol, k, upper=False)
        return torch.cat([alpha, v.sum(0, keepdim=True).t()], 1)


def test_cholesky_of_a_batch_sized_kernel_matrix():
    """The matrix order is the symbolic batch (it failed: 'cholesky: matrix shape (s, s) is
    symbolic'): the loop kernels take the order at run time."""
    torch.manual_seed(0)
    model = KernelRegression()
    _, vm = build_dynamic(model, torch.randn(4, 3), max_batch=25)  # (cdist's guard)
    check_batches(model, vm, lambda b: torch.randn(b, 3), (1, 3, 7), rtol=1e-4, atol=1e-4)


class FirstRowBroadcast(nn.Module):
    """A quantity of the first sample broadcast back over the batch (DeepFill's overlap count
    ``fold(ones_like(patches[:1]))`` dividing the pasted patches)."""

    def forward(self, x):
        return x / (x[:1].abs().sum(0, keepdim=True) + 1) + x[0:2:2]


def test_slice_of_batch_torch_proved_in_bounds_keeps_its_length():
    model = FirstRowBroadcast()
    mod, vm = build_dynamic(model, torch.randn(4, 3, 5))
    text = mod.script()
    assert "assume_inbound=True" in text and "T.min" not in text
    check_batches(model, vm, lambda b: torch.randn(b, 3, 5, generator=torch.Generator()
                                                   .manual_seed(b)), batches=(2, 3, 6))

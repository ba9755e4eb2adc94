"""The rows-first form of the resize schedule (``schedule/resize.py``): when one axis besides the
innermost is upsampled (and the row is not an exact 2x, whose pair form reads the input rows
directly), each block of output rows resizes the input rows it reads once, into a temporary,
and then combines those rows at unit stride. Which stages take it, the block plan, and its
values against the numpy/PyTorch reference and the generic lowering: every coordinate mode,
non-integer scales, width downsampling, batches, float64, another layout, fused epilogues."""

import numpy as np
import pytest
from relay_build import run_against_interpreter

from minitvm import codegen, relay, te
from minitvm.backend import kernel_cache
from minitvm.schedule import lower_te
from minitvm.schedule import resize as rs
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import walk_stmts
from minitvm.topi import image_resize


def _stage(shape, size, axes=(2, 3), dtype="float32", **kw):
    x = te.placeholder(shape, dtype=dtype, name="x")
    return x, image_resize.resize(x, axes, size, **kw)


def _plan(shape, size, axes=(2, 3), **kw):
    x, t = _stage(shape, size, axes, **kw)
    return rs._width_first(t.op.attrs["resize"], rs._static_shape(t), rs._static_shape(x))


def _buffers(f) -> set:
    return {s.buffer.name for s in walk_stmts(f.body) if isinstance(s, S.DeclBuffer)}


@pytest.mark.parametrize("shape,size,kw,want", [
    ((1, 21, 32, 32), (256, 256), {}, True),                      # deeplab's 8x
    ((1, 4, 10, 30), (25, 30), {"method": "cubic"}, True),
    ((1, 4, 10, 30), (25, 12), {"method": "nearest_neighbor"}, True),  # rows shrink
    ((1, 4, 32, 40), (64, 80), {}, False),                        # 2x: the pair form
    ((1, 4, 32, 40), (16, 80), {}, False),                        # fewer output rows
    ((1, 4, 32, 40), (32, 80), {}, False),                        # rows kept
])
def test_which_stages_take_rows_first(shape, size, kw, want):
    assert (_plan(shape, size, **kw) is not None) == want
    x, t = _stage(shape, size, **kw)
    f, _ = lower_te([x], [t])
    assert ("resize_hrows" in _buffers(f)) == want


def test_other_ranks_are_not_rows_first():
    x = te.placeholder((1, 2, 3, 4, 5), name="x")
    t = image_resize.resize(x, (2, 3, 4), (6, 8, 10))
    assert rs._width_first(t.op.attrs["resize"], rs._static_shape(t),
                            rs._static_shape(x)) is None
    x = te.placeholder((1, 2, 5), name="x")
    t = image_resize.resize(x, (2,), (15,))
    assert rs._width_first(t.op.attrs["resize"], rs._static_shape(t),
                            rs._static_shape(x)) is None


def _py_rows(m, method, o):
    """The input rows output row ``o`` reads (float64 numpy coordinates, as the reference)."""
    n_in, n_out, mode = m.n_in, m.n_out, m.mode
    if mode == "align_corners":
        c = o * (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
    elif mode == "asymmetric":
        c = o * n_in / n_out
    elif mode == "pytorch_half_pixel" and n_out == 1:
        c = 0.0
    else:
        c = (o + 0.5) * n_in / n_out - 0.5
    fl = int(np.floor(c))
    if method == "nearest_neighbor":
        taps = [int(np.round(c)) if mode == "align_corners" else fl]
    elif method == "linear":
        taps = [fl, fl + 1]
    else:
        taps = [fl - 1, fl, fl + 1, fl + 2]
    return [min(max(i, 0), n_in - 1) for i in taps]


@pytest.mark.parametrize("mode", ["half_pixel", "align_corners", "asymmetric",
                                  "pytorch_half_pixel"])
@pytest.mark.parametrize("method", ["nearest_neighbor", "linear", "cubic"])
@pytest.mark.parametrize("n_in,n_out,slices", [(32, 256, 21), (7, 19, 1), (3, 100, 2),
                                               (50, 51, 1)])
def test_block_plan_covers_the_rows_each_block_reads(mode, method, n_in, n_out, slices):
    shape = (1, slices, n_in, 9)
    plan = _plan(shape, (n_out, 27), method=method, coordinate_transformation_mode=mode)
    assert plan is not None
    k, a, block, nblocks, rows = plan
    assert (k, a) == (0, 2) and (nblocks - 1) * block < n_out <= nblocks * block
    m = _stage(shape, (n_out, 27), method=method,
               coordinate_transformation_mode=mode)[1].op.attrs["resize"].maps[0]
    need = 0
    for b in range(nblocks):
        read = [i for o in range(b * block, min(n_out, (b + 1) * block))
                for i in _py_rows(m, method, o)]
        need = max(need, max(read) - min(read) + 1)
    assert rows == need
    if slices == 1 and n_in >= 8:
        assert nblocks > 1  # one image: blocks for the threads


def _run(build, arrays):
    return run_against_interpreter(build, *arrays)


@pytest.mark.parametrize("mode", ["half_pixel", "align_corners", "asymmetric",
                                  "pytorch_half_pixel"])
@pytest.mark.parametrize("method", ["nearest_neighbor", "linear", "cubic"])
@pytest.mark.parametrize("shape,size", [((2, 3, 7, 11), (19, 23)), ((1, 2, 5, 40), (13, 17)),
                                        ((1, 3, 1, 1), (9, 9)), ((1, 1, 20, 6), (50, 6))])
def test_rows_first_matches_reference(mode, method, shape, size):
    x = np.random.default_rng(5).standard_normal(shape).astype("float32")
    got, want = _run(lambda a: relay.image.resize2d(
        a, size, method=method, coordinate_transformation_mode=mode,
        rounding_method="round" if method == "nearest_neighbor" else ""), [x])
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("method", ["nearest_neighbor", "linear", "cubic"])
def test_rows_first_matches_generic_lowering(method, request):
    x = np.random.default_rng(6).standard_normal((1, 5, 12, 20)).astype("float32")

    def build(a):
        return relay.image.resize2d(a, (61, 37), method=method)

    kernel_cache.clear_cache()
    ours, _ = _run(build, [x])
    request.getfixturevalue("generic_resize")
    plain, want = _run(build, [x])
    np.testing.assert_allclose(ours, plain, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(plain, want, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("align", [False, True])
def test_deeplab_upsampling_matches_pytorch(align):
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(7).standard_normal((1, 21, 32, 32)).astype("float32")
    mode = "align_corners" if align else "half_pixel"
    got, _ = _run(lambda a: relay.image.resize2d(a, (256, 256),
                                                 coordinate_transformation_mode=mode), [x])
    want = torch.nn.functional.interpolate(torch.from_numpy(x), size=(256, 256),
                                           mode="bilinear", align_corners=align).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_float64_other_layout_and_epilogue():
    rng = np.random.default_rng(8)
    x = rng.standard_normal((2, 3, 6, 10)).astype("float64")
    got, want = _run(lambda a: relay.image.resize2d(a, (20, 15)), [x])
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    # H is not next to W (axes 1 and 3): the rows of a block are a stride apart in the input
    x = rng.standard_normal((1, 6, 3, 10)).astype("float32")
    xt, t = _stage(x.shape, (17, 25), axes=(1, 3))
    prim, ws = lower_te([xt], [t], "f")
    assert "resize_hrows" in _buffers(prim) and not ws
    got = np.full((1, 17, 3, 25), np.nan, np.float32)
    codegen.build(prim)["f"](x, got)
    _, want = _run(lambda a: relay.image.resize2d(a, (17, 25)), [x.transpose(0, 2, 1, 3).copy()])
    np.testing.assert_allclose(got, want.transpose(0, 2, 1, 3), rtol=2e-5, atol=2e-5)
    x = rng.standard_normal((1, 3, 8, 8)).astype("float32")
    z = rng.standard_normal((1, 3, 40, 40)).astype("float32")
    bias = relay.const(np.arange(3, dtype="float32").reshape(1, 3, 1, 1))
    got, want = _run(lambda a, b: relay.nn.relu(relay.add(relay.add(
        relay.image.resize2d(a, (40, 40)), b), bias)), [x, z])
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5)

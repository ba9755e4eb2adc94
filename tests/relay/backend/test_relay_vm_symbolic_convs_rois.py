"""Relay VM symbolic kernels of conv3d, the transposed convolutions, RoIAlign and take with
batch dims: ONE kernel serves every size with the interpreter's values. What a shape rule
assumes of run-time sizes (channels matching, groups dividing them, RoIAlign's five box
columns, a non-empty image) is a shape condition checked at each call: a call that breaks one
runs the per-shape kernel, which raises as the interpreter does."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.relay.backend.vm.kernels import dynamic_kernel_counts
from minitvm.relay.backend.vm.symbolic import SymbolicKernel
from minitvm.runtime.vm import VirtualMachine
from minitvm.testing.fuzz.differential import flatten

A = relay.Any
nn = relay.nn


def _any(rank: int) -> tuple:
    """``rank`` distinct run-time sizes (one ``Any`` object repeated would be one size)."""
    return tuple(A() for _ in range(rank))


def _build(params, body):
    mod = tvm.IRModule.from_expr(relay.Function(params, body))
    exe = relay.vm.compile(mod, target="llvm")
    runs = [k.run for k in exe.kernels if isinstance(k.run, SymbolicKernel)]
    return exe, runs, VirtualMachine(exe, tvm.cpu()), \
        relay.create_executor("debug", mod=mod).evaluate()


def _agree(vm, interp, *args):
    want, got = flatten(interp(*args)), flatten(vm.run(*args))
    assert len(want) == len(got)
    for w, g in zip(want, got, strict=True):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)


def _rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype("float32")


def _one_symbolic_kernel(exe, runs):
    assert dynamic_kernel_counts(exe.kernels) == {"symbolic": 1, "specialized": 0}
    assert len(runs) == 1


CONV3D = [dict(), dict(padding=(1, 0, 1), strides=(2, 1, 2)), dict(dilation=(1, 2, 1)),
          dict(groups=2, padding=1)]


@pytest.mark.parametrize("attrs", CONV3D, ids=["plain", "pad_stride", "dilated", "groups"])
def test_conv3d_over_run_time_sizes(attrs):
    """Batch, channels and every spatial size at run time, the weight's too: one kernel for
    each call, the interpreter's values, no per-shape kernel compiled."""
    x = relay.var("x", shape=_any(5))
    w = relay.var("w", shape=_any(5))
    exe, runs, vm, interp = _build([x, w], nn.conv3d(x, w, **attrs))
    _one_symbolic_kernel(exe, runs)
    g = attrs.get("groups", 1)
    for xs, ws in (((1, 2, 4, 5, 5), (4, 2 // g, 2, 3, 3)), ((2, 4, 3, 6, 4), (2, 4 // g, 1, 2, 2)),
                   ((1, 2, 5, 5, 5), (6, 2 // g, 3, 3, 3))):
        _agree(vm, interp, _rand(*xs), _rand(*ws, seed=1))
    assert runs[0]._fallback is None


def test_conv3d_channel_mismatch_runs_the_per_shape_kernel_and_raises():
    x = relay.var("x", shape=_any(5))
    w = relay.var("w", shape=_any(5))
    exe, runs, vm, interp = _build([x, w], nn.conv3d(x, w))
    with pytest.raises(Exception, match="channel"):
        vm.run(_rand(1, 3, 4, 4, 4), _rand(2, 2, 1, 1, 1))
    with pytest.raises(Exception, match="channel"):
        interp(_rand(1, 3, 4, 4, 4), _rand(2, 2, 1, 1, 1))


TRANSPOSES = [
    (1, dict(strides=(2,)), [((1, 3, 5), (3, 2, 3)), ((2, 2, 1), (2, 4, 2))]),
    (1, dict(strides=(3,), padding=(1,), output_padding=(2,)), [((1, 2, 4), (2, 3, 3))]),
    (2, dict(), [((1, 3, 4, 4), (3, 2, 3, 3)), ((2, 1, 2, 5), (1, 3, 2, 1))]),
    (2, dict(strides=(2, 2), output_padding=(1, 1), padding=(1, 1)),
     [((1, 3, 5, 5), (3, 4, 3, 3)), ((1, 2, 3, 2), (2, 1, 2, 3))]),
    (2, dict(groups=2, strides=(2, 1), dilation=(1, 2)),
     [((1, 4, 3, 3), (4, 2, 2, 2)), ((2, 6, 2, 4), (6, 1, 3, 2))]),
    (3, dict(strides=(2, 1, 2)), [((1, 2, 3, 4, 4), (2, 3, 2, 2, 2)), ((1, 1, 1, 2, 3), (1, 2, 1, 2, 2))]),
]


@pytest.mark.parametrize("nd,attrs,shapes", TRANSPOSES,
                         ids=["1d", "1d_outpad", "2d", "2d_outpad", "2d_groups", "3d"])
def test_conv_transpose_over_run_time_sizes(nd, attrs, shapes):
    """conv1d/2d/3d_transpose (strides, padding, output padding, dilation, groups) with every
    size at run time: one symbolic kernel, the interpreter's values at each size."""
    op = {1: nn.conv1d_transpose, 2: nn.conv2d_transpose, 3: nn.conv3d_transpose}[nd]
    x = relay.var("x", shape=_any(nd + 2))
    w = relay.var("w", shape=_any(nd + 2))
    exe, runs, vm, interp = _build([x, w], op(x, w, **attrs))
    _one_symbolic_kernel(exe, runs)
    for xs, ws in shapes:
        _agree(vm, interp, _rand(*xs), _rand(*ws, seed=1))
    assert runs[0]._fallback is None


def test_conv_transpose_groups_not_dividing_runs_the_per_shape_kernel():
    """groups=2 over 3 run-time channels breaks the stated division: the per-shape kernel
    types the call and raises as the interpreter does."""
    x = relay.var("x", shape=_any(3))
    w = relay.var("w", shape=_any(3))
    exe, runs, vm, interp = _build([x, w], nn.conv1d_transpose(x, w, groups=2))
    assert any(c[0] == "divisible" for c in runs[0].conditions)
    with pytest.raises(Exception, match="divisible"):
        vm.run(_rand(1, 3, 4), _rand(3, 1, 2))


def _roi_program(layout="NCHW", mode="avg"):
    x = relay.var("x", shape=_any(4))
    r = relay.var("r", shape=_any(2))
    body = relay.vision.roi_align(x, r, (2, 3), 0.5, 2, layout=layout, mode=mode)
    return _build([x, r], body)


def _boxes(n, images=1, seed=0):
    rng = np.random.default_rng(seed)
    lo = rng.uniform(0, 6, (n, 2))
    return np.concatenate([rng.integers(0, images, (n, 1)), lo, lo + rng.uniform(0.5, 8, (n, 2))],
                          axis=1).astype("float32")


@pytest.mark.parametrize("layout,mode", [("NCHW", "avg"), ("NHWC", "max")])
def test_roi_align_over_run_time_boxes_and_feature_sizes(layout, mode):
    """0, 1 and 5 boxes over images of several sizes and counts: one symbolic kernel (the
    image size, channels and box count at run time), the interpreter's values."""
    exe, runs, vm, interp = _roi_program(layout, mode)
    _one_symbolic_kernel(exe, runs)
    for (n, c, h, w), boxes in (((1, 3, 6, 6), 0), ((1, 3, 6, 6), 1), ((2, 2, 9, 5), 5),
                                ((3, 1, 1, 1), 1), ((1, 4, 16, 12), 5)):
        shape = (n, c, h, w) if layout == "NCHW" else (n, h, w, c)
        _agree(vm, interp, _rand(*shape), _boxes(boxes, n))
    assert runs[0]._fallback is None


def test_roi_align_box_width_other_than_five_is_refused():
    """Boxes of 4 or 6 columns: the symbolic kernel read columns 0..4 of each (past the end
    of a 4-column array: garbage coordinates, a segfault); the width is now stated as 5 and
    checked, so the per-shape kernel types the call and raises as the interpreter does."""
    exe, runs, vm, interp = _roi_program()
    assert any(c[0] == "equal" and 5 in (c[1], c[2]) for c in runs[0].conditions)
    for cols in (4, 6):
        r = np.zeros((2, cols), "float32")
        with pytest.raises(Exception, match=r"\(num_rois, 5\)"):
            vm.run(_rand(1, 3, 6, 6), r)
        with pytest.raises(Exception, match=r"\(num_rois, 5\)"):
            interp(_rand(1, 3, 6, 6), r)


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "symbolic"])
def test_roi_align_nan_or_huge_boxes_read_in_bounds(dynamic):
    """A NaN, infinite or huge box coordinate: its samples lie outside the image (0), and the
    corners they load stay in bounds (the float-to-int cast of such a coordinate is undefined:
    the static kernel read far outside the image and segfaulted on a NaN box)."""
    shape = _any(4) if dynamic else (1, 3, 6, 6)
    x = relay.var("x", shape=shape)
    r = relay.var("r", shape=(A(), 5) if dynamic else (2, 5))
    exe = relay.vm.compile(tvm.IRModule.from_expr(relay.Function(
        [x, r], relay.vision.roi_align(x, r, (2, 2), 1.0, 2))), target="llvm")
    vm = VirtualMachine(exe, tvm.cpu())
    a = np.ones((1, 3, 6, 6), "float32")
    for v in (np.nan, np.inf, -np.inf, 1e20, -1e20, 3e9):
        b = np.array([[0, 1, 1, 3, 3], [0, v, v, v, v]], "float32")
        out = vm.run(a, b).numpy()
        np.testing.assert_array_equal(out[1], 0.0)
        np.testing.assert_allclose(out[0], 1.0, rtol=1e-6)


def test_roi_align_over_an_empty_image_batch_runs_the_per_shape_kernel():
    """No image (n = 0) while boxes point at image 0: the stated ``n > 0`` breaks, the
    per-shape kernel runs; with no box either, both give an empty result."""
    exe, runs, vm, interp = _roi_program()
    assert any(c[0] == "greater" for c in runs[0].conditions)
    got = vm.run(np.zeros((0, 3, 6, 6), "float32"), np.zeros((0, 5), "float32")).numpy()
    assert got.shape == (0, 3, 2, 3)


@pytest.mark.parametrize("axis,batch_dims", [(1, 1), (2, 1), (2, 2)])
def test_take_with_batch_dims_over_run_time_sizes(axis, batch_dims):
    """take(axis, batch_dims) with run-time data and index sizes: one symbolic kernel, the
    interpreter's values and numpy's per-batch take; the static kernel is native too (its
    compute indexed the indices without their batch dims and fell back to numpy)."""
    x = relay.var("x", shape=_any(3))
    i = relay.var("i", shape=_any(batch_dims + 1), dtype="int32")
    exe, runs, vm, interp = _build([x, i], relay.take(x, i, axis=axis, batch_dims=batch_dims))
    _one_symbolic_kernel(exe, runs)
    rng = np.random.default_rng(0)
    for xs, k in (((2, 3, 4), 5), ((1, 1, 1), 1), ((3, 2, 6), 0)):
        a = rng.standard_normal(xs).astype("float32")
        ind = rng.integers(0, xs[axis], xs[:batch_dims] + (k,)).astype("int32")
        _agree(vm, interp, a, ind)
        if batch_dims == 1:
            want = np.stack([np.take(a[b], ind[b], axis=axis - 1) for b in range(xs[0])])
            np.testing.assert_array_equal(vm.run(a, ind).numpy(), want)


def test_take_with_batch_dims_static_kernel_is_native():
    """The static take with batch dims lowers natively (it fell back to numpy) and agrees with
    numpy's per-batch take."""
    x = relay.var("x", shape=(2, 5))
    i = relay.var("i", shape=(2, 3), dtype="int32")
    exe = relay.vm.compile(tvm.IRModule.from_expr(relay.Function(
        [x, i], relay.take(x, i, axis=1, batch_dims=1))), target="llvm")
    assert [k.kind for k in exe.kernels] == ["native"]
    a = _rand(2, 5)
    ind = np.array([[0, 4, 2], [1, 1, 3]], "int32")
    got = VirtualMachine(exe, tvm.cpu()).run(a, ind).numpy()
    np.testing.assert_array_equal(got, np.take_along_axis(a, ind, axis=1))


def test_collapse_sum_like_over_run_time_sizes():
    """collapse_sum_like of a run-time (a, b, c) onto a run-time (m, k): each target size 1
    (summed) or the input's (kept) runs the one symbolic kernel (``m * (c - m + 1) == c``
    stated per axis); the interpreter's values and numpy's sums."""
    x = relay.var("x", shape=_any(3))
    y = relay.var("y", shape=_any(2))
    exe, runs, vm, interp = _build([x, y], relay.collapse_sum_like(x, y))
    _one_symbolic_kernel(exe, runs)
    assert sum(c[0] == "equal" for c in runs[0].conditions) == 2
    for xs, ys in (((2, 3, 4), (3, 4)), ((2, 3, 4), (1, 4)), ((2, 3, 4), (3, 1)),
                   ((1, 5, 6), (1, 1)), ((3, 1, 1), (1, 1)), ((2, 0, 3), (0, 1))):
        a, b = _rand(*xs), _rand(*ys)
        _agree(vm, interp, a, b)
        want = a.sum(axis=0)
        want = want.sum(axis=tuple(k for k in range(2) if ys[k] == 1 and xs[k + 1] != 1),
                        keepdims=True)
        np.testing.assert_allclose(vm.run(a, b).numpy(), want, rtol=1e-5, atol=1e-5)
    assert runs[0]._fallback is None
    with pytest.raises(Exception, match="broadcast"):  # (2 is neither 1 nor 4)
        vm.run(_rand(2, 3, 4), _rand(3, 2))


@pytest.mark.parametrize("method,padding", [("bilinear", "zeros"), ("nearest", "reflection")])
def test_grid_sample_over_run_time_image_and_grid_sizes(method, padding):
    """grid_sample with the batch, channels, image size and grid size at run time (sizes of
    1 included: reflection over a one-pixel axis): one symbolic kernel, the interpreter's
    values."""
    x = relay.var("x", shape=_any(4))
    g = relay.var("g", shape=_any(4))
    exe, runs, vm, interp = _build([x, g], relay.image.grid_sample(
        x, g, method=method, padding_mode=padding, align_corners=method == "nearest"))
    _one_symbolic_kernel(exe, runs)
    for xs, gs in (((1, 3, 4, 5), (1, 2, 3, 3)), ((2, 1, 7, 2), (2, 2, 1, 4)),
                   ((1, 2, 1, 3), (1, 2, 2, 2))):
        _agree(vm, interp, _rand(*xs), 1.3 * _rand(*gs, seed=2))
    assert runs[0]._fallback is None

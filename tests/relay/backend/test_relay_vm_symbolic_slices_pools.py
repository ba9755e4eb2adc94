"""Relay VM symbolic kernels of slices along a run-time axis, joins of run-time sizes and the
pools: ONE kernel serves every size (0 and 1 included where the op allows them) with the
interpreter's values. A slice's length on a run-time axis is an expression of the size
(Python's clamping as Min / Max); sizes a rule cannot prove equal (a join's, a slice's sum
against its source) and a pool's positive output are shape conditions, checked at each call:
a call that breaks one runs the per-shape kernel, which raises as the interpreter does."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.relay.backend.vm.kernels import dynamic_kernel_counts
from minitvm.relay.backend.vm.symbolic import SymbolicKernel
from minitvm.runtime.vm import VirtualMachine
from minitvm.testing.fuzz.differential import flatten

A = relay.Any


def _build(params, body):
    mod = tvm.IRModule.from_expr(relay.Function(params, body))
    exe = relay.vm.compile(mod, target="llvm")
    runs = [k.run for k in exe.kernels if isinstance(k.run, SymbolicKernel)]
    return exe, runs, VirtualMachine(exe, tvm.cpu()), \
        relay.create_executor("debug", mod=mod).evaluate()


def _agree(vm, interp, *args, exact=True):
    want, got = flatten(interp(*args)), flatten(vm.run(*args))
    assert len(want) == len(got)
    for w, g in zip(want, got, strict=True):
        assert g.shape == w.shape
        if exact:
            np.testing.assert_array_equal(g, w)
        else:
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


SLICES = [([1], [3], [1], [0]), ([-2], [2**31 - 1], [1], [0]), ([0], [-1], [2], [0]),
          ([5], [1], [-1], [0]), ([-1], [-(2**31)], [-2], [0]), ([1, 0], [10, 2], [1, 1], None)]


@pytest.mark.parametrize("begin,end,strides,axes", SLICES,
                         ids=["1:3", "-2:", "0:-1:2", "5:1:-1", "-1::-2", "1:10,0:2"])
def test_strided_slice_over_a_run_time_axis(begin, end, strides, axes):
    """Sizes 0, 1, 2, 5, 9 of the sliced axis: one symbolic kernel, never specialized, the
    interpreter's elements (an empty slice where Python's would be)."""
    x = relay.var("x", shape=(A(), 3), dtype="float32")
    exe, runs, vm, interp = _build([x], relay.strided_slice(x, begin, end, strides, axes=axes))
    assert dynamic_kernel_counts(exe.kernels) == {"symbolic": 1, "specialized": 0}
    for n in (0, 1, 2, 5, 9):
        a = np.arange(n * 3, dtype="float32").reshape(n, 3)
        _agree(vm, interp, a)
        sl = tuple(slice(b, e, s) for b, e, s in zip(begin, end, strides, strict=True))
        np.testing.assert_array_equal(vm.run(a).numpy(), a[sl])
    assert runs[0]._fallback is None


def test_strided_slice_size_mode_states_nothing():
    """``slice_mode="size"``: a length clamped at the end; no condition to check."""
    x = relay.var("x", shape=(A(), A()), dtype="float32")
    exe, runs, vm, interp = _build([x], relay.strided_slice(x, [1, 0], [2, -1],
                                                            slice_mode="size"))
    assert len(runs) == 1 and runs[0].conditions == []
    for shape in ((0, 0), (1, 4), (2, 1), (6, 3)):
        _agree(vm, interp, np.random.default_rng(0).standard_normal(shape).astype("float32"))
    assert runs[0]._fallback is None


def test_ctc_greedy_decoding_over_a_run_time_frame_count():
    """Each frame's best class against the previous frame's (a slice along the run-time frame
    axis joined to a one-frame head): frames 0, 1, 6 run one symbolic kernel; the join's sum
    (``max(min(n, 1), 0) + max(n - 1, 0)``) is taken as ``n``, checked per call."""
    lp = relay.var("lp", shape=(A(), 2, 5), dtype="float32")
    best = relay.argmax(lp, axis=2)
    prev = relay.concatenate([relay.full_like(relay.strided_slice(best, [0], [1], axes=[0]),
                                              relay.const(-1, "int32")),
                              relay.strided_slice(best, [0], [-1], axes=[0])], axis=0)
    keep = relay.logical_and(relay.not_equal(best, relay.const(0, "int32")),
                             relay.not_equal(best, prev))
    body = relay.where(keep, best, relay.full_like(best, relay.const(-1, "int32")))
    exe, runs, vm, interp = _build([lp], body)
    assert dynamic_kernel_counts(exe.kernels)["specialized"] == 0
    assert any(c[0] == "equal" for r in runs for c in r.conditions)
    for frames in (0, 1, 6):
        _agree(vm, interp, np.random.default_rng(frames).standard_normal(
            (frames, 2, 5)).astype("float32"))
    assert all(r._fallback is None for r in runs)


def test_concatenate_of_run_time_sizes_checks_their_agreement():
    """Two inputs of unrelated Anys joined on axis 1: one kernel while their rows agree
    (0 and 1 rows included); rows that differ raise, as the interpreter does."""
    x, y = relay.var("x", shape=(A(), A())), relay.var("y", shape=(A(), A()))
    exe, runs, vm, interp = _build([x, y], relay.concatenate([x, y], axis=1))
    assert dynamic_kernel_counts(exe.kernels) == {"symbolic": 1, "specialized": 0}
    r = np.random.default_rng(0)
    for (a, b), (c, d) in (((3, 2), (3, 4)), ((0, 1), (0, 2)), ((1, 0), (1, 3))):
        _agree(vm, interp, r.standard_normal((a, b)).astype("float32"),
               r.standard_normal((c, d)).astype("float32"))
    assert runs[0]._fallback is None
    bad = [np.zeros((3, 2), "float32"), np.zeros((2, 2), "float32")]
    with pytest.raises(Exception, match="concatenate"):
        interp(*bad)
    with pytest.raises(Exception, match="concatenate"):
        vm.run(*bad)


POOLS = [
    ("max2d_pad", lambda x: relay.nn.max_pool2d(x, (3, 3), (2, 2), padding=(1, 1))),
    ("max2d_ceil", lambda x: relay.nn.max_pool2d(x, (3, 3), (2, 2), ceil_mode=True)),
    ("avg2d_pad", lambda x: relay.nn.avg_pool2d(x, (2, 3), (1, 2), padding=(1, 0, 0, 1))),
    ("avg2d_incl", lambda x: relay.nn.avg_pool2d(x, (3, 3), (2, 2), padding=(1, 1),
                                                 ceil_mode=True, count_include_pad=True)),
    ("avg2d_nhwc", lambda x: relay.nn.avg_pool2d(x, (2, 2), layout="NHWC")),
    ("global_avg", lambda x: relay.nn.global_avg_pool2d(x)),
    ("adaptive_avg", lambda x: relay.nn.adaptive_avg_pool2d(x, (3, 2))),
    ("adaptive_max", lambda x: relay.nn.adaptive_max_pool2d(x, (2, 3))),
]


@pytest.mark.parametrize("make", [m for _, m in POOLS], ids=[n for n, _ in POOLS])
def test_pools_over_run_time_sizes(make):
    """Heights and widths from the window's own size (one output) to 7 (several, some
    windows overhanging the padding or the ceil-mode edge): one symbolic kernel, never
    specialized, the interpreter's values."""
    x = relay.var("x", shape=(A(), 2, A(), A()), dtype="float32")
    exe, runs, vm, interp = _build([x], make(x))
    assert dynamic_kernel_counts(exe.kernels) == {"symbolic": 1, "specialized": 0}
    r = np.random.default_rng(1)
    for shape in ((1, 2, 3, 3), (2, 2, 7, 4), (1, 2, 4, 7), (1, 2, 5, 5), (0, 2, 4, 4)):
        _agree(vm, interp, r.standard_normal(shape).astype("float32"), exact=False)
    assert runs[0]._fallback is None


def test_pool_window_larger_than_the_input_raises():
    """A window past the input (no output position) breaks the positive-extent condition:
    the call runs per shape and raises as the interpreter does; sizes that fit still run the
    symbolic kernel."""
    x = relay.var("x", shape=(1, 1, A(), A()), dtype="float32")
    exe, runs, vm, interp = _build([x], relay.nn.max_pool2d(x, (3, 3)))
    assert any(c[0] == "greater" for c in runs[0].conditions)
    small = np.zeros((1, 1, 2, 5), "float32")
    with pytest.raises(Exception):  # noqa: PT011 - the interpreter's own error
        interp(small)
    with pytest.raises(Exception):  # noqa: PT011
        vm.run(small)
    _agree(vm, interp, np.ones((1, 1, 3, 3), "float32"))


def test_adaptive_pool_of_an_empty_axis_runs_per_shape():
    """An adaptive pool of an empty axis breaks the kernel's positive-size condition: that
    call goes the per-shape way, as before; sizes below the output size (bins that share an
    input) run the symbolic kernel."""
    x = relay.var("x", shape=(1, 1, A(), A()), dtype="float32")
    exe, runs, vm, interp = _build([x], relay.nn.adaptive_avg_pool2d(x, (3, 3)))
    assert "greater" in {c[0] for c in runs[0].conditions}
    for shape in ((1, 1, 1, 1), (1, 1, 2, 5), (1, 1, 7, 3)):
        _agree(vm, interp, np.random.default_rng(2).standard_normal(shape).astype("float32"),
               exact=False)
    assert runs[0]._fallback is None
    # (the empty axis: not this kernel's shape; the per-shape path's static pool, which
    # cannot pool nothing natively, takes it)
    assert runs[0]._shapes_for(((1, 1, 0, 4),)) is None
    assert runs[0]._shapes_for(((1, 1, 1, 4),)) is not None


@pytest.mark.parametrize("make", [
    lambda x: relay.nn.max_pool3d(x, (2, 2, 2), strides=(2, 2, 2), ceil_mode=True),
    lambda x: relay.nn.avg_pool3d(x, (2, 1, 3), padding=(1, 0, 1), count_include_pad=False),
    lambda x: relay.nn.adaptive_avg_pool3d(x, (2, 1, 2)),
], ids=["max3d_ceil", "avg3d_pad", "adaptive_avg3d"])
def test_3d_pools_over_run_time_sizes(make):
    x = relay.var("x", shape=(A(), 1, A(), A(), A()), dtype="float32")
    exe, runs, vm, interp = _build([x], make(x))
    assert dynamic_kernel_counts(exe.kernels) == {"symbolic": 1, "specialized": 0}
    r = np.random.default_rng(3)
    for shape in ((1, 1, 2, 3, 3), (2, 1, 5, 3, 4), (1, 1, 3, 4, 5)):
        _agree(vm, interp, r.standard_normal(shape).astype("float32"), exact=False)
    assert runs[0]._fallback is None


@pytest.mark.parametrize("make", [
    lambda x: relay.split(x, [1, 3], axis=0).astuple(),
    lambda x: relay.sliding_window(x, 0, [2, 3], [1, 1]),
], ids=["split_indices", "sliding_window"])
def test_pieces_and_windows_over_a_run_time_axis(make):
    """The last piece of a split at indices and the count of windows are expressions of the
    size; the size must reach the last index / fit a window (a shape condition: a shorter
    input raises, as the interpreter does)."""
    x = relay.var("x", shape=(A(), 3), dtype="float32")
    exe, runs, vm, interp = _build([x], make(x))
    assert dynamic_kernel_counts(exe.kernels) == {"symbolic": 1, "specialized": 0}
    assert runs[0].conditions
    for n in (3, 4, 8):
        _agree(vm, interp, np.arange(n * 3, dtype="float32").reshape(n, 3))
    assert runs[0]._fallback is None
    short = np.zeros((1, 3), "float32")
    with pytest.raises(Exception):  # noqa: PT011 - the interpreter's own error
        interp(short)
    with pytest.raises(Exception):  # noqa: PT011
        vm.run(short)


@pytest.mark.parametrize("make", [
    lambda x: relay.nn.upsampling(x, 2, 3, method="bilinear", align_corners=True),
    lambda x: relay.nn.upsampling(x, 2, 2),
    lambda x: relay.image.resize2d(x, (5, 3), method="cubic"),
    lambda x: relay.image.resize2d(x, (4, 7), method="nearest_neighbor",
                                   coordinate_transformation_mode="asymmetric",
                                   rounding_method="floor"),
], ids=["upsampling_bilinear", "upsampling_nearest", "resize_cubic", "resize_nearest"])
def test_resizes_over_run_time_sizes(make):
    """Upsampling (an output of twice / three times the size) and resizes to a fixed size of
    inputs 1x1 up to 6x5: one symbolic kernel, the interpreter's values."""
    x = relay.var("x", shape=(A(), 2, A(), A()), dtype="float32")
    exe, runs, vm, interp = _build([x], make(x))
    assert dynamic_kernel_counts(exe.kernels) == {"symbolic": 1, "specialized": 0}
    r = np.random.default_rng(4)
    for shape in ((1, 2, 1, 1), (2, 2, 3, 4), (1, 2, 6, 5)):
        _agree(vm, interp, r.standard_normal(shape).astype("float32"), exact=False)
    assert runs[0]._fallback is None


@pytest.mark.parametrize("make", [
    lambda x: relay.nn.pad(x, ((0, 0), (1, 0), (2, 1)), pad_value=1.5),
    lambda x: relay.take(x, relay.const(np.array([0, 1, -1, 5], "int32")), axis=1),
    lambda x: relay.take(x, relay.const(np.array([[0, 7], [-1, 2]], "int32")), axis=2,
                         mode="wrap"),
], ids=["pad_value", "take_clip", "take_wrap"])
def test_pad_and_take_over_run_time_sizes(make):
    """Constant padding and gathers (clipped, wrapped indices) of axes of 1 to 6: one symbolic
    kernel, the interpreter's elements."""
    x = relay.var("x", shape=(A(), A(), A()), dtype="float32")
    exe, runs, vm, interp = _build([x], make(x))
    assert dynamic_kernel_counts(exe.kernels) == {"symbolic": 1, "specialized": 0}
    for shape in ((1, 1, 1), (2, 3, 4), (0, 6, 5)):
        _agree(vm, interp, np.random.default_rng(5).standard_normal(shape).astype("float32"))
    assert runs[0]._fallback is None


def test_lrn_over_run_time_channels():
    """``nn.lrn`` over a run-time channel axis (its padded window as expressions of it):
    channels 1, 2, 7 in one kernel."""
    x = relay.var("x", shape=(A(), A(), 2, 2), dtype="float32")
    exe, runs, vm, interp = _build([x], relay.nn.lrn(x, size=5, axis=1))
    assert dynamic_kernel_counts(exe.kernels) == {"symbolic": 1, "specialized": 0}
    for c in (1, 2, 7):
        _agree(vm, interp, np.random.default_rng(c).standard_normal((2, c, 2, 2)).astype(
            "float32"), exact=False)
    assert runs[0]._fallback is None


def test_fifo_buffer_and_cross_entropy_over_run_time_sizes():
    """A FIFO buffer shifted by run-time data lengths (0 to the whole buffer) and a
    cross-entropy averaged over a run-time batch (its size converted)."""
    x, b = relay.var("x", shape=(A(), 3)), relay.var("b", shape=(A(), 3))
    exe, runs, vm, interp = _build([x, b], relay.nn.fifo_buffer(x, b, axis=0))
    assert dynamic_kernel_counts(exe.kernels) == {"symbolic": 1, "specialized": 0}
    r = np.random.default_rng(6)
    for n, m in ((0, 4), (1, 4), (4, 4), (2, 1)):
        _agree(vm, interp, r.standard_normal((n, 3)).astype("float32"),
               r.standard_normal((m, 3)).astype("float32"))
    assert runs[0]._fallback is None
    p, q = relay.var("p", shape=(A(), A())), relay.var("q", shape=(A(), A()))
    exe, runs, vm, interp = _build([p, q], relay.nn.cross_entropy_with_logits(p, q))
    assert dynamic_kernel_counts(exe.kernels) == {"symbolic": 1, "specialized": 0}
    for shape in ((1, 1), (5, 3)):
        _agree(vm, interp, r.standard_normal(shape).astype("float32"),
               r.standard_normal(shape).astype("float32"), exact=False)
    assert runs[0]._fallback is None


def test_layout_transform_back_over_run_time_sizes():
    """NCHW4c -> NCHW of an all-run-time shape: the channels are the outer channels times the
    run-time sub-axis, one kernel for every size (a sub-axis other than 4 too, which the
    interpreter merges the same way)."""
    x = relay.var("x", shape=(A(), A(), A(), A(), A()), dtype="float32")
    exe, runs, vm, interp = _build([x], relay.layout_transform(x, "NCHW4c", "NCHW"))
    assert dynamic_kernel_counts(exe.kernels) == {"symbolic": 1, "specialized": 0}
    for shape in ((1, 1, 1, 1, 4), (2, 3, 2, 1, 4), (0, 2, 2, 2, 4), (1, 2, 2, 2, 3)):
        _agree(vm, interp, np.random.default_rng(7).standard_normal(shape).astype("float32"))
    assert runs[0]._fallback is None


def test_reverse_sequence_and_broadcast_to_over_run_time_sizes():
    """Sequences reversed along a run-time axis (lengths past it clamped); a broadcast of a
    run-time shape to a fixed one takes the sizes as the target's (a condition): a unit
    axis, which broadcasts too, runs per shape with the interpreter's values."""
    x, n = relay.var("x", shape=(A(), A())), relay.var("n", shape=(A(),), dtype="int32")
    exe, runs, vm, interp = _build([x, n], relay.reverse_sequence(x, n, seq_axis=0,
                                                                  batch_axis=1))
    assert dynamic_kernel_counts(exe.kernels) == {"symbolic": 1, "specialized": 0}
    r = np.random.default_rng(8)
    for t, b in ((1, 1), (5, 3), (0, 2)):
        _agree(vm, interp, r.standard_normal((t, b)).astype("float32"),
               r.integers(0, t + 3, (b,)).astype("int32"))
    assert runs[0]._fallback is None
    exe, runs, vm, interp = _build([x], relay.broadcast_to(x, (4, 3)))
    assert dynamic_kernel_counts(exe.kernels) == {"symbolic": 1, "specialized": 0}
    _agree(vm, interp, r.standard_normal((4, 3)).astype("float32"))
    assert runs[0]._fallback is None
    _agree(vm, interp, r.standard_normal((1, 3)).astype("float32"))
    assert runs[0]._fallback is not None

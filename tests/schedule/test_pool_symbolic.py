"""Window pools over run-time sizes on the pool schedule (``schedule/pool_symbolic.py``): the
symbolic stage is tagged for it (``raise_pool.pool_tag``, the one-stage average's count found),
its rule takes it, and one Relay VM kernel agrees with the interpreter at several sizes (1,
window-sized, odd; windows over the padding and the ceil-mode edge)."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, relay, tir
from minitvm.relax.op import nn
from minitvm.relax.transform import LegalizeOps
from minitvm.runtime.vm import VirtualMachine
from minitvm.schedule.prim_func import optimize_prim_func

ANY4 = (relay.Any(),) * 4

# (op, attrs, input shapes): each case's sizes run through one symbolic kernel
CASES = {
    "max 3x3/2 ceil": ("max_pool2d", dict(pool_size=(3, 3), strides=(2, 2), ceil_mode=True),
                       [(1, 2, 3, 3), (2, 3, 8, 11)]),
    "avg 3x3/2 ceil": ("avg_pool2d", dict(pool_size=(3, 3), strides=(2, 2), ceil_mode=True),
                       [(1, 2, 3, 3), (2, 3, 8, 11), (1, 1, 4, 17)]),
    "max 3x3/2 pad1": ("max_pool2d", dict(pool_size=(3, 3), strides=(2, 2), padding=(1, 1)),
                       [(1, 1, 1, 1), (2, 3, 9, 20)]),
    "avg 3x3/1 pad1 incl": ("avg_pool2d", dict(pool_size=(3, 3), strides=(1, 1), padding=(1, 1),
                                               count_include_pad=True),
                            [(1, 1, 1, 1), (1, 2, 3, 3), (2, 3, 9, 20)]),
    "avg 3x3/2 pad1 ceil incl": ("avg_pool2d", dict(pool_size=(3, 3), strides=(2, 2),
                                                    padding=(1, 1), ceil_mode=True,
                                                    count_include_pad=True),
                                 [(1, 1, 1, 1), (2, 3, 10, 19)]),
    "avg 2x2/2": ("avg_pool2d", dict(pool_size=(2, 2), strides=(2, 2)),
                  [(1, 1, 2, 2), (1, 2, 5, 7), (2, 3, 16, 33)]),
    # (the first and last windows hold only padding: the dtype's lowest value)
    "max 2x2/1 pad2": ("max_pool2d", dict(pool_size=(2, 2), strides=(1, 1), padding=(2, 2)),
                       [(1, 1, 1, 1), (1, 2, 3, 5)]),
    "max 2x2/1 dil2": ("max_pool2d", dict(pool_size=(2, 2), strides=(1, 1), dilation=(2, 2)),
                       [(1, 1, 3, 3), (1, 2, 5, 12), (2, 1, 9, 19)]),
    # at column stride 1, windows of 16 taps or more: rows into a row temporary first
    "max 5x5/1 pad2": ("max_pool2d", dict(pool_size=(5, 5), strides=(1, 1), padding=(2, 2)),
                       [(1, 1, 1, 1), (1, 2, 6, 23)]),
    "avg 4x4/1 pad1 incl": ("avg_pool2d", dict(pool_size=(4, 4), strides=(1, 1), padding=(1, 1),
                                               count_include_pad=True),
                            [(1, 1, 2, 3), (2, 2, 9, 20)]),
    # windows of more than 25 taps: rows looped into an accumulator (columns too past 25)
    "max 9x9/1 pad4": ("max_pool2d", dict(pool_size=(9, 9), strides=(1, 1), padding=(4, 4)),
                       [(1, 1, 1, 1), (1, 2, 6, 23)]),
    "avg 7x7/7 ceil": ("avg_pool2d", dict(pool_size=(7, 7), strides=(7, 7), ceil_mode=True),
                       [(1, 1, 7, 7), (2, 1, 15, 66)]),
    "avg 6x6/2 pad2 dil2 incl": ("avg_pool2d", dict(pool_size=(6, 6), strides=(2, 2),
                                                    padding=(2, 2), dilation=(2, 2),
                                                    count_include_pad=True),
                                 [(1, 1, 8, 9), (1, 2, 13, 40)]),
    "max 5x6/2 dil2 pad3": ("max_pool2d", dict(pool_size=(5, 6), strides=(2, 2),
                                               dilation=(2, 2), padding=(3, 3)),
                            [(1, 1, 4, 5), (1, 2, 17, 30)]),
    "max 1x30/1 pad3": ("max_pool2d", dict(pool_size=(1, 30), strides=(1, 1), padding=(0, 3)),
                        [(1, 1, 2, 26), (1, 2, 3, 45)]),
    # column strides past 4: each vector's taps gathered
    "max 3x3/5 pad1": ("max_pool2d", dict(pool_size=(3, 3), strides=(5, 5), padding=(1, 1)),
                       [(1, 1, 1, 1), (1, 2, 9, 60)]),
}


def _pool_mod(op: str, attrs: dict, dims=ANY4, dtype="float32") -> tvm.IRModule:
    """One pool of input dims ``dims`` (run-time sizes by default)."""
    x = relay.var("x", shape=dims, dtype=dtype)
    return tvm.IRModule.from_expr(relay.Function([x], getattr(relay.nn, op)(x, **attrs)))


def _pool_vm(op: str, attrs: dict, dims=ANY4, dtype="float32"):
    """``_pool_mod``'s module and its Relay VM."""
    mod = _pool_mod(op, attrs, dims, dtype)
    return mod, VirtualMachine(relay.vm.compile(mod, target="llvm"), tvm.cpu())


def _run_case(op: str, attrs: dict, shapes, dtype="float32", rank=4, dims=None):
    name = op.replace("2d", "1d") if rank == 3 else op
    _, vm = _pool_vm(name, attrs, dims or ANY4[:rank], dtype)
    rng = np.random.default_rng(0)
    for shape in shapes:
        if dtype.startswith("float"):
            a = rng.standard_normal(shape).astype(dtype)
        else:
            a = rng.integers(-100, 100, shape).astype(dtype)
        ref = relay.create_executor("debug", mod=_pool_mod(name, attrs, shape, dtype)
                                    ).evaluate()(a).numpy()
        got = vm.run(a).numpy()
        assert got.shape == ref.shape, (shape, got.shape, ref.shape)
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6, err_msg=str(shape))


@pytest.mark.parametrize("case", list(CASES))
def test_symbolic_pool_matches_interpreter(case):
    op, attrs, shapes = CASES[case]
    _run_case(op, attrs, shapes)


def test_symbolic_1d_pool():
    _run_case("max_pool2d", dict(pool_size=(3,), strides=(2,), padding=(1,)),
              [(1, 1, 1), (2, 3, 3), (1, 2, 21)], rank=3)


def test_symbolic_1d_pool_of_a_long_window():
    """30 taps at stride 6 (past both limits of the written-out form), the padding counted."""
    _run_case("avg_pool2d", dict(pool_size=(30,), strides=(6,), padding=(1,),
                                 count_include_pad=True),
              [(1, 1, 28), (2, 3, 101)], rank=3)


def test_symbolic_int8_pool():
    _run_case("max_pool2d", dict(pool_size=(3, 3), strides=(2, 2), ceil_mode=True),
              [(1, 2, 3, 3), (2, 3, 8, 11)], dtype="int8")


def test_symbolic_int8_pool_of_a_large_window():
    _run_case("max_pool2d", dict(pool_size=(6, 6), strides=(6, 6), padding=(1, 1)),
              [(1, 1, 4, 4), (1, 2, 13, 70)], dtype="int8")


def _relax_pool(make, dims=None) -> tvm.IRModule:
    """Relax ``main`` of ``make(x)``, ``x`` float32 of ``dims`` (default: run-time N, C, H, W)."""
    dims = dims or [tir.Var(v, "int64") for v in "nchw"]
    x = relax.Var("x", relax.TensorStructInfo(dims, "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            out = bb.emit_output(bb.emit(make(x), "out"))
        bb.emit_func_output(out)
    return bb.get()


def _legal_prim(mod: tvm.IRModule):
    """The one PrimFunc LegalizeOps makes of ``mod``'s op."""
    legal = LegalizeOps()(mod)
    (prim,) = [legal[g] for g in legal.functions if g.name_hint != "main"]
    return prim


def test_large_windows_and_strides_take_the_pool_schedule():
    """A window of more taps than the unrolled form writes out, or of 16 or more at column
    stride 1, combines its rows into a row temporary first (overlapping columns: 9x9 / 1,
    5x5 / 1; not 3x3) or loops its rows into a vector of
    accumulators (1x30, 7x7 / 7); a column stride past 4 gathers: none is left to the generic
    reduction."""
    for attrs, form in ((dict(pool_size=(9, 9), strides=(1, 1), padding=(4, 4)), "pool_row"),
                        (dict(pool_size=(1, 30), strides=(1, 1)), "pool_acc"),
                        (dict(pool_size=(7, 7), strides=(7, 7)), "pool_acc"),
                        (dict(pool_size=(5, 5), strides=(1, 1), padding=(2, 2)), "pool_row"),
                        (dict(pool_size=(3, 3), strides=(1, 1), padding=(1, 1)), None),
                        (dict(pool_size=(2, 2), strides=(6, 6)), None)):
        prim = _legal_prim(_relax_pool(lambda x, attrs=attrs: nn.max_pool2d(x, **attrs)))
        text = str(optimize_prim_func(prim))
        assert "T.block" not in text and "T.vectorized" in text, attrs
        assert [f for f in ("pool_row", "pool_acc") if f in text] == ([form] if form else []), \
            attrs


def test_run_time_channels_or_batch_only():
    """Static planes with a run-time channel count (the pool schedule's symbolic form, its
    plane sizes constants) or batch (the static schedule once per image)."""
    attrs = dict(pool_size=(3, 3), strides=(2, 2), padding=(1, 1))
    _run_case("avg_pool2d", {**attrs, "count_include_pad": True},
              [(1, 1, 9, 20), (1, 5, 9, 20)], dims=(1, relay.Any(), 9, 20))
    _run_case("max_pool2d", attrs, [(1, 3, 9, 20), (4, 3, 9, 20)],
              dims=(relay.Any(), 3, 9, 20))


def test_symbolic_max_pool_border_of_minus_inf():
    """A border window whose inputs are all -inf gives the padding's value (the dtype's lowest
    finite value), as the compute does: the clamped border taps repeat -inf, the padding joins."""
    mod, vm = _pool_vm("max_pool2d", dict(pool_size=(3, 3), strides=(2, 2), padding=(1, 1),
                                          ceil_mode=True))
    a = np.full((1, 1, 6, 7), -np.inf, "float32")
    a[0, 0, 2:4, 2:4] = 1.0
    ref = relay.create_executor("debug", mod=mod).evaluate()(a).numpy()
    got = vm.run(a).numpy()
    assert got[0, 0, 0, 0] == np.finfo("float32").min
    np.testing.assert_array_equal(got, ref)


def test_symbolic_pool_propagates_nan():
    _, vm = _pool_vm("max_pool2d", dict(pool_size=(3, 3), strides=(2, 2), padding=(1, 1)))
    a = np.zeros((1, 1, 9, 20), "float32")
    a[0, 0, 4, 10] = np.nan  # (an interior window's tap)
    a[0, 0, 0, 0] = np.nan  # (a border window's)
    got = vm.run(a).numpy()[0, 0]
    assert np.isnan(got[2, 5]) and np.isnan(got[0, 0]) and not np.isnan(got[3, 2])


def test_symbolic_looped_max_pool_propagates_nan():
    """The accumulated form (a 9x9 window) keeps a NaN in every window holding it, interior
    and border alike, and nowhere else."""
    _, vm = _pool_vm("max_pool2d", dict(pool_size=(9, 9), strides=(1, 1), padding=(4, 4)))
    a = np.zeros((1, 1, 11, 30), "float32")
    a[0, 0, 5, 15] = np.nan
    got = vm.run(a).numpy()[0, 0]
    want = np.zeros(got.shape, bool)
    want[1:10, 11:20] = True
    np.testing.assert_array_equal(np.isnan(got), want)


def test_relax_symbolic_mean_takes_the_pool_schedule():
    """LegalizeOps' sum and division stages over run-time sizes become one mean (the count,
    padding included, found) on the pool schedule: no block left, the plane loop parallel, the
    interior in vectors; the built function agrees with the reference at several sizes."""
    def make(x):
        return nn.avg_pool2d(x, (3, 3), (2, 2), padding=(1, 1), ceil_mode=True,
                             count_include_pad=True)

    mod = _relax_pool(make)
    text = str(optimize_prim_func(_legal_prim(mod)))
    assert "T.block" not in text and "T.parallel(n * c" in text and "T.vectorized" in text
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    rng = np.random.default_rng(1)
    for shape in [(1, 1, 1, 1), (1, 2, 3, 3), (2, 3, 10, 19)]:
        a = rng.standard_normal(shape).astype("float32")
        xs = relay.var("x", shape=shape, dtype="float32")
        ref = relay.create_executor("debug", mod=tvm.IRModule.from_expr(relay.Function(
            [xs], relay.nn.avg_pool2d(xs, (3, 3), (2, 2), padding=(1, 1), ceil_mode=True,
                                      count_include_pad=True)))).evaluate()(a).numpy()
        got = vm["main"](tvm.nd.array(a)).numpy()
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6, err_msg=str(shape))


def test_symbolic_pool_with_fused_epilogue():
    """A pool and the elementwise ops after it (one fused Relay kernel over run-time sizes)."""
    x = relay.var("x", shape=ANY4, dtype="float32")
    y = relay.nn.relu(relay.nn.max_pool2d(x, (3, 3), (2, 2), padding=(1, 1)) - relay.const(0.5))
    mod = tvm.IRModule.from_expr(relay.Function([x], y))
    vm = VirtualMachine(relay.vm.compile(mod, target="llvm"), tvm.cpu())
    rng = np.random.default_rng(2)
    for shape in [(1, 1, 1, 1), (2, 3, 9, 20)]:
        a = rng.standard_normal(shape).astype("float32")
        ref = relay.create_executor("debug", mod=mod).evaluate()(a).numpy()
        np.testing.assert_allclose(vm.run(a).numpy(), ref, rtol=1e-6, atol=1e-6)


def _adaptive_ref(a: np.ndarray, outs) -> np.ndarray:
    """Adaptive average pooling of the trailing axes of ``a`` to ``outs`` (numpy)."""
    out = a
    for q, o in enumerate(outs):
        ax = a.ndim - len(outs) + q
        n = out.shape[ax]
        cells = [np.take(out, range((i * n) // o, -(-((i + 1) * n) // o)), axis=ax).mean(
            axis=ax, keepdims=True) for i in range(o)]
        out = np.concatenate(cells, axis=ax)
    return out


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_relax_symbolic_adaptive_mean_reduces_the_widest_bin(nd):
    """LegalizeOps' adaptive mean over run-time sizes reduces ``ceil(n / o) + 1`` taps per
    output (``topi.pooling_nd.widest_bin``), not the whole axis (400 taps per output of a
    20x20 plane pooled to 7x7, where 16 do), masked to each bin; the schedule sums each bin
    over its bounds, unmasked. Sizes 1, multiples of the output and not."""
    dims = [tir.Var(v, "int64") for v in "dhw"[3 - nd:]]
    op = {1: nn.adaptive_avg_pool1d, 2: nn.adaptive_avg_pool2d, 3: nn.adaptive_avg_pool3d}[nd]
    outs = (3,) * nd
    mod = _relax_pool(lambda x: op(x, outs), [1, 2, *dims])
    prim = _legal_prim(mod)
    text = str(prim)
    assert "T.min(" in text and text.count("// T.int64(3) + T.int64(1))") >= nd
    fast = str(optimize_prim_func(prim))
    # each bin summed over its own bounds (``raise_pool.bins_tag``), 3-D too
    assert "bin_acc" in fast and "T.Select" not in fast and "T.block" not in fast
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    rng = np.random.default_rng(3)
    for size in (1, 6, 7):
        a = rng.standard_normal((1, 2, *(size,) * nd)).astype("float32")
        np.testing.assert_allclose(vm["main"](tvm.nd.array(a)).numpy(), _adaptive_ref(a, outs),
                                   rtol=1e-5, atol=1e-6)


def test_relax_symbolic_adaptive_mean_3d_of_uneven_sizes():
    """A 3-D adaptive mean over run-time depth, height and width each of its own size and
    output count (bins of different widths per axis, a depth of 1), two images of three
    channels: each (image, channel, depth bin) sums its own bins."""
    outs = (2, 3, 1)
    mod = _relax_pool(lambda x: nn.adaptive_avg_pool3d(x, outs),
                      [2, 3, *(tir.Var(v, "int64") for v in "dhw")])
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    rng = np.random.default_rng(4)
    for shape in [(2, 3, 5, 7, 4), (2, 3, 1, 3, 9), (2, 3, 2, 11, 1)]:
        a = rng.standard_normal(shape).astype("float32")
        np.testing.assert_allclose(vm["main"](tvm.nd.array(a)).numpy(), _adaptive_ref(a, outs),
                                   rtol=1e-5, atol=1e-6, err_msg=str(shape))

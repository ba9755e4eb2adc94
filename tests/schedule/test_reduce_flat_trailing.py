"""Reductions over a buffer's whole trailing dimensions (a global pool over 7x7, 28x28 or
32x32) run over those dimensions flattened: vector partial sums over
49 contiguous floats instead of scalar rows of 7, 49 vectors instead of rows of 28 with a
12-float scalar tail each (``schedule.lower._flat_trailing_reduction``)."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.contrib import graph_executor
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import walk_stmts


def _build(shape, make):
    x = relay.var("x", shape=shape)
    mod = tvm.IRModule.from_expr(relay.Function([x], make(x)))
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm")
    return lib


def _run(lib, xv):
    g = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    g.set_input("x", xv)
    g.run()
    return g.get_output(0).numpy()


def _flat_views(lib) -> list:
    names = []
    for k in lib.get_lib().kernels.values():
        if k.prim_func is not None:
            names += [s.buffer.name for s in walk_stmts(k.prim_func.body)
                      if isinstance(s, S.DeclBuffer) and s.buffer.name.endswith("_flat")]
    return names


CASES = [
    ((1, 64, 7, 7), lambda x: relay.nn.global_avg_pool2d(x),
     lambda v: v.mean(axis=(2, 3), keepdims=True), True),
    ((2, 5, 7, 7), lambda x: relay.nn.global_max_pool2d(x),
     lambda v: v.max(axis=(2, 3), keepdims=True), True),
    ((3, 4, 5, 3), lambda x: relay.sum(x, axis=(2, 3)), lambda v: v.sum(axis=(2, 3)), False),
    ((2, 3, 6, 5, 7), lambda x: relay.mean(x, axis=(2, 3, 4)),
     lambda v: v.mean(axis=(2, 3, 4)), True),
    ((1, 24, 28, 28), lambda x: relay.nn.global_avg_pool2d(x),
     lambda v: v.mean(axis=(2, 3), keepdims=True), True),
    ((2, 8, 5, 20), lambda x: relay.sum(x, axis=(2, 3)), lambda v: v.sum(axis=(2, 3)), True),
    # the last axis whole vectors: flattened too (one stream for the independent accumulators)
    ((2, 3, 4, 32), lambda x: relay.sum(x, axis=(2, 3)), lambda v: v.sum(axis=(2, 3)), True),
    # not trailing: unchanged
    ((2, 7, 7, 6), lambda x: relay.sum(x, axis=(1, 2)), lambda v: v.sum(axis=(1, 2)), False),
]


@pytest.mark.parametrize("shape, make, ref, flat", CASES)
def test_matches_numpy(shape, make, ref, flat, rng):
    xv = rng.standard_normal(shape).astype("float32")
    xv.flat[5] = -np.inf if flat else xv.flat[5]
    lib = _build(shape, make)
    want = ref(xv.astype("float64")).astype("float32")
    np.testing.assert_allclose(_run(lib, xv), want, rtol=1e-5, atol=1e-5)
    if flat:
        assert _flat_views(lib)
    elif shape[-1] >= 8:
        assert not _flat_views(lib)


def test_nan_propagates_through_the_flat_max(rng):
    xv = rng.standard_normal((1, 4, 7, 7)).astype("float32")
    xv[0, 2, 6, 6] = np.nan  # the scalar tail of the flattened 49
    xv[0, 1, 0, 3] = np.nan  # inside a vector
    out = _run(_build(xv.shape, relay.nn.global_max_pool2d), xv)[:, :, 0, 0]
    assert np.isnan(out[0, 1]) and np.isnan(out[0, 2])
    np.testing.assert_array_equal(out[0, [0, 3]], xv[0, [0, 3]].max(axis=(1, 2)))


EXPR_CASES = [
    # a variance's (x - mean)^2 over a group norm's 16x8x8 group: the squared difference reads
    # x at the reduction axes and the mean away from them, so it flattens too
    ((2, 8, 16, 8, 8), lambda x: relay.variance(x, axis=(2, 3, 4)),
     lambda v: v.var(axis=(2, 3, 4)), True),
    ((1, 8, 4, 64, 64), lambda x: relay.variance(x, axis=(2, 3, 4), keepdims=True),
     lambda v: v.var(axis=(2, 3, 4), keepdims=True), True),
    # a product of two tensors (the transpose is a kernel of its own): both loads flattened
    ((2, 3, 9, 9), lambda x: relay.sum(x * relay.transpose(x, (0, 1, 3, 2)), axis=(2, 3)),
     lambda v: (v * v.transpose(0, 1, 3, 2)).sum(axis=(2, 3)), True),
]


@pytest.mark.parametrize("shape, make, ref, flat", EXPR_CASES)
def test_expression_sources(shape, make, ref, flat, rng):
    xv = rng.standard_normal(shape).astype("float32") + 3.0
    lib = _build(shape, make)
    want = ref(xv.astype("float64")).astype("float32")
    np.testing.assert_allclose(_run(lib, xv), want, rtol=2e-5, atol=1e-5)
    # the variance kernel's own flat view, not only its mean's
    assert len(_flat_views(lib)) >= 2


@pytest.mark.parametrize("other", ["in order", "swapped", "an index as a value"])
def test_a_load_across_the_axes_keeps_the_rows(other):
    """One load at the reduction axes in the other order, or an axis read outside a load: no
    flat source (its rows are not the other load's), the reduction keeps its nest."""
    from minitvm import te
    from minitvm.schedule.lower import lower_te
    from minitvm.tir import expr as E

    x = te.placeholder((2, 3, 9, 9), name="x")
    y = te.placeholder((2, 3, 9, 9), name="y")
    h, w = te.reduce_axis((0, 9), name="h"), te.reduce_axis((0, 9), name="w")

    def term(b, c):
        if other == "swapped":
            return y[b, c, w, h]
        if other == "an index as a value":
            return E.Cast("float32", h.var)
        return y[b, c, h, w]

    out = te.compute((2, 3), lambda b, c: te.sum(x[b, c, h, w] * term(b, c), axis=[h, w]))
    text = str(lower_te([x, y], [out], "f")[0])
    assert ("_flat" in text) == (other == "in order")


@pytest.mark.parametrize("shape", [(1, 128, 8, 8), (2, 32, 12, 10)])
def test_group_norm_matches_numpy(shape, rng):
    xv = rng.standard_normal(shape).astype("float32")
    gamma = rng.standard_normal(shape[1]).astype("float32")
    beta = rng.standard_normal(shape[1]).astype("float32")
    lib = _build(shape, lambda x: relay.nn.group_norm(x, relay.const(gamma), relay.const(beta),
                                                      num_groups=8, epsilon=1e-5))
    g = xv.astype("float64").reshape(shape[0], 8, -1)
    norm = ((g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + 1e-5))
    want = norm.reshape(shape) * gamma[:, None, None] + beta[:, None, None]
    np.testing.assert_allclose(_run(lib, xv), want, rtol=1e-4, atol=1e-4)


def _window_stores(lib) -> int:
    """Stores into the output in the kernels' biggest straight-line run (an unrolled window
    writes its output once per tap)."""
    most = 0
    for k in lib.get_lib().kernels.values():
        if k.prim_func is None:
            continue
        for s in walk_stmts(k.prim_func.body):
            if isinstance(s, S.SeqStmt):
                most = max(most, sum(isinstance(c, S.BufferStore) for c in s.seq))
    return most


@pytest.mark.parametrize("flat_vectors", [True, False])
def test_a_flat_run_of_two_vectors_is_not_an_unrolled_window(flat_vectors, monkeypatch, rng):
    """A 7x7 global pool's 49 contiguous floats (two vectors and more): vector partial sums
    along them, not the short-reduction window unrolled across 16 channels (49 gathered
    loads of 16 lanes, a stride of 49: 9x the LLVM time, 2x the run time on ResNet-50's
    2048-channel pool); ``FLAT_VECTORS`` off gives the window back, the same numbers."""
    from minitvm.backend import kernel_cache
    from minitvm.schedule import reduction_loops

    monkeypatch.setattr(reduction_loops, "FLAT_VECTORS", flat_vectors)
    kernel_cache.clear_cache()
    xv = rng.standard_normal((1, 64, 7, 7)).astype("float32")
    lib = _build(xv.shape, relay.nn.global_avg_pool2d)
    kernel_cache.clear_cache()
    np.testing.assert_allclose(_run(lib, xv), xv.mean(axis=(2, 3), keepdims=True),
                               rtol=1e-5, atol=1e-5)
    assert (_window_stores(lib) >= 49) == (not flat_vectors)


def test_a_run_with_a_long_scalar_tail_keeps_the_window(rng):
    """6x6: two vectors and a tail of 4, longer than its two vectors: per output four scalar
    steps (a max's NaN-tested ones ran 1.77x slower), so the window across channels stays."""
    xv = rng.standard_normal((1, 32, 6, 6)).astype("float32")
    lib = _build(xv.shape, relay.nn.global_max_pool2d)
    np.testing.assert_array_equal(_run(lib, xv), xv.max(axis=(2, 3), keepdims=True))
    assert _window_stores(lib) >= 36


LAST_AXIS_CASES = [
    # NHWC layer norm's sums over 64 channels: four vectors per output, contiguous
    ((1, 6, 20, 64), lambda x: relay.sum(x, axis=[3], keepdims=True),
     lambda v: v.sum(axis=3, keepdims=True), True),
    ((2, 5, 48), lambda x: relay.max(x, axis=[2]), lambda v: v.max(axis=2), True),
    ((1, 4, 24, 32), lambda x: relay.mean(x * x, axis=[3]), lambda v: (v * v).mean(axis=3),
     True),
    # 40: two vectors and a tail of 8, longer than its two vectors: the window stays
    ((1, 3, 20, 40), lambda x: relay.sum(x, axis=[3]), lambda v: v.sum(axis=3), False),
    # the axis in the middle: not contiguous, the window stays
    ((2, 64, 20), lambda x: relay.sum(x, axis=[1]), lambda v: v.sum(axis=1), False),
]


@pytest.mark.parametrize("shape, make, ref, vectors", LAST_AXIS_CASES)
def test_a_run_along_the_last_axis_takes_partial_sums(shape, make, ref, vectors, rng):
    """A one-axis reduction along the last (contiguous) axis of two vectors or more sums
    vectors along it, as a flattened run does, instead of the window unrolled across 16
    outputs (one gathered load of 16 lanes at the run's stride per tap: ConvNeXt's 64-channel
    layer norm at 56x56 took 7.5 CPU s in LLVM, 0.13 along the run, and ran 187 -> 75 us)."""
    xv = rng.standard_normal(shape).astype("float32")
    lib = _build(shape, make)
    want = ref(xv.astype("float64")).astype("float32")
    np.testing.assert_allclose(_run(lib, xv), want, rtol=1e-5, atol=1e-5)
    taps = shape[1] if shape == (2, 64, 20) else shape[-1]
    assert (_window_stores(lib) >= taps) == (not vectors)


@pytest.mark.parametrize("read", ["last", "as a value", "twice", "not last"])
def test_the_last_axis_read_elsewhere_keeps_the_window(read):
    """The axis read outside a load's last index (an index as a value, a second index, an
    earlier index): not a contiguous run, the reduction keeps its window (no partial sums)."""
    from minitvm import te
    from minitvm.schedule.lower import lower_te
    from minitvm.tir import expr as E

    x = te.placeholder((2, 8, 64), name="x")
    y = te.placeholder((2, 64, 64), name="y")
    k = te.reduce_axis((0, 64), name="k")

    def term(b, r):
        if read == "as a value":
            return x[b, r, k] * E.Cast("float32", k.var)
        if read == "twice":
            return y[b, k, k]
        if read == "not last":
            return y[b, k, r]
        return x[b, r, k] * x[b, r, k]

    out = te.compute((2, 8), lambda b, r: te.sum(term(b, r), axis=[k]))
    text = str(lower_te([x, y], [out], "f")[0])
    assert ("acc" in text) == (read == "last")


def test_relax_layer_norm_over_a_symbolic_batch(rng):
    """The case that found it: a Relax layer norm over NHWC channels with a symbolic batch,
    built once, right at two batch sizes."""
    from minitvm import relax, tir

    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo((tir.Var("n", "int64"), 5, 20, 64), "float32"))
    g = relax.Var("g", relax.TensorStructInfo((64,), "float32"))
    b = relax.Var("b", relax.TensorStructInfo((64,), "float32"))
    with bb.function("main", [x, g, b]):
        with bb.dataflow():
            out = bb.emit_output(bb.emit(relax.op.nn.layer_norm(x, g, b, axes=[3])))
        bb.emit_func_output(out)
    vm = relax.VirtualMachine(relax.build(bb.get(), "llvm"), tvm.cpu())
    gv, bv = rng.standard_normal(64).astype("float32"), rng.standard_normal(64).astype("float32")
    for n in (1, 3):
        xv = rng.standard_normal((n, 5, 20, 64)).astype("float32")
        d = xv.astype("float64")
        want = (d - d.mean(-1, keepdims=True)) / np.sqrt(d.var(-1, keepdims=True) + 1e-5)
        got = vm["main"](*(tvm.nd.array(a) for a in (xv, gv, bv))).numpy()
        np.testing.assert_allclose(got, want * gv + bv, rtol=1e-4, atol=1e-4)

"""Relay VM symbolic kernels of the ops a lowering rule writes (``vm.symbolic``'s
``SYMBOLIC_RULE_TAGS``): scans, top-k / sort / argsort, unique, all-class NMS, valid counts and
box NMS, TFLite's multiclass NMS, and RoI pools / aligns compile ONE kernel for every batch
(or box count); at each size it gives the bits of the static kernel that the per-shape path compiles for that size, and the interpreter's values. Their
records in the disk cache serve a warm compile without lowering anything again."""

import numpy as np
import pytest
from vm_disk_cache import forget_compiled as _forget
from vm_disk_cache import own_disk_cache

import minitvm as tvm
from minitvm import relay
from minitvm.backend import parallel_compile
from minitvm.relay.backend.vm import exe_cache, saved, symbolic
from minitvm.relay.backend.vm.kernels import dynamic_kernel_counts
from minitvm.relay.backend.vm.symbolic import SymbolicKernel
from minitvm.relay.expr import bind
from minitvm.runtime.vm import VirtualMachine
from minitvm.topi.multiclass_nms import multiclass_nms_np
from minitvm.topi.reference.vision import get_valid_counts_np, non_max_suppression_np

A = relay.Any


def _rng(n):
    return np.random.default_rng(n)


def _scan():
    """Rows scanned along a static axis (a run-time count of rows, some left over from the
    blocks of 8), and an exclusive integer product down the dynamic rows."""
    x = relay.var("x", shape=(A(), 5), dtype="float32")
    y = relay.var("y", shape=(A(), 4), dtype="int32")
    outs = [relay.cumsum(x, axis=1), relay.cumprod(y, axis=0, exclusive=True, dtype="int64")]

    def args(b):
        r = _rng(b)
        return [r.standard_normal((b * 3, 5)).astype("float32"),
                r.integers(-3, 4, (b, 4)).astype("int32")]

    def want(x, y):
        prod = np.cumprod(np.concatenate([np.ones((1, 4), "int64"), y[:-1]]), axis=0)
        return [np.cumsum(x, axis=1), prod]

    return [x, y], relay.Tuple(outs), args, want


def _selection():
    """Top-k along a static axis of rows with a dynamic batch (ties and a NaN in the data:
    numpy's stable order, NaN last)."""
    x = relay.var("x", shape=(A(), 7), dtype="float32")

    def args(b):
        xv = _rng(b).integers(-2, 3, (b, 7)).astype("float32")
        xv[0, 0] = np.nan
        return [xv]

    def want(x):
        idx = np.argsort(x, axis=1, kind="stable")[:, :3].astype("int32")
        return [np.take_along_axis(x, idx, axis=1), idx]

    t = relay.topk(x, k=3, axis=1, ret_type="both", is_ascend=True)
    return [x], relay.Tuple([t[0], t[1]]), args, want


def _unique():
    x = relay.var("x", shape=(A(),), dtype="int32")
    u = relay.unique(x, is_sorted=True, return_counts=True)
    return [x], relay.Tuple([u[0], u[1], u[2], u[3]]), \
        lambda b: [_rng(b).integers(0, 3 * b, (b * 4,)).astype("int32")], None


def _all_class_nms():
    boxes = relay.var("boxes", shape=(A(), 10, 4), dtype="float32")
    scores = relay.var("scores", shape=(A(), 3, 10), dtype="float32")
    out = relay.vision.all_class_non_max_suppression(
        boxes, scores, relay.const(5, "int64"), relay.const(0.5, "float32"),
        relay.const(0.1, "float32"))

    def args(b):
        r = _rng(b)
        bx = r.random((b, 10, 4)).astype("float32") * 0.5
        bx[..., 2:] += 0.4
        return [bx, r.random((b, 3, 10)).astype("float32")]

    return [boxes, scores], relay.Tuple([out[0], out[1]]), args, None


def _boxes(b: int, n: int, seed: int = 0) -> np.ndarray:
    """[b, n, 6] rows (id, score, x1, y1, x2, y2): ids -1..2, scores in quarters (ties), some
    corners given the other way round, and two identical boxes."""
    r = _rng(seed * 1000 + b * 100 + n)
    x = np.zeros((b, n, 6), "float32")
    x[..., 0] = r.integers(-1, 3, (b, n))
    x[..., 1] = np.round(r.random((b, n)) * 4) / 4
    x[..., 2:4] = r.random((b, n, 2)) * 4
    x[..., 4:6] = x[..., 2:4] + (r.random((b, n, 2)) - 0.2) * 3
    if n > 3:
        x[0, 2, 2:] = x[0, 1, 2:]
    return x


def _box_nms():
    """get_valid_counts, then NMS of its rows (indices and counts), rows and boxes of dynamic
    counts: the numpy references' exact values."""
    d = relay.var("d", shape=(A(), A(), 6), dtype="float32")
    gv = relay.vision.get_valid_counts(d, 0.3)
    nms = relay.vision.non_max_suppression(gv[1], gv[0], gv[2], relay.const(4, "int32"), 0.45)

    def want(x):
        c, o, i = get_valid_counts_np(x, float(np.float32(0.3)))  # (the op's float32 consts)
        return [c, *non_max_suppression_np(o, c, i, 4, float(np.float32(0.45)))]

    return [d], relay.Tuple([gv[0], nms[0], nms[1]]), lambda b: [_boxes(b, 3 * b + 2)], want


def _roi(op):
    """RoI pool (a rule's stage) or RoI align (a plain te reduction over the boxes), images and
    boxes both of a dynamic count."""
    d = relay.var("d", shape=(A(), 2, 8, 8), dtype="float32")
    r = relay.var("r", shape=(A(), 5), dtype="float32")
    out = relay.vision.roi_pool(d, r, (2, 2), 0.5) if op == "pool" else \
        relay.vision.roi_align(d, r, (2, 2), 0.5, 1)

    def args(n):
        g = _rng(n)
        rois = np.zeros((2 * n + 1, 5), "float32")
        rois[:, 0] = g.integers(0, n, 2 * n + 1)
        rois[:, 1:3] = g.random((2 * n + 1, 2)) * 6 - 1
        rois[:, 3:5] = rois[:, 1:3] + g.random((2 * n + 1, 2)) * 5
        return [g.standard_normal((n, 2, 8, 8)).astype("float32"), rois]

    return [d, r], out, args, None


def _multiclass_nms():
    """TFLite's multiclass NMS of a run-time box count (a background column skipped; ties in
    one class's scores; at most 3 a class of 8 detections)."""
    b = relay.var("b", shape=(1, A(), 4), dtype="float32")
    s = relay.var("s", shape=(1, A(), 5), dtype="float32")

    def args(n):
        r = _rng(n)
        bx = (r.random((1, 6 * n, 4)) * 10).astype("float32")
        bx[..., 2:] += 3
        sc = r.random((1, 6 * n, 5)).astype("float32")
        sc[0, :3 * n, 2] = 0.9
        return [bx, sc]

    def want(bx, sc):
        return [multiclass_nms_np(bx, sc, 8, 3, 0.5, 0.3, 1)]

    return [b, s], relay.vision.multiclass_nms(b, s, 8, 3, 0.5, 0.3, 1), args, want


# family -> (the model, its symbolic kernels)
FAMILIES = {"multiclass_nms": (_multiclass_nms, 1), "scan": (_scan, 2), "selection": (_selection, 1), "unique": (_unique, 1),
            "all_class_nms": (_all_class_nms, 1), "box_nms": (_box_nms, 2), "roi_pool": (lambda: _roi("pool"), 1),
            "roi_align": (lambda: _roi("align"), 1)}


def _outputs(v):
    return [o.numpy() for o in v] if isinstance(v, tvm.runtime.container.ADT) else [v.numpy()]


def _static_module(params, body, args):
    """The function with the static shapes of ``args``: what the per-shape path compiles."""
    new = [relay.var(p.name_hint, shape=a.shape, dtype=str(a.dtype))
           for p, a in zip(params, args, strict=True)]
    return tvm.IRModule.from_expr(relay.Function(new, bind(body, dict(zip(params, new,
                                                                          strict=True)))))


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_one_symbolic_kernel_per_family_serves_every_size(family):
    """One compile, sizes 1 and 3 (no kernel specialized): the interpreter's values (its numpy
    references; integer results exactly), and numpy's own bits for scans and top-k."""
    make, kernels = FAMILIES[family]
    params, body, args_of, want_of = make()
    mod = tvm.IRModule.from_expr(relay.Function(params, body))
    exe = relay.vm.compile(mod, target="llvm")
    assert dynamic_kernel_counts(exe.kernels) == {"symbolic": kernels, "specialized": 0}
    vm = VirtualMachine(exe, tvm.cpu())
    interp = relay.create_executor("debug", mod=mod).evaluate()
    for b in (1, 3):
        args = args_of(b)
        got = _outputs(vm.run(*args))
        if want_of is not None:
            for g, w in zip(got, want_of(*args), strict=True):
                assert g.dtype == w.dtype
                np.testing.assert_array_equal(g, w)
        for g, r in zip(got, _outputs(interp(*args)), strict=True):
            np.testing.assert_allclose(g, r, rtol=1e-5, atol=1e-6)
    # every size ran on the symbolic kernels: none specialized a shape
    assert all(k.run._fallback is None for k in exe.kernels if isinstance(k.run, SymbolicKernel))


@pytest.mark.parametrize("family", ["all_class_nms", "multiclass_nms", "roi_align", "roi_pool"])
def test_symbolic_kernel_gives_the_per_shape_kernels_bits(family):
    """Where numpy's values are not bit-exact references (float box arithmetic), the symbolic
    kernel's bits are those of the static kernel the per-shape path compiles for the size."""
    make, _ = FAMILIES[family]
    params, body, args_of, _ = make()
    exe = relay.vm.compile(tvm.IRModule.from_expr(relay.Function(params, body)), target="llvm")
    args = args_of(2)
    got = _outputs(VirtualMachine(exe, tvm.cpu()).run(*args))
    static = relay.vm.compile(_static_module(params, body, args), target="llvm")
    for g, w in zip(got, _outputs(VirtualMachine(static, tvm.cpu()).run(*args)), strict=True):
        assert g.shape == w.shape and g.dtype == w.dtype and g.tobytes() == w.tobytes()


def _box_nms_cases():
    """(batch, boxes) sizes and data: no boxes, one, random rows with ties, every row the same
    box (all but the first suppressed), every score under the threshold."""
    same = np.tile(np.array([[[1, 0.9, 0, 0, 2, 2]]], "float32"), (2, 7, 1))
    same[:, :, 1] = [0.9, 0.5, 0.9, 0.7, 0.9, 0.4, 0.8]
    low = _boxes(2, 6)
    low[..., 1] = 0.1
    return [_boxes(1, 0), _boxes(1, 1), _boxes(2, 5), _boxes(3, 17), _boxes(1, 40), same, low]


def test_box_nms_gives_the_reference_bits_at_every_size():
    """One compile of get_valid_counts and two NMS (indices; each candidate's row at its rank,
    across ids and cut to top_k): the numpy references' values and dtypes exactly, at every
    case of ``_box_nms_cases``, on the symbolic kernels (none specialized)."""
    d = relay.var("d", shape=(A(), A(), 6), dtype="float32")
    gv = relay.vision.get_valid_counts(d, 0.3)
    by_id = relay.vision.non_max_suppression(gv[1], gv[0], gv[2], relay.const(-1, "int32"), 0.45)
    ranked = relay.vision.non_max_suppression(gv[1], gv[0], gv[2], relay.const(3, "int32"), 0.3,
                                              force_suppress=True, top_k=4,
                                              return_indices=False)
    packed = relay.vision.non_max_suppression(gv[1], gv[0], gv[2], relay.const(0, "int32"), 0.3,
                                              return_indices=False, invalid_to_bottom=True)
    mod = tvm.IRModule.from_expr(relay.Function(
        [d], relay.Tuple([gv[0], gv[1], gv[2], by_id[0], by_id[1], ranked, packed])))
    exe = relay.vm.compile(mod, target="llvm")
    assert dynamic_kernel_counts(exe.kernels) == {"symbolic": 4, "specialized": 0}
    vm = VirtualMachine(exe, tvm.cpu())
    f32 = float(np.float32(0.3)), float(np.float32(0.45))
    for x in _box_nms_cases():
        c, o, i = get_valid_counts_np(x, f32[0])
        want = [c, o, i, *non_max_suppression_np(o, c, i, -1, f32[1]),
                non_max_suppression_np(o, c, i, 3, f32[0], force_suppress=True, top_k=4,
                                       return_indices=False),
                non_max_suppression_np(o, c, i, 0, f32[0], return_indices=False,
                                       invalid_to_bottom=True)]
        for g, w in zip(_outputs(vm.run(x)), want, strict=True):
            assert g.dtype == w.dtype and g.shape == w.shape and g.tobytes() == w.tobytes()
    assert all(k.run._fallback is None for k in exe.kernels if isinstance(k.run, SymbolicKernel))
    # the overlaps round op by op (``EXACT_FLOAT``): no multiply-add contraction anywhere
    irs = [k.run.kernel.ir for k in exe.kernels if isinstance(k.run, SymbolicKernel)]
    assert irs and all("fmul" not in ir or "contract" not in ir for ir in irs)
    assert any("fmul" in ir for ir in irs)


def test_box_nms_native_in_a_static_build_float64_too():
    """relay.build of a static float64 NMS runs a native kernel (no numpy fallback, no
    warning) and gives the reference's bits; float16 boxes have none and say so."""
    import warnings

    from minitvm.backend.fallback import NativeFallbackError, NativeFallbackWarning

    x = _boxes(2, 9).astype("float64")
    vc = np.array([9, 5], "int32")
    idx = np.tile(np.arange(9, dtype="int32"), (2, 1))
    d = relay.var("d", shape=x.shape, dtype="float64")
    v = relay.var("v", shape=(2,), dtype="int32")
    i = relay.var("i", shape=(2, 9), dtype="int32")
    nms = relay.vision.non_max_suppression(d, v, i, relay.const(-1, "int32"), 0.25)
    mod = tvm.IRModule.from_expr(relay.Function([d, v, i], nms.astuple()))
    with warnings.catch_warnings():
        warnings.simplefilter("error", NativeFallbackWarning)
        exe = relay.vm.compile(mod, target="llvm")
    got = _outputs(VirtualMachine(exe, tvm.cpu()).run(x, vc, idx))
    want = non_max_suppression_np(x, vc, idx, -1, 0.25)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.tobytes() == w.tobytes()
    half = relay.var("h", shape=(1, 4, 6), dtype="float16")
    mod16 = tvm.IRModule.from_expr(relay.Function(
        [half], relay.vision.get_valid_counts(half, 0.5).astuple()))
    with pytest.raises(NativeFallbackError, match="get_valid_counts of float16 boxes has no "
                                                  "native kernel"):
        relay.build(mod16, "llvm")  # (the tests' builds are strict: a fallback raises)


def test_empty_batch_scans_write_nothing():
    """A scan over zero rows (or a zero-length axis) runs the symbolic kernel and returns an
    empty result (its first store per row would be out of bounds); the interpreter's exclusive
    scan of an empty axis too (its reference shifted a first element there is not)."""
    x = relay.var("x", shape=(A(), A()), dtype="float32")
    mod = tvm.IRModule.from_expr(relay.Function(
        [x], relay.Tuple([relay.cumsum(x, axis=1), relay.cumprod(x, axis=0, exclusive=True)])))
    exe = relay.vm.compile(mod, target="llvm")
    assert dynamic_kernel_counts(exe.kernels) == {"symbolic": 2, "specialized": 0}
    vm = VirtualMachine(exe, tvm.cpu())
    interp = relay.create_executor("debug", mod=mod).evaluate()
    for shape in ((0, 4), (3, 0), (9, 2)):
        xv = _rng(len(shape)).standard_normal(shape).astype("float32")
        got = _outputs(vm.run(xv))
        np.testing.assert_array_equal(got[0], np.cumsum(xv, axis=1))
        for g, r in zip(got, _outputs(interp(xv)), strict=True):
            assert g.shape == r.shape
            np.testing.assert_allclose(g, r, rtol=1e-6)


def _dynamic_axis_sorts():
    """Sorts of a whole dynamic axis (rows of a run-time length): argsort down the batch,
    sort descending along a dynamic last axis, every element's top-k of 64-bit values in rows
    of two dynamic dims, and argsort of int8 with a dynamic middle axis."""
    cases = []
    x = relay.var("x", shape=(A(), 4), dtype="float32")
    cases.append(([x], relay.argsort(x, axis=0, is_ascend=False, dtype="int64"),
                  lambda n: [(_rng(n).integers(-3, 4, (n, 4)) / 2).astype("float32")]))
    y = relay.var("y", shape=(3, A()), dtype="float32")
    cases.append(([y], relay.sort(y, axis=1, is_ascend=False),
                  lambda n: [_rng(n).standard_normal((3, n)).astype("float32")]))
    z = relay.var("z", shape=(A(), A()), dtype="float64")
    top = relay.topk(z, k=0, axis=1, ret_type="both")
    cases.append(([z], relay.Tuple([top[0], top[1]]),
                  lambda n: [_rng(n).integers(-2, 3, (2, n)).astype("float64")]))
    w = relay.var("w", shape=(2, A(), 3), dtype="int8")
    cases.append(([w], relay.argsort(w, axis=1),
                  lambda n: [_rng(n).integers(-5, 5, (2, n, 3)).astype("int8")]))
    return cases


@pytest.mark.parametrize("case", range(4))
def test_sorts_along_the_dynamic_axis_are_one_symbolic_kernel(case):
    """A sort of the whole dynamic axis is one symbolic kernel (a merge sort of rows of a
    run-time length): at 0, 5, 12 and 70 elements (a lone network run, or one merge pass
    copied back, or merge turns with a shorter last run: runs of 8 keys, 4 key pairs) the
    static kernel's bits (ties by position, NaN last), and numpy's stable order for
    integers."""
    params, body, args_of = _dynamic_axis_sorts()[case]
    exe = relay.vm.compile(tvm.IRModule.from_expr(relay.Function(params, body)), target="llvm")
    assert dynamic_kernel_counts(exe.kernels) == {"symbolic": 1, "specialized": 0}
    vm = VirtualMachine(exe, tvm.cpu())
    for n in (0, 5, 12, 70):
        args = args_of(n)
        got = _outputs(vm.run(*args))
        if n:
            static = relay.vm.compile(_static_module(params, body, args), target="llvm")
            want = _outputs(VirtualMachine(static, tvm.cpu()).run(*args))
        else:
            want = _outputs(relay.create_executor("debug", mod=tvm.IRModule.from_expr(
                relay.Function(params, body))).evaluate()(*args))
        for g, w in zip(got, want, strict=True):
            assert g.shape == w.shape and g.dtype == w.dtype and g.tobytes() == w.tobytes()
        if case == 3 and n:  # integers: numpy's stable argsort exactly
            np.testing.assert_array_equal(got[0], np.argsort(args[0], axis=1, kind="stable"))
    assert all(k.run._fallback is None for k in exe.kernels if isinstance(k.run, SymbolicKernel))


def _stable_order(x, axis: int, largest: bool):
    """numpy's positions in the selection order (stable; NaN last either way; data without
    infinities)."""
    key = -x if largest else x
    if x.dtype.kind == "f":
        key = np.where(np.isnan(x), np.inf, key)
    return np.argsort(key, axis=axis, kind="stable")


# (k, dtype, axis, is_ascend, sizes at or past k): the insertion chain (k <= MAX_K) down a
# dynamic batch of 3-wide rows with ties, NaN and -0.0; the heap (k > MAX_K) along a dynamic
# last axis, its kept items sorted by the symbolic merge sort
FIXED_K = [(3, "float32", 0, False, (3, 11)), (70, "int32", 1, True, (70, 203))]


@pytest.mark.parametrize("case", range(len(FIXED_K)))
def test_topk_of_a_fixed_k_along_the_dynamic_axis_is_one_symbolic_kernel(case):
    """A top-k of a fixed ``k`` along the dynamic axis is one symbolic kernel (typed
    ``min(k, n)`` along it): at sizes from ``k`` on, the per-shape kernel's bits (at the larger
    size) and numpy's stable order. A shorter axis keeps all ``n``, as numpy and the per-shape
    kernel: the kernel alone, and the VM (its call allocates by the kernel's shapes, though
    the program types ``k`` along an ``Any`` axis, TVM's type)."""
    k, dtype, axis, ascend, sizes = FIXED_K[case]

    def data(n):
        shape = (n, 3) if axis == 0 else (2, n)
        v = _rng(n).integers(-4, 5, shape).astype(dtype)
        if dtype == "float32" and n > 2:
            v[1, 0], v[2, 1] = np.nan, -0.0
        return v

    x = relay.var("x", shape=(A(), 3) if axis == 0 else (2, A()), dtype=dtype)
    t = relay.topk(x, k=k, axis=axis, ret_type="both", is_ascend=ascend)
    params, body = [x], relay.Tuple([t[0], t[1]])
    exe = relay.vm.compile(tvm.IRModule.from_expr(relay.Function(params, body)), target="llvm")
    assert dynamic_kernel_counts(exe.kernels) == {"symbolic": 1, "specialized": 0}
    vm = VirtualMachine(exe, tvm.cpu())

    def check(got, xv):
        idx = np.take(_stable_order(xv, axis, not ascend), np.arange(min(k, xv.shape[axis])),
                      axis=axis).astype("int32")
        np.testing.assert_array_equal(got[1], idx)
        np.testing.assert_array_equal(got[0], np.take_along_axis(xv, idx, axis=axis))

    for n in sizes:
        xv = data(n)
        got = _outputs(vm.run(xv))
        check(got, xv)
    static = relay.vm.compile(_static_module(params, body, [xv]), target="llvm")
    for g, w in zip(got, _outputs(VirtualMachine(static, tvm.cpu()).run(xv)), strict=True):
        assert g.shape == w.shape and g.dtype == w.dtype and g.tobytes() == w.tobytes()
    (run,) = [kn.run for kn in exe.kernels if isinstance(kn.run, SymbolicKernel)]
    for n in (0, 1, k - 1):  # a shorter axis: every element, best first
        xv = data(n)
        check(run([xv]), xv)
        check(_outputs(vm.run(xv)), xv)
    assert run._fallback is None


def test_topk_of_a_size_variable_is_typed_min_k_n():
    """``topk``'s type along a size variable (a symbolic kernel's typing) is ``min(k, n)``;
    along ``Any`` it stays ``k`` (TVM's), along a static axis ``min(k, n)`` folded."""
    n = tvm.tir.Var("n", "int64")
    shapes = {}
    for name, dim in (("var", n), ("any", A()), ("static", 2)):
        x = relay.var("x", shape=(dim, 4))
        mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function(
            [x], relay.topk(x, k=3, axis=0, ret_type="indices"))))
        shapes[name] = mod["main"].body.checked_type.shape
    assert tvm.ir.structural_equal(shapes["var"][0], tvm.tir.Min(tvm.tir.IntImm("int64", 3), n))
    assert [int(d) for d in shapes["any"]] == [3, 4]
    assert [int(d) for d in shapes["static"]] == [2, 4]


@pytest.mark.parametrize("dtype, largest", [("int16", False), ("int64", True)])
def test_sorts_of_every_merge_shape_give_numpys_stable_order(dtype, largest):
    """Integer argsorts of one symbolic kernel per item form (one int64 key; an int64 order
    key and a position) at lengths that take every merge shape: a lone network run, equal run
    pairs only, a shorter last run merged or copied, with and without equal pairs before it,
    across passes (ascending int16, descending int64)."""
    x = relay.var("x", shape=(2, A()), dtype=dtype)
    exe = relay.vm.compile(tvm.IRModule.from_expr(relay.Function(
        [x], relay.argsort(x, axis=1, is_ascend=not largest))), target="llvm")
    assert dynamic_kernel_counts(exe.kernels) == {"symbolic": 1, "specialized": 0}
    vm = VirtualMachine(exe, tvm.cpu())
    for n in (*range(1, 41), 64, 65, 97, 129, 300, 1000, 4099):
        xv = _rng(n).integers(-n // 3 - 1, n // 3 + 2, (2, n)).astype(dtype)
        np.testing.assert_array_equal(vm.run(xv).numpy(), _stable_order(xv, 1, largest))


def test_cumsum_of_a_dynamic_input_flattened_is_one_symbolic_kernel():
    """``cumsum`` with no axis over a dynamic input types as ``(?,)`` (it failed to type) and is
    one symbolic kernel over ``n * 4`` elements: numpy's bits, empty at batch 0."""
    x = relay.var("x", shape=(A(), 4), dtype="float32")
    y = relay.var("y", shape=(A(), 3), dtype="int32")
    body = relay.Tuple([relay.cumsum(x), relay.cumprod(y, exclusive=True, dtype="int64")])
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x, y], body)))
    assert "Tensor[(?), float32]" in mod.astext()
    exe = relay.vm.compile(mod, target="llvm")
    assert dynamic_kernel_counts(exe.kernels) == {"symbolic": 2, "specialized": 0}
    vm = VirtualMachine(exe, tvm.cpu())
    for b in (0, 1, 6):
        xv = _rng(b).standard_normal((b, 4)).astype("float32")
        yv = _rng(b).integers(-3, 4, (b, 3)).astype("int32")
        got = _outputs(vm.run(xv, yv))
        want = [np.cumsum(xv.ravel()),
                np.cumprod(np.concatenate([[1], yv.ravel()[:-1]])).astype("int64")[:b * 3]]
        for g, w in zip(got, want, strict=True):
            assert g.shape == w.shape and g.dtype == w.dtype and g.tobytes() == w.tobytes()


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    """An empty disk cache of its own, nothing kept in process; sequential compiles."""
    own_disk_cache(tmp_path, monkeypatch)
    # (the kernels' records are what these tests check: whole executables not cached)
    with tvm.transform.PassContext(opt_level=3, config={parallel_compile.CONFIG_KEY: 1,
                                                        exe_cache.CONFIG_KEY: False}):
        yield
    _forget()


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_warm_compile_loads_the_records_without_lowering(fresh_cache, family):
    make, kernels = FAMILIES[family]
    params, body, args_of, _ = make()
    mod = tvm.IRModule.from_expr(relay.Function(params, body))
    cold = relay.vm.compile(mod, target="llvm")
    _forget()  # (a fresh process: only the disk remembers)
    scheduled, hits = symbolic.STATS["scheduled"], saved.STATS["hits"]
    warm = relay.vm.compile(mod, target="llvm")
    assert symbolic.STATS["scheduled"] == scheduled  # nothing lowered again
    assert saved.STATS["hits"] - hits == kernels
    assert dynamic_kernel_counts(warm.kernels) == {"symbolic": kernels, "specialized": 0}
    args = args_of(2)
    got = _outputs(VirtualMachine(warm, tvm.cpu()).run(*args))
    for g, w in zip(got, _outputs(VirtualMachine(cold, tvm.cpu()).run(*args)), strict=True):
        np.testing.assert_array_equal(g, w)


def _onnx_roi_align():
    d = relay.var("d", shape=(A(), 2, 8, 8), dtype="float32")
    r = relay.var("r", shape=(A(), 4), dtype="float32")
    i = relay.var("i", shape=(A(),), dtype="int64")

    def args(n):
        g = _rng(n)
        rois = (g.random((2 * n + 1, 4)) * 5).astype("float32")
        rois[:, 2:] += 2
        return [g.standard_normal((n, 2, 8, 8)).astype("float32"), rois,
                g.integers(0, n, 2 * n + 1).astype("int64")]

    return [d, r, i], relay.vision.onnx_roi_align(d, r, i, 2, 2, 0, 0.5, True), args


def _box_nms_operands():
    """NMS of rows, valid counts and indices, each with its own ``relay.Any()`` sizes."""
    d = relay.var("d", shape=(A(), A(), 6), dtype="float32")
    v = relay.var("v", shape=(A(),), dtype="int32")
    i = relay.var("i", shape=(A(), A()), dtype="int32")
    nms = relay.vision.non_max_suppression(d, v, i, relay.const(-1, "int32"), 0.45)

    def args(b):
        x = _boxes(b, 6)
        return [x, np.full((b,), 6, "int32"), np.tile(np.arange(6, dtype="int32"), (b, 1))]

    return [d, v, i], nms.astuple(), args


@pytest.mark.parametrize("op", ["all_class_nms", "onnx_roi_align", "box_nms", "multiclass_nms"])
def test_operands_read_as_one_extent_are_checked_at_each_call(op):
    """NMS's boxes and scores (batch and box counts), RoiAlign's boxes and image indices, box
    NMS's rows, valid counts and indices,
    typed with distinct ``relay.Any()`` sizes: the kernel reads them as one extent, so the
    symbolic typing makes them one size, checked at each call; a call where they differ is
    rejected by the typing of its specialization (the kernel read past the smaller one)."""
    if op == "all_class_nms":
        params, body, args_of, _ = _all_class_nms()
        match = "scores .* must be \\(batch=1"

        def bad(a):
            return [a[0][:1], a[1]]
    elif op == "multiclass_nms":
        params, body, args_of, _ = _multiclass_nms()
        match = "do not describe one batch"

        def bad(a):
            return [a[0][:, :5], a[1]]
    elif op == "box_nms":
        params, body, args_of = _box_nms_operands()
        match = "valid_count .* must be \\(batch=3,\\)"

        def bad(a):
            return [a[0], a[1][:2], a[2]]
    else:
        params, body, args_of = _onnx_roi_align()
        match = "one index per box"

        def bad(a):
            return [a[0], a[1], a[2][:2]]
    mod = tvm.IRModule.from_expr(relay.Function(params, body))
    exe = relay.vm.compile(mod, target="llvm")
    assert dynamic_kernel_counts(exe.kernels) == {"symbolic": 1, "specialized": 0}
    vm = VirtualMachine(exe, tvm.cpu())
    args = args_of(3)
    want = _outputs(relay.create_executor("debug", mod=mod).evaluate()(*args))
    for g, w in zip(_outputs(vm.run(*args)), want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    with pytest.raises(Exception, match=match):
        vm.run(*bad(args))

"""Image-major order in the Relax VM's native entry (runtime/relax_vm/image_major): at one
thread, a plan at a batch of several images runs its loops over the images image by image,
the intermediates that live within a run in one image's scratch; numbers as in batch order."""

import numpy as np
import pytest
from numpy_conv import conv as _conv

import minitvm as tvm
from minitvm import relax, tir
from minitvm.runtime import threadpool
from minitvm.runtime.relax_vm import image_major as im
from minitvm.runtime.relax_vm.native_entry import RECORD, _image_steps

_RNG = np.random.default_rng(0)
W = {"c0": _RNG.standard_normal((8, 4, 3, 3)).astype("float32"),
     "c1": _RNG.standard_normal((8, 8, 3, 3)).astype("float32"),
     "e1": _RNG.standard_normal((8, 8, 1, 1)).astype("float32"),
     "e3": _RNG.standard_normal((8, 8, 3, 3)).astype("float32"),
     "out": _RNG.standard_normal((4, 16, 1, 1)).astype("float32")}


def _net():
    """main(x: (n, 4, 16, 16)): conv + relu, max pool, a residual conv, a fire module's
    concatenation and a 1x1 conv."""
    n = tir.Var("n", "int64")
    x = relax.Var("x", relax.TensorStructInfo([n, 4, 16, 16], "float32"))
    bb = relax.BlockBuilder()

    def conv(a, w, pad=0):
        return bb.emit(relax.op.nn.relu(relax.op.nn.conv2d(a, relax.const(W[w]), padding=pad)))

    with bb.function("main", [x]):
        with bb.dataflow():
            p = bb.emit(relax.op.nn.max_pool2d(conv(x, "c0", 1), 2, 2))
            r = bb.emit(relax.op.add(conv(p, "c1", 1), p))
            c = bb.emit(relax.op.concat([conv(r, "e1"), conv(r, "e3", 1)], axis=1))
            out = bb.emit_output(bb.emit(relax.op.nn.conv2d(c, relax.const(W["out"]))))
        bb.emit_func_output(out)
    return bb.get()


def _ref(x):
    a = np.maximum(_conv(x, W["c0"], 1), 0)
    n, c, h, w = a.shape
    p = a.reshape(n, c, h // 2, 2, w // 2, 2).max(axis=(3, 5))
    r = np.maximum(_conv(p, W["c1"], 1), 0) + p
    cat = np.concatenate([np.maximum(_conv(r, W["e1"]), 0),
                          np.maximum(_conv(r, W["e3"], 1), 0)], axis=1)
    return _conv(cat, W["out"])


def _close(got, x):
    ref = _ref(x)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5 * np.abs(ref).max())


@pytest.fixture(scope="module")
def built():
    return relax.build(_net(), "llvm")


@pytest.fixture
def every_kernel(monkeypatch):
    """Every loop over images joins a run, however small its arrays (the test's are KBs)
    against its weights."""
    monkeypatch.setattr(im, "MIN_ARRAY_BYTES", 0)
    monkeypatch.setattr(im, "MAX_WEIGHT_SHARE", float("inf"))


@pytest.fixture
def threads():
    old = threadpool.get_num_threads()
    yield threadpool.set_num_threads
    threadpool.set_num_threads(old)


def _plan(vm, x):
    nf = vm._native["main"]
    assert nf.try_call((tvm.nd.array(x),)) is not RECORD
    return nf.plans[(x.shape,)]


def test_one_thread_runs_image_by_image_same_numbers(built, every_kernel, threads):
    threads(1)
    vm = relax.VirtualMachine(built, tvm.cpu())
    interp = relax.VirtualMachine(built, tvm.cpu())
    interp.native_entry = False
    rng = np.random.default_rng(1)
    for batch in (1, 3, 2, 4, 1, 3):
        x = rng.standard_normal((batch, 4, 16, 16)).astype("float32")
        for _ in range(2):  # the first call at a shape records its plan, the next replays
            got = vm["main"](x).numpy()
            _close(got, x)
        np.testing.assert_allclose(got, interp["main"](x).numpy(), rtol=1e-6, atol=1e-6)
        plan = _plan(vm, x)
        if batch == 1:
            assert plan.solo is None  # (one image: nothing to reorder)
            continue
        names, words = plan.order(1)
        assert plan.address(1) == plan.solo[0].ctypes.data and len(words) == len(names)
        # every kernel runs once per image, image after image: the steps repeat per image
        per = len(names) // batch
        assert per * batch == len(names) and names == names[:per] * batch, names
        assert sorted(set(names)) == sorted(set(plan.names))
        # the concatenation stays in place (its producers write into its output)
        assert not any(n.startswith("concatenate") for n in names)


def test_several_threads_keep_the_batch_order(built, every_kernel, threads):
    threads(2)
    vm = relax.VirtualMachine(built, tvm.cpu())
    x = np.random.default_rng(2).standard_normal((4, 4, 16, 16)).astype("float32")
    vm["main"](x)
    _close(vm["main"](x).numpy(), x)
    plan = _plan(vm, x)
    assert plan.solo is not None and plan.address(2) == plan.addr
    assert plan.order(2)[0] == plan.names


def test_small_arrays_and_disabled_keep_the_batch_order(built, threads, monkeypatch):
    """Kernels whose arrays stay in L2 for the whole batch (MIN_ARRAY_BYTES) or a plan
    recorded with the order disabled run in batch order, with the same numbers."""
    threads(1)
    x = np.random.default_rng(3).standard_normal((3, 4, 16, 16)).astype("float32")
    for patch in ({}, {"ENABLED": False, "MIN_ARRAY_BYTES": 0}):
        for k, v in patch.items():
            monkeypatch.setattr(im, k, v)
        vm = relax.VirtualMachine(built, tvm.cpu())
        vm["main"](x)
        _close(vm["main"](x).numpy(), x)
        assert _plan(vm, x).solo is None


# ---------------------------------------------------------------- plan-level rules
class _Kernel:
    """A stand-in for a NativeKernel: its spec (buffer params, written positions, image var)."""

    def __init__(self, dims: list, written: list):
        self.spec = {"params": [["buf", "float32", len(d), d] for d in dims],
                     "written": written, "image_var": 0}


def _step(name, spans_written, images=2, image_loop=True):
    """(plan step, touched entry) of a kernel over ``images`` images (a loop over them unless
    ``image_loop`` is False): spans ``((address, bytes), written)``, each batched (first dim
    -1), of float32 arrays."""
    spans = [sp for sp, _ in spans_written]
    wr = [q for q, (_, w) in enumerate(spans_written) if w]
    k = _Kernel([[-1, n // 4 // images] for _, n in spans], wr)
    if not image_loop:
        del k.spec["image_var"]
    arrays = [np.empty((images, n // 4 // images), "float32") for _, n in spans]
    return (7, [("fixed", a, 0) for a, _ in spans], [images], name), (spans, arrays, k)


def _order(pairs):
    steps, touched = [p[0] for p in pairs], [p[1] for p in pairs]
    keep = []

    def expand(k, images):
        return [steps[k]] if images is None else _image_steps(steps[k], touched[k], -1, 0,
                                                              images)

    def scratch(nbytes):
        keep.append(nbytes)
        return 1 << 20

    got = im.image_major(steps, touched, {}, expand, scratch)
    return got, keep


def test_reuse_of_a_live_images_bytes_cuts_the_run(every_kernel):
    """Step b writes C over A's image 1 (A is dead in batch order after step a), and C is
    read after the run: b on image 0 before a on image 1 would clobber A, so no run."""
    a = _step("a", [((0, 256), False), ((1024, 256), True)])  # A -> B
    b = _step("b", [((1024, 256), False), ((128, 256), True)])  # B -> C over A's image 1
    reader = _step("r", [((128, 256), False), ((4096, 256), True)], image_loop=False)
    got, keep = _order([a, b, reader])
    assert got is None and not keep
    # C at A's image 0 instead: b on image 0 writes what a on image 0 already read
    b0 = _step("b", [((1024, 256), False), ((0, 256), True)])
    reader0 = _step("r", [((0, 256), False), ((4096, 256), True)], image_loop=False)
    got, _ = _order([a, b0, reader0])
    assert [s[3] for s in got] == ["a", "b", "a", "b", "r"]


def test_tensors_living_within_the_run_move_to_one_images_scratch(every_kernel):
    """c writes over A's bytes, which a still reads on image 1; but that tensor lives only
    within the run (d reads it), so it moves to the scratch and the run holds. B, C, A' and D
    get one image each of a scratch whose bytes two of them share when their lives do not
    overlap."""
    a = _step("a", [((0, 256), False), ((256, 256), True)])  # A -> B
    b = _step("b", [((256, 256), False), ((512, 256), True)])  # B -> C
    c = _step("c", [((512, 256), False), ((0, 256), True)])  # C -> A' (in A's bytes)
    d = _step("d", [((0, 256), False), ((2048, 256), True)])  # A' -> D
    got, keep = _order([a, b, c, d])
    assert [s[3] for s in got] == ["a", "b", "c", "d"] * 2
    assert keep == [256]  # lives [0, 1], [1, 2], [2, 3], [3, 3]: two images' bytes
    scratch = 1 << 20
    refs = [s[1] for s in got]
    assert refs[0] == [("fixed", 0, 0), ("fixed", scratch, 0)]  # A image 0 -> B
    assert refs[4] == [("fixed", 128, 0), ("fixed", scratch, 0)]  # A image 1 -> B, reused
    assert refs[2] == [("fixed", scratch + 128, 0), ("fixed", scratch, 0)]  # C -> A'


def test_run_locals_rules(every_kernel):
    """A tensor written and read within the run is local; one read after the run, read before
    the run writes it, or partly read while it lives, is not."""
    a = _step("a", [((0, 256), False), ((256, 256), True)])
    b = _step("b", [((256, 256), False), ((512, 256), True)])
    later = _step("x", [((512, 256), False), ((4096, 256), True)])
    steps, touched = [a[0], b[0], later[0]], [a[1], b[1], later[1]]
    spans = {k: im.image_spans(steps[k], touched[k]) for k in range(3)}
    got = im.run_locals([0, 1], spans, steps, touched)
    assert set(got) == {(0, 1), (1, 0)}  # B (written by a, read by b); C is read after
    assert got[0, 1] == (0, 1, 128)
    # C overwritten after the run before anything reads it: local too
    over = _step("x", [((4096, 256), False), ((512, 256), True)])
    steps2, touched2 = [a[0], b[0], over[0]], [a[1], b[1], over[1]]
    got2 = im.run_locals([0, 1], spans, steps2, touched2)
    assert set(got2) == {(0, 1), (1, 0), (1, 1)}
    # B partly read while it lives: not local
    part = _step("b", [((256, 128), False), ((512, 256), True)])
    steps3 = [a[0], part[0], b[0]]
    touched3 = [a[1], part[1], b[1]]
    spans3 = {k: im.image_spans(steps3[k], touched3[k]) for k in range(3)}
    assert (0, 1) not in im.run_locals([0, 1, 2], spans3, steps3, touched3)


def test_place_shares_bytes_only_between_disjoint_lives():
    offs, total = im.place({"a": (0, 1, 128), "b": (1, 2, 64), "c": (2, 3, 128)})
    assert offs["a"] != offs["b"] and offs["c"] == offs["a"] == 0 and offs["b"] == 128
    assert total == 192 and all(o % 64 == 0 for o in offs.values())


def test_covered_and_dead_after():
    assert im._covered([(0, 64), (64, 128)], 0, 128)
    assert not im._covered([(0, 64), (96, 128)], 0, 128)
    w = _step("w", [((0, 128), True), ((512, 128), False)])
    r = _step("r", [((0, 128), False), ((1024, 128), True)])
    assert im._dead_after([w[1], r[1]], 1, 0, 128)  # nothing after step 1
    # read after step 0 before any write: not dead
    assert not im._dead_after([r[1], r[1]], 0, 0, 128)
    # written first after step 0: dead
    assert im._dead_after([r[1], w[1], r[1]], 0, 0, 128)

"""In-place concatenation of a batch of images in the Relax VM's native entry: producers that
are loops over the images (spec ``image_var``) run once per image, each call writing its
image's piece of the output; a moved output takes a free place in the plan's storages."""

import numpy as np
import pytest
from numpy_conv import conv as _conv

import minitvm as tvm
from minitvm import relax, tir
from minitvm.runtime.relax_vm.native_entry import (
    RECORD,
    _concats_in_place,
    _free_region,
    _image_steps,
)
from minitvm.schedule.batch_loop import image_loop_var

_RNG = np.random.default_rng(0)
W = {"sq": _RNG.standard_normal((8, 4, 1, 1)).astype("float32"),
     "e1": _RNG.standard_normal((16, 8, 1, 1)).astype("float32"),
     "e3": _RNG.standard_normal((16, 8, 3, 3)).astype("float32"),
     "out": _RNG.standard_normal((4, 32, 1, 1)).astype("float32")}


def _fire():
    """main(x: (n, 4, 8, 8)): a SqueezeNet fire module (squeeze 1x1, expand 1x1 and 3x3,
    concatenated on the channels) and a 1x1 conv reading the concatenation."""
    n = tir.Var("n", "int64")
    x = relax.Var("x", relax.TensorStructInfo([n, 4, 8, 8], "float32"))
    bb = relax.BlockBuilder()

    def conv(a, w, pad=0):
        return bb.emit(relax.op.nn.relu(relax.op.nn.conv2d(a, relax.const(W[w]),
                                                           padding=pad)))

    with bb.function("main", [x]):
        with bb.dataflow():
            s = conv(x, "sq")
            c = bb.emit(relax.op.concat([conv(s, "e1"), conv(s, "e3", 1)], axis=1))
            out = bb.emit_output(bb.emit(relax.op.nn.conv2d(c, relax.const(W["out"]))))
        bb.emit_func_output(out)
    return bb.get()


def _ref(x):
    s = np.maximum(_conv(x, W["sq"]), 0)
    c = np.concatenate([np.maximum(_conv(s, W["e1"]), 0),
                        np.maximum(_conv(s, W["e3"], 1), 0)], axis=1)
    return _conv(c, W["out"])


@pytest.fixture(scope="module")
def built():
    return relax.build(_fire(), "llvm")


def _plan(vm, x):
    nf = vm._native["main"]
    assert nf.try_call((tvm.nd.array(x),)) is not RECORD
    (key,) = [k for k in nf.plans if k == (x.shape,)]
    return nf.plans[key]


def test_producers_are_image_loops_and_their_specs_say_so(built):
    specs = {name: spec for name, (_, spec) in built.kernels.items()}
    convs = [s for name, s in specs.items() if "conv2d" in name]
    assert convs and all(s.get("image_var") == 0 for s in convs)
    fast = [rec.prim_func for name, (rec, _) in built.kernels.items() if "conv2d" in name]
    assert all(image_loop_var(f) is not None for f in fast)


def test_image_loop_var_only_for_an_image_loop():
    a = tir.decl_buffer((4,), "float32", "a")
    i = tir.Var("i", "int32")
    plain = tir.PrimFunc([a], tir.For(i, 0, 4, tir.ForKind.SERIAL,
                                      tir.BufferStore(a, tir.FloatImm("float32", 0.0), [i])))
    assert image_loop_var(plain) is None


@pytest.mark.parametrize("threads", [1, 2])
def test_in_place_at_every_batch_same_numbers(built, threads):
    from minitvm.runtime import threadpool

    old = threadpool.get_num_threads()
    threadpool.set_num_threads(threads)
    try:
        vm = relax.VirtualMachine(built, tvm.cpu())
        interp = relax.VirtualMachine(built, tvm.cpu())
        interp.native_entry = False
        rng = np.random.default_rng(1)
        for batch in (1, 3, 2, 3, 1):
            x = rng.standard_normal((batch, 4, 8, 8)).astype("float32")
            for _ in range(2):  # the first call at a shape records its plan, the next replays
                got = vm["main"](x).numpy()
                np.testing.assert_allclose(got, _ref(x), rtol=1e-4, atol=1e-4)
            np.testing.assert_array_equal(got, interp["main"](x).numpy())
            names = _plan(vm, x).names
            assert not any(n.startswith("concatenate") for n in names), names
            # each producer of a part runs once per image, the others once
            counts = {n: names.count(n) for n in names}
            assert sorted(counts.values()) == [1, 1, batch, batch], counts
    finally:
        threadpool.set_num_threads(old)


def test_without_image_loops_the_copy_stays(built):
    """An executable whose specs lack ``image_var`` (an older export) keeps the copy at a
    batch of several images, and gives the same numbers."""
    ex = relax.build(_fire(), "llvm")
    for _, spec in ex.kernels.values():
        spec.pop("image_var", None)
    vm = relax.VirtualMachine(ex, tvm.cpu())
    x = np.random.default_rng(2).standard_normal((3, 4, 8, 8)).astype("float32")
    vm["main"](x)
    np.testing.assert_allclose(vm["main"](x).numpy(), _ref(x), rtol=1e-4, atol=1e-4)
    assert sum(n.startswith("concatenate") for n in _plan(vm, x).names) == 1


class _Kernel:
    """A stand-in for a NativeKernel: only its spec (buffer params, written positions)."""

    def __init__(self, dims: list, written: list, image_var=None, concat_axis=None):
        self.spec = {"params": [["buf", "float32", len(d), d] for d in dims],
                     "written": written}
        if image_var is not None:
            self.spec["image_var"] = image_var
        if concat_axis is not None:
            self.spec["concat_axis"] = concat_axis


def test_image_steps_move_batched_refs_by_an_image_and_the_part_by_an_output_image():
    k = _Kernel([[-1, 2, 4], [3, 4], [-1, 5, 4]], [2], image_var=0)
    arrays = [np.empty((3, 2, 4), "float32"), np.empty((3, 4), "float32"),
              np.empty((3, 5, 4), "float32")]
    refs = [("arg", 0, 0), ("fixed", 1000, 0), ("fixed", 5000, 0)]
    steps = _image_steps((77, refs, [3, 9], "k"), ([], arrays, k), 2, 256, 3)
    assert [s[2] for s in steps] == [[1, 9]] * 3  # the batch var is 1, others kept
    assert [s[1] for s in steps] == [
        [("arg", 0, 0 + 32 * i), ("fixed", 1000, 0), ("fixed", 5000 + 256 * i, 0)]
        for i in range(3)]


def _touch(spans_written, kernel=None):
    """A ``touched`` entry: spans (address, bytes) and which of them the step writes."""
    spans = [sp for sp, _ in spans_written]
    written = [q for q, (_, w) in enumerate(spans_written) if w]
    k = kernel or _Kernel([[n // 4] for _, n in spans], written)
    return (spans, [np.empty(n // 4, "float32") for _, n in spans], k)


def test_free_region_rules():
    """Region [0, 256) of a 1024-byte arena: a tensor there used only before the output's
    steps (1..2) frees it; one used meanwhile, live across them, or read first afterwards
    does not."""
    arena = [(0, 1024)]
    # step 0 writes A at [0, 256); steps 1-2 are the output's; step 3 writes C at [256, 512)
    touched = [_touch([((0, 256), True)]), _touch([((2000, 64), True)]),
               _touch([((3000, 64), False)]), _touch([((256, 256), True)])]
    ours = {(1, 0), (2, 0)}
    assert _free_region(touched, set(), arena, 256, 1, 2, ours) == 0  # A is dead: its place
    # A read again at step 3: live across the output's steps
    live = touched[:3] + [_touch([((0, 256), False)])]
    assert _free_region(live, set(), arena, 256, 1, 2, ours) == 256
    # a tensor at [0, 256) touched by another ref meanwhile
    busy = [touched[0], _touch([((2000, 64), True), ((0, 256), False)]), *touched[2:]]
    assert _free_region(busy, set(), arena, 256, 1, 2, ours) == 256
    # a dropped step's refs count for nothing
    assert _free_region(busy, {1}, arena, 256, 1, 2, ours) == 0
    # a tensor first read after the output's last step (its value from before): not free
    stale = [_touch([((2000, 64), True)]), *touched[1:3], _touch([((0, 1024), False)])]
    assert _free_region(stale, set(), arena, 256, 1, 2, ours) is None
    # too large for the arena
    assert _free_region(touched, set(), arena, 2048, 1, 2, ours) is None


def test_moved_output_takes_the_most_recently_used_free_place():
    """Two dead tensors can hold the output; it goes to the one used last."""
    arena = [(0, 1024)]
    touched = [_touch([((0, 256), True)]), _touch([((512, 256), True)]),
               _touch([((4000, 64), True)])]
    assert _free_region(touched, set(), arena, 256, 2, 2, {(2, 0)}) == 512


def test_concats_in_place_splits_producers_per_image():
    """Two image-loop producers of (2, 16) float parts of a (2, 32) output: each runs once
    per image, into its image's piece of the output; the concatenation is dropped."""
    prod = _Kernel([[-1, 16], [-1, 16]], [1], image_var=0)
    cat = _Kernel([[2, 16], [2, 16], [2, 32]], [2], concat_axis=1)
    x, a, b, out = (10_048, 128), (20_032, 128), (30_016, 128), (40_000, 256)
    arrays = {x: np.empty((2, 16), "float32"), a: np.empty((2, 16), "float32"),
              b: np.empty((2, 16), "float32"), out: np.empty((2, 32), "float32")}
    touched = [([x, a], [arrays[x], arrays[a]], prod), ([x, b], [arrays[x], arrays[b]], prod),
               ([a, b, out], [arrays[a], arrays[b], arrays[out]], cat)]
    steps = [(1, [("fixed", s[0], 0) for s in t[0]], [2], f"k{i}")
             for i, t in enumerate(touched)]
    got = _concats_in_place(steps, [(list(t[0]), *t[1:]) for t in touched], [])
    assert [s[3] for s in got] == ["k0", "k0", "k1", "k1"]
    assert [s[2] for s in got] == [[1]] * 4
    assert [[r[1] for r in s[1]] for s in got] == [
        [10_048, 40_000], [10_112, 40_128], [10_048, 40_064], [10_112, 40_192]]
    # parts of 16 bytes an image are not whole cache lines: the copy stays
    small = _Kernel([[-1, 4], [-1, 4]], [1], image_var=0)
    arr4 = np.empty((2, 4), "float32")
    cat4 = _Kernel([[2, 4], [2, 4], [2, 8]], [2], concat_axis=1)
    t4 = [([(0, 32), (64, 32)], [arr4, arr4], small), ([(0, 32), (128, 32)], [arr4, arr4], small),
          ([(64, 32), (128, 32), (192, 64)], [arr4, arr4, np.empty((2, 8), "float32")], cat4)]
    s4 = [(1, [("fixed", sp[0], 0) for sp in t[0]], [2], f"k{i}") for i, t in enumerate(t4)]
    assert [s[3] for s in _concats_in_place(s4, t4, [])] == ["k0", "k1", "k2"]

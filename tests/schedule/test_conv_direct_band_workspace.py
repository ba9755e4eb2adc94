"""``conv_direct``'s band copies (``xph_band``) are slices of the kernel's workspace, not
allocations per band (malloc'd and freed per band per call before): bands on the pool run on
one slice per thread of the call (at most ``BAND_SLOTS`` slices, where ``BAND_SLICES`` is on
for the ISA), serial bands share one slice, and images split over the pool take one slice per
thread (at most ``IMAGE_SLOTS``) for their bands' or their whole phased copy. The convs match
a float64 reference at 1, 2 and 3 threads, also with fewer slices than threads and more bands
than slices."""

import numpy as np
import pytest
from conv_reference import build_conv, conv_kernel, conv_prim, run_graph

from minitvm.schedule import conv_direct
from minitvm.tir import expr as E
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import walk_stmts

# (input shape, output channels, stride): DeepLab's head's two banded stem convs (the bands on
# the pool), a small conv whose bands run serially (once forced into bands)
POOL = [((1, 64, 128, 128), 128, 2), ((1, 128, 64, 64), 256, 2)]
SERIAL = ((1, 8, 64, 64), 16, 2)


@pytest.fixture
def slices(monkeypatch, direct_conv_only):
    """``slices(on, slots, force)``: BAND_SLICES ``on`` for both ISAs with ``slots`` slices at
    most; ``force``: every phased copy is made in bands of at most 21120 bytes."""
    from minitvm.backend import kernel_cache

    def setup(on=True, slots=conv_direct.BAND_SLOTS, force=False):
        kernel_cache.clear_cache()
        monkeypatch.setattr(conv_direct, "BAND_SLICES", {"avx512": on, "avx2": on})
        monkeypatch.setattr(conv_direct, "BAND_SLOTS", slots)
        if force:
            monkeypatch.setattr(conv_direct, "BAND_MIN_BYTES", 0)
            monkeypatch.setattr(conv_direct, "BAND_BYTES", 21120)

    yield setup
    kernel_cache.clear_cache()


def _band_views(prim) -> list:
    return [s.buffer for s in walk_stmts(prim.body)
            if isinstance(s, S.DeclBuffer) and s.buffer.name == "xph_band"]


def _allocated(prim) -> set:
    return {id(s.buffer_var) for s in walk_stmts(prim.body) if isinstance(s, S.Allocate)}


def _allocated_in_loops(prim) -> set:
    return {id(s.buffer_var) for f in walk_stmts(prim.body) if isinstance(f, S.For)
            for s in walk_stmts(f.body) if isinstance(s, S.Allocate)}


def _threads_lets(prim) -> list:
    return [s for s in walk_stmts(prim.body) if isinstance(s, S.LetStmt) and
            isinstance(s.value, E.Min) and isinstance(s.value.a, E.Call) and
            s.value.a.op_name == "tir.num_threads"]


@pytest.mark.parametrize("shape,o,stride", POOL)
def test_pool_bands_take_a_slice_per_thread(shape, o, stride, slices):
    slices()
    lib, _, _ = build_conv(shape, o, 3, strides=(stride, stride))
    prim = conv_prim(lib)
    (view,) = _band_views(prim)
    ws = prim.params[-1]
    assert ws.name == "workspace" and view.data is ws
    assert id(ws) not in _allocated(prim)
    (let,) = _threads_lets(prim)
    slots = int(let.value.b)
    assert 2 <= slots <= conv_direct.BAND_SLOTS
    assert isinstance(let.body, S.For) and let.body.kind == S.ForKind.PARALLEL
    assert conv_kernel(lib).ws_bytes >= slots * 4 * int(view.shape[0])


@pytest.mark.parametrize("shape,o,stride", POOL[:1])
def test_pool_bands_allocate_where_slices_are_off(shape, o, stride, slices):
    slices(on=False)
    lib, _, _ = build_conv(shape, o, 3, strides=(stride, stride))
    prim = conv_prim(lib)
    (view,) = _band_views(prim)
    assert id(view.data) in _allocated(prim) and not _threads_lets(prim)


def test_serial_bands_share_one_slice(slices):
    slices(force=True)
    shape, o, stride = SERIAL
    lib, inputs, want = build_conv(shape, o, 3, strides=(stride, stride))
    prim = conv_prim(lib)
    (view,) = _band_views(prim)
    # one scratch for the call (21 KB here: a stack temporary at the top, not the workspace)
    assert not _threads_lets(prim) and id(view.data) not in _allocated_in_loops(prim)
    for threads in (1, 2):
        np.testing.assert_allclose(run_graph(lib, inputs, threads), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("force", [True, False])
@pytest.mark.parametrize("image_slots", [2, 8])
def test_images_on_the_pool_take_a_slice_per_thread(force, image_slots, slices, monkeypatch):
    # four images split over the pool (``_by_image``): their bands' copy (force) or their
    # whole phased copy is a workspace slice per thread, nothing allocated per image
    slices(force=force)
    monkeypatch.setattr(conv_direct, "IMAGE_SLOTS", image_slots)
    lib, inputs, want = build_conv((4, 8, 64, 64), 32, 3, strides=(2, 2))
    prim = conv_prim(lib)
    name = "xph_band" if force else "xph"
    (view,) = [s.buffer for s in walk_stmts(prim.body)
               if isinstance(s, S.DeclBuffer) and s.buffer.name == name]
    assert id(view.data) not in _allocated_in_loops(prim)
    (let,) = _threads_lets(prim)
    assert int(let.value.b) == min(4, image_slots)
    assert isinstance(let.body, S.For) and let.body.kind == S.ForKind.PARALLEL
    assert let.body.loop_var.name.startswith("image_slot")
    if view.data is prim.params[-1]:  # the workspace (a small copy may be a stack temporary)
        assert conv_kernel(lib).ws_bytes >= min(4, image_slots) * 4 * int(view.shape[0])
    for threads in (1, 3):
        np.testing.assert_allclose(run_graph(lib, inputs, threads), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("slots", [2, 8])
@pytest.mark.parametrize("shape,o,stride", POOL)
def test_sliced_bands_match_reference_per_thread_count(shape, o, stride, slots, slices):
    slices(slots=slots)
    lib, inputs, want = build_conv(shape, o, 3, strides=(stride, stride), epi="residual_relu")
    assert _threads_lets(conv_prim(lib))
    scale = np.max(np.abs(want))
    for threads in (1, 2, 3):
        got = run_graph(lib, inputs, threads)
        np.testing.assert_allclose(got / scale, want / scale, rtol=0, atol=5e-5)

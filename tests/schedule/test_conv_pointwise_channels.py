"""The channel-vector kernel of the 1x1 schedule (``schedule/conv_pointwise.py``) on small
planes (7x7, 14x14: EfficientNet-B0, MobileNetV2, RegNet): numerics against numpy for the
shapes it takes there, with bias, silu, clip, residual and relu epilogues, odd channel counts
(a half panel of 8), batches and two threads, with and without the transposed store; the
prefetch of the next block of weights (panels outer only); and the input packing, off by
default on AVX-512."""

import numpy as np
import pytest
from conv_reference import conv_prim as _conv_prim
from conv_reference import run_graph as _run
from pointwise_cases import build_pointwise as _build
from schedule_isa import force_isa

import minitvm as tvm
from minitvm import relay
from minitvm.backend import kernel_cache
from minitvm.schedule import conv_pointwise
from minitvm.schedule.common import vector_isa
from minitvm.tir import expr as E
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import post_order, walk_stmts

needs_pointwise = pytest.mark.skipif(not conv_pointwise.ENABLED[vector_isa()],
                                     reason="the 1x1 schedule is off for this ISA (ENABLED)")


@pytest.fixture(autouse=True)
def _fresh_kernels():
    """Kernels built with a switch monkeypatched are not reused by the next test."""
    kernel_cache.clear_cache()
    yield
    kernel_cache.clear_cache()


def _prefetches(prim) -> list:
    return [e for s in walk_stmts(prim.body) if isinstance(s, S.Evaluate)
            for e in post_order(s.value) if isinstance(e, E.Call) and e.op_name == "tir.prefetch"]


def _weight_prefetches(prim) -> list:
    wp = prim.buffer_map[prim.params[1]]
    return [call for call in _prefetches(prim) if call.args[0].buffer.data is wp.data]


def _names(prim) -> set:
    return {s.buffer.name for s in walk_stmts(prim.body) if isinstance(s, S.DeclBuffer)}


SHAPES = [
    # (N, C, H, W), O, epilogue: the small-plane 1x1 convs of EfficientNet-B0, MobileNetV2
    # and RegNet (channel vectors), then odd ones
    ((1, 192, 7, 7), 1152, "silu"),
    ((1, 1152, 7, 7), 192, "residual"),
    ((1, 672, 7, 7), 192, "bias"),
    ((1, 480, 14, 14), 80, "bias"),        # pixel tiles outer (80 channels < 196 pixels)
    ((1, 432, 7, 7), 432, "residual_relu"),
    ((1, 960, 7, 7), 320, "bias"),
    ((1, 320, 7, 7), 1280, "bias_clip"),
    ((1, 208, 14, 14), 208, "relu"),
    ((2, 37, 7, 7), 56, "residual_relu"),  # odd input channels, 3 panels and a half, batch 2
    ((3, 130, 7, 7), 88, "silu"),          # 2 channel blocks of 65, a half panel, batch 3
    ((2, 136, 14, 14), 24, "residual"),    # pixel tiles outer, a panel and a half, batch 2
    ((1, 16, 3, 3), 8, "bias_clip"),            # 9 pixels, one half panel
]


@needs_pointwise
@pytest.mark.parametrize("shape, o, epi", SHAPES)
def test_small_planes_match_numpy(shape, o, epi):
    lib, feeds, want = _build(shape, o, epi)
    np.testing.assert_allclose(_run(lib, feeds), want, rtol=2e-4, atol=2e-4)
    prim = _conv_prim(lib)
    assert "pw_acc" in _names(prim) and "pw_res" in _names(prim)


@needs_pointwise
@pytest.mark.parametrize("shape, o, epi", [((1, 192, 7, 7), 96, "residual_relu"),
                                           ((2, 40, 14, 14), 24, "silu")])
def test_two_threads_match_numpy(shape, o, epi):
    lib, feeds, want = _build(shape, o, epi, seed=1)
    np.testing.assert_allclose(_run(lib, feeds, threads=2), want, rtol=2e-4, atol=2e-4)


@needs_pointwise
@pytest.mark.parametrize("epi", ["silu", "residual_relu"])
def test_store_one_lane_at_a_time_matches(epi, monkeypatch):
    """``TRANSPOSED_STORE`` off: the tile is stored one output channel per lane, as before;
    the same numbers."""
    monkeypatch.setattr(conv_pointwise, "TRANSPOSED_STORE", False)
    lib, feeds, want = _build((2, 24, 7, 7), 40, epi, seed=2)
    np.testing.assert_allclose(_run(lib, feeds), want, rtol=2e-4, atol=2e-4)
    assert "pw_res" not in _names(_conv_prim(lib))


def _transposed_reads(prim) -> list:
    """The loops over output channels around the transposed store's pixel vectors."""
    out = [b for b in prim.buffer_map.values() if b.name == "out0"][0]
    found = []
    for s in walk_stmts(prim.body):
        if isinstance(s, S.For) and s.kind != S.ForKind.VECTORIZED and \
                isinstance(s.body, S.For) and s.body.kind == S.ForKind.VECTORIZED and \
                isinstance(s.body.body, S.BufferStore) and s.body.body.buffer.data is out.data:
            found.append(s)
    return found


@pytest.mark.parametrize("isa, panel", [("avx512", 32), ("avx2", 16)])
@pytest.mark.parametrize("unroll", [1, 4, 32])
@pytest.mark.parametrize("epi", ["residual_relu", "bias"])
def test_transposed_store_rolled_or_unrolled_matches(unroll, epi, isa, panel, monkeypatch):
    """``TRANSPOSE_UNROLL``: the loop reading the tile back one output channel at a time is
    rolled (1, the default), unrolled in turns of 4, or fully unrolled; the same numbers, and
    the kind of loop asked for (a tail panel of 8 channels of 40 is unrolled whole at 32),
    with the schedule made as on each vector ISA (panels of 32 / 16 channels)."""
    force_isa(monkeypatch, isa)
    if not conv_pointwise.ENABLED[isa]:
        pytest.skip(f"the 1x1 schedule is off for {isa} (ENABLED)")
    monkeypatch.setattr(conv_pointwise, "TRANSPOSE_UNROLL", unroll)
    lib, feeds, want = _build((1, 64, 7, 7), 40, epi, seed=5)
    np.testing.assert_allclose(_run(lib, feeds), want, rtol=2e-4, atol=2e-4)
    loops = _transposed_reads(_conv_prim(lib))
    assert loops
    kinds = {(s.kind, int(s.extent.value)) for s in loops}
    if unroll == 1:
        assert kinds <= {(S.ForKind.SERIAL, panel), (S.ForKind.SERIAL, 8)}
    elif unroll == 4:
        assert kinds == {(S.ForKind.UNROLLED, 4)}
    else:
        assert kinds <= {(S.ForKind.UNROLLED, panel), (S.ForKind.UNROLLED, 8)}


@needs_pointwise
def test_store_runs_late_epilogue_along_pixels():
    """A residual epilogue runs on the transposed rows: the residual is read along the pixels
    (a vector load of the flat view), the bias once per output row; silu runs on the tile's
    vectors before the copy, so the stores into the output read only the copy."""
    lib, _, _ = _build((1, 64, 7, 7), 48, "residual_relu")
    prim = _conv_prim(lib)
    out = [b for b in prim.buffer_map.values() if b.name == "out0"][0]
    rows = [s for s in walk_stmts(prim.body) if isinstance(s, S.For) and
            s.kind == S.ForKind.VECTORIZED and isinstance(s.body, S.BufferStore) and
            s.body.buffer.data is out.data]
    g = conv_pointwise.geometry(_conv_stage((1, 64, 7, 7), 48))
    heights = conv_pointwise.row_tiles(49, g["rows"])
    assert rows and {int(s.extent.value) for s in rows} == {r for _, r, _ in heights}
    for s in rows:
        loads = {e.buffer.name for e in post_order(s.body.value) if isinstance(e, E.BufferLoad)}
        assert "pw_res" in loads and any(n.endswith("_flat") for n in loads)  # the residual
    lib, _, _ = _build((1, 64, 7, 7), 48, "silu")
    prim = _conv_prim(lib)
    out = [b for b in prim.buffer_map.values() if b.name == "out0"][0]
    for s in walk_stmts(prim.body):
        if isinstance(s, S.BufferStore) and s.buffer.data is out.data:
            loads = {e.buffer.name for e in post_order(s.value) if isinstance(e, E.BufferLoad)}
            assert loads == {"pw_res"}


@needs_pointwise
def test_prefetch_next_block_of_weights():
    """Panels outer with channel blocks (192 channels: 3 blocks of 64): every turn of a tile's
    reduction prefetches the weight panel's row one block (64 channels) on, each of its cache
    lines (two for a 32-lane panel); the prefetches change no result."""
    lib, feeds, want = _build((1, 192, 7, 7), 128, "relu", seed=4)
    np.testing.assert_allclose(_run(lib, feeds), want, rtol=2e-4, atol=2e-4)
    prim = _conv_prim(lib)
    pfs = _prefetches(prim)
    assert pfs
    wp = prim.buffer_map[prim.params[1]]
    for call in pfs:
        (ld,) = call.args
        assert isinstance(ld, E.BufferLoad) and ld.buffer.data is wp.data
        assert isinstance(ld.indices[2], E.IntImm)
    # every cache line of a row: lanes 0, 16, .. of the panel
    width = int(wp.shape[2])
    lanes = {call.args[0].indices[2].value for call in pfs}
    assert lanes == set(range(0, width, 16))
    assert "llvm.prefetch" in lib.get_lib().kernels[_kernel_name(lib)].ir


def _kernel_name(lib):
    (name,) = [n for n in lib.get_lib().kernels if "conv2d" in n]
    return name


@needs_pointwise
@pytest.mark.parametrize("shape, o, on", [((1, 480, 14, 14), 80, False),  # pixel tiles outer
                                          ((1, 64, 8, 8), 32, False),     # pixel vectors
                                          ((1, 40, 7, 7), 64, True)])     # one pass, panels outer
def test_prefetch_only_with_panels_outer(shape, o, on, monkeypatch):
    lib, feeds, want = _build(shape, o, "bias", seed=5)
    np.testing.assert_allclose(_run(lib, feeds), want, rtol=2e-4, atol=2e-4)
    assert bool(_weight_prefetches(_conv_prim(lib))) == on
    if on:
        monkeypatch.setattr(conv_pointwise, "PREFETCH_WEIGHTS", False)
        kernel_cache.clear_cache()
        lib, feeds, want = _build(shape, o, "bias", seed=5)
        assert not _weight_prefetches(_conv_prim(lib))
        np.testing.assert_allclose(_run(lib, feeds), want, rtol=2e-4, atol=2e-4)


def _conv_stage(shape, o):
    from minitvm.relay.backend import te_compiler

    x, w = relay.var("x", shape=shape), relay.var("w", shape=(o, shape[1], 1, 1))
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function(
        [x, w], relay.nn.conv2d(x, w))))
    _, _, (conv,) = te_compiler.build_te(mod["main"])
    return conv


@pytest.mark.parametrize("isa, packed", [("avx512", False), ("avx2", True)])
def test_channel_input_packing_per_isa(isa, packed, monkeypatch):
    """Channel vectors pack the input for the tiles from ``PACK_MIN_CHANNELS[isa]`` input
    channels: never on AVX-512 (it lost there once the weights were prefetched), from 1024
    on AVX2; the ``pw_pack`` knob still chooses either."""
    monkeypatch.setattr(conv_pointwise, "vector_isa", lambda: isa)
    t = _conv_stage((1, 1152, 7, 7), 192)
    g = conv_pointwise.geometry(t)
    assert g["mode"] == "channels" and g["pw_pack"] is packed
    assert conv_pointwise.geometry(t, {"pw_pack": not packed})["pw_pack"] is (not packed)
    assert conv_pointwise.geometry(_conv_stage((1, 512, 7, 7), 192))["pw_pack"] is False

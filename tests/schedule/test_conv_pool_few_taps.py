"""Convs of few taps (``conv_lanes.FEW_TAPS_MAX``: grayscale and RGB stems) pool their 2x2 /
2 windows in their tiles by default on both ISAs' schedules (``tests/schedule_isa.force_isa``),
at planes of 1 to 17 columns, odd sizes, a padded conv or pool and ceil-mode overhangs,
matching numpy; on AVX2 a 16-lane tile holds one 2x2 window (``POOL_TILE_VECTORS``: two
spilled its 16 ymm registers), on AVX-512 as many as before."""

import numpy as np
import pytest
from conv_reference import conv_ref, np_max_pool
from schedule_isa import force_isa

import minitvm as tvm
from minitvm import relay
from minitvm.backend import kernel_cache
from minitvm.contrib import graph_executor
from minitvm.runtime import threadpool
from minitvm.schedule import conv_lanes
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import walk_stmts

# (plane, input channels, output channels, conv filter, conv padding, pool padding, ceil mode,
# pooled in the tiles on AVX-512 too: there OW 7 and 14 are conv_direct's, two kernels)
BRANCHES = [
    (1, 1, 16, 3, 1, 0, True, True),     # one pixel: one overhanging window
    (2, 1, 16, 3, 1, 0, False, True),
    (3, 3, 16, 3, 1, 0, True, True),     # an odd plane, its last windows overhanging
    (5, 1, 16, 3, 0, 1, False, True),    # an unpadded conv (3x3 plane), a padded pool
    (7, 1, 6, 5, 2, 0, True, False),     # LeNet's 6 channels (a channel tail), 5x5
    (8, 3, 16, 3, 1, 1, False, True),    # a padded pool on an even plane
    (13, 2, 32, 3, 1, 0, False, True),   # floor: the last row and column unread
    (14, 1, 16, 3, 1, 0, False, False),  # soft_decision_tree's stem at half its plane
    (15, 1, 16, 3, 1, 0, True, True),
    (17, 3, 20, 3, 1, 0, True, True),    # a channel tail, overhang
]
# two branches a build (a test a pair, each about a second)
PAIRS = [BRANCHES[i:i + 2] for i in range(0, len(BRANCHES), 2)]


def _build(branches, n=2, seed=0):
    """One graph of a conv + bias + relu + 2x2 / 2 max pool per branch (each its own input):
    (lib, feeds, expected outputs)."""
    rng = np.random.default_rng(seed)
    args, outs, feeds, wants = [], [], {}, []
    for i, (hw, c, o, k, p, pp, ceil, _) in enumerate(branches):
        xv = rng.standard_normal((n, c, hw, hw)).astype("float32")
        wv = rng.standard_normal((o, c, k, k)).astype("float32")
        bv = rng.standard_normal(o).astype("float32")
        conv = np.maximum(conv_ref(xv, wv, (1, 1), (p, p, p, p)) + bv[:, None, None], 0)
        wants.append(np_max_pool(conv, 2, 2, pp, ceil))
        x = relay.var(f"x{i}", shape=xv.shape)
        y = relay.nn.conv2d(x, relay.const(wv), padding=(p, p), channels=o, kernel_size=(k, k))
        y = relay.nn.relu(relay.nn.bias_add(y, relay.const(bv)))
        outs.append(relay.nn.max_pool2d(y, (2, 2), (2, 2), padding=(pp, pp), ceil_mode=ceil))
        args.append(x)
        feeds[f"x{i}"] = xv
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(tvm.IRModule.from_expr(relay.Function(args, relay.Tuple(outs))),
                          target="llvm")
    return lib, feeds, wants


def _run(lib, feeds, threads):
    before = threadpool.get_num_threads()
    try:
        threadpool.set_num_threads(threads)
        m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
        m.run(**feeds)
        return [m.get_output(i).numpy() for i in range(m.get_num_outputs())]
    finally:
        threadpool.set_num_threads(before)


def _pixel_table_kernels(lib) -> int:
    """Kernels of ``lib`` that pool in conv_lanes' tiles: a conv + max pool reading its pixel
    table (``cl_pix``) and declaring no buffer of the conv's map."""
    count = 0
    for name, k in lib.get_lib().kernels.items():
        names = {s.buffer.name for s in walk_stmts(k.prim_func.body)
                 if isinstance(s, S.DeclBuffer)}
        count += "conv2d" in name and "max_pool2d" in name and "cl_pix" in names
    return count


@pytest.mark.parametrize("branches", PAIRS, ids=[str(p[0][0]) for p in PAIRS])
@pytest.mark.parametrize("isa", ["avx2", "avx512"])
def test_few_taps_pool_in_the_tiles_at_edge_planes(isa, branches, monkeypatch):
    force_isa(monkeypatch, isa)
    lib, feeds, wants = _build(branches)
    assert _pixel_table_kernels(lib) == sum(isa == "avx2" or b[-1] for b in branches)
    for threads in (1, 2):
        for got, want in zip(_run(lib, feeds, threads), wants):
            assert got.shape == want.shape
            np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-4)
    kernel_cache.clear_cache()


@pytest.mark.parametrize("isa, width, k, windows", [
    ("avx2", 16, 2, 1),      # two windows: 16 ymm accumulators, spilled
    ("avx2", 16, 3, 1),      # one window whatever the registers (as before)
    ("avx512", 16, 2, 3),    # one zmm a pixel: unchanged
    ("avx512", 32, 2, 2),
    ("avx512", 64, 3, None),
])
def test_windows_a_tile_by_isa(isa, width, k, windows, monkeypatch):
    monkeypatch.setattr(conv_lanes, "vector_isa", lambda: isa)
    assert conv_lanes.pool_windows({"lanes_width": width}, k) == windows


def test_avx512_pooled_tiles_as_before(monkeypatch):
    """On AVX-512 ``POOL_TILE_VECTORS`` bounds the windows as ``POOL_MAX_ACCUMULATORS`` did:
    every width and window the same count."""
    monkeypatch.setattr(conv_lanes, "vector_isa", lambda: "avx512")
    for width in (16, 32, 48, 64):
        for k in (2, 3, 4):
            g = {"lanes_width": width}
            regs = width // conv_lanes.LANES
            old = None if k * k * regs > conv_lanes.POOL_MAX_ACCUMULATORS else max(
                n for n in range(1, max(1, round(conv_lanes.tile_pixels(g) / (k * k))) + 1)
                if n == 1 or n * k * k * regs <= conv_lanes.POOL_MAX_ACCUMULATORS)
            assert conv_lanes.pool_windows(g, k) == old

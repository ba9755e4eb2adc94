"""``schedule.conv_pool``: a fused conv + elementwise epilogue + ``k x k`` / ``k`` max pool
(Relay's FuseConvPool) on ``conv_lanes`` pools in the conv's tiles: one kernel, no buffer of
the conv's map, the pixel table listing whole windows; it matches numpy on one and two
threads, at widths 16 to 64, a channel tail, a floor plane, a stride, a residual; where a
window does not fit a tile the function lowers stage by stage, also matching numpy. Padded
and ceil-mode windows (their outside positions clamped into the window) and, with
``conv_lanes.POOL_OVERLAP``, overlapping ones match numpy and, bit for bit, the two kernels."""

import numpy as np
import pytest
from conv_reference import conv_kernel, conv_ref, np_max_pool, run_graph

import minitvm as tvm
from minitvm import relay
from minitvm.backend import kernel_cache
from minitvm.relay.transform import fuse_conv_pool as fcp
from minitvm.schedule import conv_lanes, conv_pool
from minitvm.schedule.common import vector_isa
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import walk_stmts


@pytest.fixture(autouse=True)
def any_conv_pools(monkeypatch):
    """Pool in the tiles every conv whose tiles hold a window (``conv_lanes.POOL_ANY_CONV``),
    not only the default's few-taps ones: the cases cover the widths and geometries."""
    from minitvm.schedule import conv_lanes as lanes

    monkeypatch.setattr(lanes, "POOL_ANY_CONV", True)


def _build(n, c, o, hw, k=3, pool=2, stride=1, residual=False, seed=0):
    """conv (padding k // 2) + bias [+ residual] + relu + ``pool x pool`` / ``pool`` max pool,
    built at opt_level 3: (lib, feeds, expected, the conv's output shape)."""
    rng = np.random.default_rng(seed)
    xv = rng.standard_normal((n, c, hw, hw)).astype("float32")
    wv = rng.standard_normal((o, c, k, k)).astype("float32")
    bv = rng.standard_normal(o).astype("float32")
    p = k // 2
    want = conv_ref(xv, wv, (stride, stride), (p, p, p, p)) + bv[:, None, None]
    x = relay.var("x", shape=xv.shape)
    y = relay.nn.conv2d(x, relay.const(wv), strides=(stride, stride), padding=(p, p),
                        channels=o, kernel_size=(k, k))
    y = relay.nn.bias_add(y, relay.const(bv))
    args, feeds = [x], {"x": xv}
    if residual:
        rv = rng.standard_normal(want.shape).astype("float32")
        r = relay.var("r", shape=want.shape)
        y = y + r
        args.append(r)
        feeds["r"] = rv
        want = want + rv
    want = np.maximum(want, 0)
    y = relay.nn.max_pool2d(relay.nn.relu(y), (pool, pool), (pool, pool))
    nb, ch, oh, ow = want.shape
    ph, pw = oh // pool, ow // pool
    want = want[:, :, :ph * pool, :pw * pool].reshape(nb, ch, ph, pool, pw, pool).max(
        axis=(3, 5))
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(tvm.IRModule.from_expr(relay.Function(args, y)), target="llvm")
    return lib, feeds, want, (nb, ch, oh, ow)


def _buffer_shapes(prim) -> list[tuple[int, ...]]:
    """The shapes of the buffers the kernel declares (its temporaries, stack or workspace)."""
    return [tuple(int(getattr(d, "value", d)) for d in s.buffer.shape)
            for s in walk_stmts(prim.body) if isinstance(s, S.DeclBuffer)]


def _buffer_names(prim) -> set[str]:
    return {s.buffer.name for s in walk_stmts(prim.body) if isinstance(s, S.DeclBuffer)}


CASES = [
    dict(n=2, c=3, o=32, hw=28),                 # ProtoNet's stem: 16-lane few-taps tiles
    dict(n=1, c=16, o=32, hw=7),                 # odd plane: the last row and column unread
    dict(n=2, c=3, o=20, hw=15),                 # a channel tail (20 of 32)
    dict(n=1, c=16, o=64, hw=10, isa="avx512"),  # 64-lane tiles: one window a tile (AVX2:
    # another schedule, two kernels)
    dict(n=1, c=8, o=48, hw=9),                  # 48-lane tiles
    dict(n=1, c=8, o=32, hw=13, pool=3),         # 3 x 3 windows
    dict(n=1, c=8, o=32, hw=17, stride=2),       # a strided conv
    dict(n=2, c=8, o=32, hw=12, residual=True),  # an operand read at the conv's pixels
]


@pytest.mark.parametrize("case", CASES, ids=[str(i) for i in range(len(CASES))])
def test_pooled_in_the_tiles_matches_numpy(case):
    kernel_cache.clear_cache()
    case = dict(case)
    isa = case.pop("isa", vector_isa())
    lib, feeds, want, conv_shape = _build(**case)
    if isa != vector_isa():  # (not pooled in the tiles on this ISA: the numerics only)
        np.testing.assert_allclose(run_graph(lib, feeds, 1), want, rtol=2e-5, atol=2e-4)
        return
    k = conv_kernel(lib)
    assert "max_pool2d" in k.prim_func.attrs["global_symbol"] or len(lib.get_lib().kernels) == 1
    assert "cl_pix" in _buffer_names(k.prim_func)  # conv_lanes' pixel table
    assert conv_shape not in _buffer_shapes(k.prim_func)  # no map of the conv
    for threads in (1, 2):
        np.testing.assert_allclose(run_graph(lib, feeds, threads), want, rtol=2e-5, atol=2e-4)
    kernel_cache.clear_cache()


def test_a_merged_function_the_tiles_cannot_pool_lowers_stage_by_stage(monkeypatch):
    monkeypatch.setattr(fcp, "pools_in_tiles", lambda conv, k: True)  # merged all the same
    monkeypatch.setattr(conv_lanes, "POOL_MAX_ACCUMULATORS", 0)
    kernel_cache.clear_cache()
    lib, feeds, want, conv_shape = _build(n=1, c=3, o=16, hw=12)
    k = conv_kernel(lib)
    assert "max_pool2d" in k.name
    assert conv_shape in _buffer_shapes(k.prim_func)  # the conv's map, then the pool
    np.testing.assert_allclose(run_graph(lib, feeds, 1), want, rtol=2e-5, atol=2e-4)
    kernel_cache.clear_cache()


@pytest.mark.parametrize("width, k, windows", [
    (16, 2, 3), (32, 2, 2), (48, 2, 2), (64, 2, 1), (32, 3, 1), (64, 3, None)])
def test_windows_a_tile(width, k, windows, monkeypatch):
    monkeypatch.setattr(conv_lanes, "vector_isa", lambda: "avx512")
    assert conv_lanes.pool_windows({"lanes_width": width}, k) == windows


def test_pool_tiles_cover_the_windows(monkeypatch):
    monkeypatch.setattr(conv_lanes, "vector_isa", lambda: "avx512")
    g = {"lanes_width": 32, "pool": (2, 7, 7)}  # 49 windows, two a tile
    assert conv_lanes.pool_tiles(g, 49) == [(0, 8, 24), (192, 4, 1)]
    assert conv_lanes.pool_tiles(g, 6) == [(0, 8, 3)]


def test_pool_classes_trim_the_padding_taps():
    # 3x3 conv, padding 1, 14x14 -> 2x2 windows on 7x7: the first pooled row's windows read
    # filter rows 0..3 (their top pixels read the padding row through row 0, their bottom
    # pixels need it), the last the same; an odd plane (7x7 -> 3x3) leaves the last conv row
    # unread, so the last windows need every filter row
    g = dict(oh=14, ow=14, h=14, w=14, kh=3, kw=3, sh=1, sw=1, dh=1, dw=1, pt=1, pl=1,
             pool=(2, 7, 7))
    classes = conv_lanes.pool_classes(g)
    assert sum(nr * nc for _, nr, _, nc, _, _ in classes) == 49
    assert classes[0] == (0, 7, 0, 7, (0, 3), (0, 3))  # (one class: every window reads all)
    g = dict(g, oh=28, ow=28, h=28, w=28, pool=(2, 14, 14))
    assert sum(nr * nc for _, nr, _, nc, _, _ in conv_lanes.pool_classes(g)) == 196
    g = dict(oh=7, ow=7, h=7, w=7, kh=5, kw=5, sh=1, sw=1, dh=1, dw=1, pt=2, pl=2,
             pool=(2, 3, 3))
    classes = conv_lanes.pool_classes(g)
    assert [c[4] for c in classes if c[0] == 0 and c[2] == 0] == [(1, 5)]  # rows 0, 1
    assert {c[4] for c in classes if c[0] == 1} == {(0, 5)}  # rows 2, 3: every filter row


def test_the_chain_walk_does_not_recurse():
    class Stage:
        def __init__(self, prev):
            self.prev = prev

    first = Stage(None)
    s = first
    for _ in range(100_000):
        s = Stage(s)
    got = conv_pool.chain_back(s, first, lambda st: [(st.prev, True)])
    assert got is not None and len(got) == 100_001
    assert conv_pool.chain_back(s, first, lambda st: [(st.prev, st is not s.prev)]) is None


def _build_pool(n, c, o, hw, pool, k=3, ceil_mode=False, seed=0):
    """conv (padding k // 2) + bias + relu + ``nn.max_pool2d(**pool)``: (lib, feeds, expected,
    the conv's output shape)."""
    rng = np.random.default_rng(seed)
    xv = rng.standard_normal((n, c, hw, hw)).astype("float32")
    wv = rng.standard_normal((o, c, k, k)).astype("float32")
    bv = rng.standard_normal(o).astype("float32")
    p = k // 2
    conv = np.maximum(conv_ref(xv, wv, (1, 1), (p, p, p, p)) + bv[:, None, None], 0)
    x = relay.var("x", shape=xv.shape)
    y = relay.nn.conv2d(x, relay.const(wv), padding=(p, p), channels=o, kernel_size=(k, k))
    y = relay.nn.relu(relay.nn.bias_add(y, relay.const(bv)))
    pk, ps, pp = pool
    y = relay.nn.max_pool2d(y, (pk, pk), (ps, ps), padding=(pp, pp), ceil_mode=ceil_mode)
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(tvm.IRModule.from_expr(relay.Function([x], y)), target="llvm")
    return lib, {"x": xv}, np_max_pool(conv, pk, ps, pp, ceil_mode), conv.shape


def _two_kernels(lib_fn):
    """The same build with FuseConvPool off: the conv's map, then the pool's own kernel."""
    saved = fcp.ENABLED
    fcp.ENABLED = False
    try:
        kernel_cache.clear_cache()
        return lib_fn()
    finally:
        fcp.ENABLED = saved
        kernel_cache.clear_cache()


# (``apart``: also built as two kernels, whose output the pooled tiles' equals bit for bit)
OVERLAP_CASES = [
    dict(n=1, c=3, o=32, hw=12, pool=(3, 2, 1), apart=True),  # ResNet's 3x3 / 2, padding 1
    dict(n=2, c=3, o=16, hw=13, pool=(3, 2, 1), apart=True),  # odd plane: last window padded
    dict(n=1, c=8, o=32, hw=11, pool=(3, 2, 0)),    # SqueezeNet's: overlapping, unpadded
    dict(n=1, c=3, o=32, hw=9, pool=(2, 1, 0)),     # stride 1
    dict(n=1, c=3, o=20, hw=12, pool=(3, 2, 0), ceil_mode=True),  # overhang; channel tail
    dict(n=1, c=4, o=32, hw=7, pool=(3, 3, 2)),     # padding 2: corner windows of one pixel
]


@pytest.mark.parametrize("case", OVERLAP_CASES, ids=[str(i) for i in range(len(OVERLAP_CASES))])
def test_overlapping_and_padded_pools_match_numpy_and_the_two_kernels(case, monkeypatch):
    monkeypatch.setattr(conv_lanes, "POOL_OVERLAP", True)  # (off by default: recomputed pixels)
    kernel_cache.clear_cache()
    case = dict(case)
    apart = case.pop("apart", False)
    lib, feeds, want, conv_shape = _build_pool(**case)
    k = conv_kernel(lib)
    assert "cl_pix" in _buffer_names(k.prim_func)  # pooled in conv_lanes' tiles
    assert conv_shape not in _buffer_shapes(k.prim_func)  # no map of the conv
    got = run_graph(lib, feeds, 1)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-4)
    np.testing.assert_array_equal(run_graph(lib, feeds, 2), got)
    if apart:
        two = _two_kernels(lambda: _build_pool(**case)[0])
        assert len(two.get_lib().kernels) == 2
        np.testing.assert_array_equal(run_graph(two, feeds, 1), got)  # (max is exact)
        nan = {"x": feeds["x"].copy()}
        nan["x"][0, 0, 0, 0] = nan["x"][-1, -1, -1, 5] = np.nan  # (a corner, the last row)
        got = run_graph(lib, nan, 1)
        assert np.isnan(got).any() and not np.isnan(got).all()
        np.testing.assert_array_equal(run_graph(two, nan, 1), got)  # NaNs where theirs are
    kernel_cache.clear_cache()


def test_window_pixels_of_a_padded_pool_clamp_into_the_window():
    # 3x3 / 2, padding 1, on a 5x5 conv plane -> 3x3 pooled: window (0, 0) covers rows and
    # columns -1..1, its outside positions clamped to 0; window (2, 2) rows 3..5 -> 3, 4, 4
    g = dict(oh=5, ow=5, pool=(3, 3, 3), pool_at=(2, 1, 1))
    assert [conv_lanes.window_pixel(g, 0, 0, r) for r in range(9)] == [
        (0, 0), (0, 0), (0, 1), (0, 0), (0, 0), (0, 1), (1, 0), (1, 0), (1, 1)]
    assert [conv_lanes.window_pixel(g, 2, 2, r) for r in (0, 4, 8)] == [(3, 3), (4, 4), (4, 4)]
    # unpadded windows of k at stride k stay unclamped: the positions of the plain pool
    g = dict(oh=4, ow=4, pool=(2, 2, 2))
    assert conv_lanes.window_pixel(g, 1, 1, 3) == (3, 3)


def test_pool_classes_of_overlapping_windows():
    # 3x3 conv, padding 1, 8x8 plane, 3x3 / 2 pool padding 1 -> 4x4 pooled: the first pooled
    # row's windows read conv rows 0..1 (filter rows 1..3 for row 0, 0..3 together), the last
    # rows 5..7 (row 7 reads the padding below through filter row 2)
    g = dict(oh=8, ow=8, h=8, w=8, kh=3, kw=3, sh=1, sw=1, dh=1, dw=1, pt=1, pl=1,
             pool=(3, 4, 4), pool_at=(2, 1, 1))
    classes = conv_lanes.pool_classes(g)
    assert sum(nr * nc for _, nr, _, nc, _, _ in classes) == 16
    assert all(c[4] == (0, 3) and c[5] == (0, 3) for c in classes)


def test_by_default_overlapping_windows_stay_two_kernels_and_padded_ones_pool():
    kernel_cache.clear_cache()
    lib, feeds, want, _ = _build_pool(n=1, c=3, o=16, hw=10, pool=(3, 2, 1))
    assert len(lib.get_lib().kernels) == 2
    np.testing.assert_allclose(run_graph(lib, feeds, 1), want, rtol=2e-5, atol=2e-4)
    kernel_cache.clear_cache()
    for pool, ceil_mode in (((2, 2, 1), False), ((2, 2, 0), True)):  # padded; overhanging
        lib, feeds, want, conv_shape = _build_pool(n=1, c=3, o=16, hw=11, pool=pool,
                                                   ceil_mode=ceil_mode)
        k = conv_kernel(lib)
        assert len(lib.get_lib().kernels) == 1
        assert "cl_pix" in _buffer_names(k.prim_func)  # pooled in the tiles
        assert conv_shape not in _buffer_shapes(k.prim_func)
        assert want.shape[2:] == (6, 6)
        np.testing.assert_allclose(run_graph(lib, feeds, 1), want, rtol=2e-5, atol=2e-4)
        kernel_cache.clear_cache()


def test_takes_windows_every_window_must_see_the_plane(monkeypatch):
    assert conv_pool.takes_windows(2, (2, 1, 1), (6, 6), (10, 10))  # 10 + 2 padding -> 6
    assert not conv_pool.takes_windows(3, (2, 1, 1), (5, 5), (10, 10))  # overlapping: off
    monkeypatch.setattr(conv_lanes, "POOL_OVERLAP", True)
    assert conv_pool.takes_windows(3, (2, 1, 1), (5, 5), (10, 10))
    assert not conv_pool.takes_windows(3, (2, 3, 0), (6, 5), (10, 10))  # a row all padding
    assert not conv_pool.takes_windows(2, (2, 0, 0), (6, 5), (10, 10))  # past the last row

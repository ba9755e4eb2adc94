"""The implicit-GEMM conv2d in bands of output rows (``conv_direct.band_rows``): a large phased
copy is made band by band into a small workspace, each band's panels computed right after its
copy. Results match numpy for strided and stride-1 convs, row mode and padding columns, fused
epilogues (a residual too), channel blocks, short channel tiles, trimmed filter rows, batches,
a symbolic batch and two threads; the band size follows its rules."""

import numpy as np
import pytest
from conv_reference import build_conv, conv_ref, run_graph

import minitvm as tvm
from minitvm import relax, relay, tir
from minitvm.backend import kernel_cache
from minitvm.contrib import graph_executor
from minitvm.schedule import conv_direct
from minitvm.tir import expr as E
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import post_order, walk_stmts


@pytest.fixture
def bands(monkeypatch, direct_conv_only):
    """``bands(nbytes)``: every phased copy is made in bands whose workspace takes at most
    ``nbytes`` (on for both ISAs, whatever the size of the copy)."""

    def force(nbytes):
        kernel_cache.clear_cache()
        monkeypatch.setattr(conv_direct, "BANDS", {"avx512": True, "avx2": True})
        monkeypatch.setattr(conv_direct, "BAND_MIN_BYTES", 0)
        monkeypatch.setattr(conv_direct, "BAND_BYTES", nbytes)
        monkeypatch.setattr(conv_direct, "BAND_BYTES_WIDE", {"avx512": 0, "avx2": 0})

    yield force
    kernel_cache.clear_cache()


def _conv_prim(lib):
    (prim,) = [k.prim_func for name, k in lib.get_lib().kernels.items() if "conv2d" in name]
    return prim


def _band_loops(prim):
    return [s for s in walk_stmts(prim.body)
            if isinstance(s, S.For) and s.loop_var.name.startswith("band")]


def _workspaces(prim):
    return {s.buffer.name: [int(d) for d in s.buffer.shape] for s in walk_stmts(prim.body)
            if isinstance(s, S.DeclBuffer) and s.buffer.name.startswith("xph")}


CASES = [
    # (N, C, H, W), O, (KH, KW), strides, (top, left, bottom, right), dilation, epilogue,
    # the workspace's bytes (bands of 4 output rows, 8 for the 7x7 and the dilated conv)
    ((1, 8, 64, 64), 16, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), "bias_relu", 21120),  # DeepLab stem
    ((1, 32, 64, 64), 20, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), "bias_relu", 84480),  # blocks
    ((1, 5, 64, 64), 13, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), "residual_relu", 13200),
    ((2, 4, 64, 64), 6, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), "none", 10560),  # one channel tile
    ((4, 8, 64, 64), 32, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), "bias_relu", 21120),  # by image
    ((1, 3, 32, 64), 10, (7, 7), (2, 2), (3, 3, 3, 3), (1, 1), "bias_relu", 18480),  # a 7x7 stem
    ((1, 4, 32, 32), 16, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), "residual_relu", 3264),
    ((1, 4, 32, 32), 16, (3, 3), (1, 1), (2, 2, 2, 2), (2, 2), "bias_relu", 6912),  # trimmed
    ((1, 4, 16, 30), 16, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), "bias_relu", 3072),  # Wq > OW
    ((1, 4, 16, 30), 8, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), "none", 3072),  # and a crop
]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("case", CASES)
def test_banded_conv_matches_numpy(case, threads, bands):
    shape, o, k, strides, pads, dil, epi, nbytes = case
    bands(nbytes)
    lib, inputs, want = build_conv(shape, o, k, strides, pads, dil, epi, np.random.default_rng(5))
    prim = _conv_prim(lib)
    assert _band_loops(prim), "the conv was not computed in bands"
    assert "xph" not in _workspaces(prim)  # no phased copy of the whole image
    np.testing.assert_allclose(run_graph(lib, inputs, threads), want, rtol=1e-4, atol=1e-4)


def test_symbolic_batch_in_bands(bands):
    """A symbolic batch (Relax) runs its images one by one or split over the pool, each in
    bands either way."""
    bands(8 * 4 * 33 * 5 * 4)  # bands of 4 rows
    n = tir.Var("n", "int64")
    x = relax.Var("x", relax.TensorStructInfo([n, 8, 64, 64], "float32"))
    rng = np.random.default_rng(3)
    wt = rng.standard_normal((32, 8, 3, 3)).astype("float32")
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            y = bb.emit(relax.op.nn.conv2d(x, relax.const(wt), strides=2, padding=1))
            gv = bb.emit_output(bb.emit(relax.op.nn.relu(y)))
        bb.emit_func_output(gv)
    vm = relax.VirtualMachine(relax.build(bb.get(), "llvm"), tvm.cpu())
    for batch in (1, 5):
        a = rng.standard_normal((batch, 8, 64, 64)).astype("float32")
        want = np.maximum(conv_ref(a, wt, (2, 2), (1, 1, 1, 1), (1, 1)), 0)
        np.testing.assert_allclose(vm["main"](a).numpy(), want, rtol=1e-4, atol=1e-4)


def test_band_workspace_and_loop(bands):
    """Bands of 4 output rows of a stride-2 3x3 conv: 8 bands, each copying its 4 + 1 phased
    rows of every channel and phase into one workspace."""
    bands(8 * 4 * 33 * 5 * 4)  # 8 channels, 4 phases, 33 columns, 5 rows
    lib, *_ = build_conv((1, 8, 64, 64), 16, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), "bias_relu",
                     np.random.default_rng(0))
    prim = _conv_prim(lib)
    (loop,) = _band_loops(prim)
    assert int(loop.extent) == 8
    (size,) = _workspaces(prim)["xph_band"]
    assert 8 * 4 * 5 * 33 <= size < 8 * 4 * 6 * 33


def _geometry(shape, o, k, strides, pads):
    from minitvm.relay.backend import te_compiler

    x, w = relay.var("x", shape=shape), relay.var("w", shape=(o, shape[1], *k))
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function(
        [x, w], relay.nn.conv2d(x, w, strides=strides, padding=pads))))
    _, _, (conv,) = te_compiler.build_te(mod["main"])
    return conv_direct.geometry(conv)


@pytest.mark.parametrize("shape, o, stride, rows", [
    ((1, 64, 128, 128), 128, 2, 2),  # DeepLab's strided convs: 66.5 KB a phased row
    ((1, 128, 64, 64), 256, 2, 2),
    ((1, 32, 128, 128), 64, 2, 4),  # 33 KB
    ((1, 3, 256, 256), 64, 2, 0),    # a 0.8 MB copy: one for the whole image
    ((1, 16, 56, 56), 16, 2, 0),     # small
])
def test_band_rows_defaults(shape, o, stride, rows, monkeypatch):
    monkeypatch.setattr(conv_direct, "BANDS", {"avx512": True, "avx2": True})
    monkeypatch.setattr(conv_direct, "BAND_BYTES", 256 * 1024)
    monkeypatch.setattr(conv_direct, "BAND_MIN_BYTES", 1 << 20)  # AVX-512's (AVX2: below)
    g = _geometry(shape, o, (3, 3), (stride, stride), (1, 1, 1, 1))
    assert conv_direct.band_rows(g) == rows


def test_band_bytes_by_host(monkeypatch):
    """The workspace follows the host CPU (``common.host_switch``): 512 KB on "rocketlake"
    (bands of 4 rows for DeepLab's 64 -> 128 strided conv), else the vector ISA's 256 KB (2
    rows); an int is every host's."""
    from minitvm.runtime import jit

    monkeypatch.setattr(conv_direct, "BANDS", {"avx512": True, "avx2": True})
    # (each CPU with AVX-512 features, as on the AVX-512 machine these were measured on: a
    # CPU's own entry applies to code of its own vector ISA only, ``common.own_isa_cpu``)
    features = ",".join(f for f in jit.host_cpu()[1].split(",") if f != "-avx512f") + \
        ",+avx512f"
    for cpu, nbytes, rows in (("rocketlake", 512 * 1024, 4), ("testcpu", 256 * 1024, 2)):
        monkeypatch.setattr(jit, "host_cpu", lambda cpu=cpu: (cpu, features))
        assert conv_direct.band_bytes() == nbytes
        g = _geometry((1, 64, 128, 128), 128, (3, 3), (2, 2), (1, 1, 1, 1))
        assert g["band_bytes"] == nbytes and conv_direct.band_rows(g) == rows
    monkeypatch.setattr(conv_direct, "BAND_BYTES", 100_000)
    assert conv_direct.band_bytes() == 100_000


def test_band_min_bytes_by_host(monkeypatch):
    """A phased copy above the host's ``BAND_MIN_BYTES`` is made in bands: 1 MB on AVX-512, 512
    KB on AVX2 (L2 of at most 512 KB a core), so det_postprocess's 32 -> 64 3x3 / 2 at 64x64 (a
    557 KB copy) and a 3 -> 64 stem at 256x256 (0.8 MB) are banded there only; an int is every
    host's."""
    from minitvm.schedule import common

    monkeypatch.setattr(conv_direct, "BANDS", {"avx512": True, "avx2": True})
    monkeypatch.setattr(conv_direct, "BAND_BYTES", 256 * 1024)
    det = _geometry((1, 32, 64, 64), 64, (3, 3), (2, 2), (1, 1, 1, 1))
    stem = _geometry((1, 3, 256, 256), 64, (3, 3), (2, 2), (1, 1, 1, 1))
    small = _geometry((1, 64, 32, 32), 64, (3, 3), (2, 2), (1, 1, 1, 1))  # 296 KB
    assert 512 * 1024 < det["xph_len"] * 4 < stem["xph_len"] * 4 < 1 << 20
    for isa, nbytes, banded in (("avx512", 1 << 20, False), ("avx2", 512 * 1024, True)):
        monkeypatch.setattr(common, "vector_isa", lambda isa=isa: isa)
        monkeypatch.setattr(common, "own_isa_cpu", lambda: None)
        assert conv_direct.band_min_bytes() == nbytes
        assert (conv_direct.band_rows(det) > 0) is banded
        assert (conv_direct.band_rows(stem) > 0) is banded
        assert conv_direct.band_rows(small) == 0
    monkeypatch.setattr(conv_direct, "BAND_MIN_BYTES", 100_000)
    assert conv_direct.band_min_bytes() == 100_000 and conv_direct.band_rows(small) > 0


def test_band_rows_rules(monkeypatch):
    """The most rows dividing the output's, in whole panels, at least twice the extra rows the
    filter reaches, within the workspace's bytes; none when bands are off."""
    monkeypatch.setattr(conv_direct, "BAND_MIN_BYTES", 0)
    monkeypatch.setattr(conv_direct, "BANDS", {"avx512": True, "avx2": True})
    monkeypatch.setattr(conv_direct, "BAND_BYTES_WIDE", {"avx512": 0, "avx2": 0})
    g = _geometry((1, 4, 48, 48), 16, (3, 3), (1, 1), (1, 1, 1, 1))  # 48 rows, 2 extra
    row = 4 * 50 * 4
    assert conv_direct.band_rows(dict(g, band_bytes=26 * row)) == 24
    assert conv_direct.band_rows(dict(g, band_bytes=25 * row)) == 16  # 24 + 2 rows do not fit
    assert conv_direct.band_rows(dict(g, band_bytes=6 * row)) == 4
    assert conv_direct.band_rows(dict(g, band_bytes=5 * row)) == 0  # 2 rows: less than 2 x 2
    assert conv_direct.band_rows(dict(g, band_bytes=14 * row)) == 12
    assert conv_direct.band_rows(dict(g, band_bytes=14 * row, nr=128)) == 8  # 12 x 48 % 128
    monkeypatch.setattr(conv_direct, "BANDS", {"avx512": False, "avx2": False})
    assert conv_direct.band_rows(dict(g, band_bytes=26 * row)) == 0


def test_band_rows_wide_workspace(monkeypatch):
    """Where no band fits ``band_bytes`` (a 5x5 stride-2 conv: each band needs at least 4 rows
    and its 2 extra ones), the bands take up to ``BAND_BYTES_WIDE``, not one copy of the whole
    image; a band that fits ``band_bytes`` keeps it."""
    monkeypatch.setattr(conv_direct, "BANDS", {"avx512": True, "avx2": True})
    monkeypatch.setattr(conv_direct, "BAND_BYTES", 256 * 1024)
    wide = {"avx512": 512 * 1024, "avx2": 512 * 1024}
    g = _geometry((1, 64, 128, 128), 128, (5, 5), (2, 2), (2, 2, 2, 2))  # 66 x 66 phased
    row = 64 * 4 * 66 * 4
    monkeypatch.setattr(conv_direct, "BAND_BYTES_WIDE", {"avx512": 0, "avx2": 0})
    assert conv_direct.band_rows(g) == 0  # 4 + 2 rows take 396 KB
    monkeypatch.setattr(conv_direct, "BAND_BYTES_WIDE", wide)
    assert conv_direct.band_rows(g) == 4
    assert conv_direct.band_rows(dict(g, band_bytes=11 * row)) == 8  # the workspace's own
    # a 3x3 conv whose bands fit the workspace: unchanged
    assert conv_direct.band_rows(_geometry((1, 64, 128, 128), 128, (3, 3), (2, 2),
                                           (1, 1, 1, 1))) == 2


@pytest.mark.parametrize("threads", [1, 2])
def test_wide_bands_match_numpy(threads, bands, monkeypatch):
    """A 5x5 stride-2 conv whose bands do not fit ``BAND_BYTES`` runs in bands of the wider
    workspace (4 output rows + 2) and matches numpy."""
    bands(4 * 4 * 34 * 5 * 4)  # 4 channels, 4 phases, 34 columns: 5 rows fit, 4 + 2 do not
    monkeypatch.setattr(conv_direct, "BAND_BYTES_WIDE", {"avx512": 4 * 4 * 34 * 6 * 4,
                                                         "avx2": 4 * 4 * 34 * 6 * 4})
    lib, inputs, want = build_conv((1, 4, 64, 64), 16, (5, 5), (2, 2), (2, 2, 2, 2), (1, 1),
                                   "bias_relu", np.random.default_rng(7))
    prim = _conv_prim(lib)
    (loop,) = _band_loops(prim)
    assert int(loop.extent) == 8  # 32 output rows in bands of 4
    assert "xph" not in _workspaces(prim)
    np.testing.assert_allclose(run_graph(lib, inputs, threads), want, rtol=1e-4, atol=1e-4)


def test_residual_fused_into_banded_tiles(bands, monkeypatch):
    """With the channel tiles outer (here: 32x32 planes made to alias), a residual is read by
    the banded tiles' fused store, at each band's pixels of the output plane."""
    monkeypatch.setattr(conv_direct, "L2_SET_BYTES", 4096)
    bands(21120)
    # (24 output channels: two full tiles of AVX-512's 12 rows, four of AVX2's 6)
    lib, inputs, want = build_conv((1, 8, 64, 64), 24, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1),
                               "residual_relu", np.random.default_rng(6))
    (loop,) = _band_loops(_conv_prim(lib))
    plane_reads = [e for s in walk_stmts(loop.body) if isinstance(s, S.BufferStore)
                   for e in post_order(s.value) if isinstance(e, E.BufferLoad) and
                   [int(d) for d in e.buffer.shape] == [24 * 32 * 32]]
    assert plane_reads, "the residual is not read inside the bands"
    m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    m.run(**inputs)
    np.testing.assert_allclose(m.get_output(0).numpy(), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("cpu, sums", [("rocketlake", False), ("testcpu", True)])
def test_tile_sums_bound_by_host(cpu, sums, bands, monkeypatch):
    """Banded channel tiles keep partial sums between channel blocks only while they take at
    most ``CHANNEL_BLOCK_SUMS_MAX`` floats for the host: a 16-row band's (12,288 on AVX-512,
    6,144 on AVX2) pass the 16,384 of other hosts, not rocketlake's 4,096 (one pass over the
    channels instead). Both match numpy."""
    from minitvm.schedule import common

    isa = common.vector_isa()
    monkeypatch.setattr(common, "host_key", lambda switch: cpu if cpu in switch else isa)
    bands(64 * 68 * 20 * 4)  # 64 channels, 68 columns: bands of 16 output rows + 4
    lib, inputs, want = build_conv((1, 64, 64, 64), 24, (5, 5), (1, 1), (2, 2, 2, 2), (1, 1),
                                   "bias_relu", np.random.default_rng(8))
    prim = _conv_prim(lib)
    assert _band_loops(prim), "the conv was not computed in bands"
    names = {s.buffer.name for s in walk_stmts(prim.body) if isinstance(s, S.DeclBuffer)}
    assert ("tile_sums" in names) == sums
    np.testing.assert_allclose(run_graph(lib, inputs, 1), want, rtol=1e-4, atol=1e-4)

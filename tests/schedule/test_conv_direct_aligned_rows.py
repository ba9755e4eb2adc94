"""The implicit-GEMM conv2d strided in width, in row mode, with its phased rows padded to whole
vectors (``conv_direct.ALIGNED_PHASE_ROWS``): the geometry pads only where the rule says
(row mode, strided, at most a quarter more a row, a band split kept), the kernel's phased copy
has the padded rows, and results match numpy on odd heights, asymmetric padding, fused
epilogues (a residual too), bands, batches, two threads and a symbolic batch (Relax)."""

import numpy as np
import pytest
from conv_reference import build_conv, conv_ref, run_graph

import minitvm as tvm
from minitvm import relax, relay, tir
from minitvm.schedule import conv_direct
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import walk_stmts


@pytest.fixture
def aligned(monkeypatch, direct_conv_only):
    """Padded phased rows on for both ISAs (the rule is measured on AVX-512 only)."""
    monkeypatch.setattr(conv_direct, "ALIGNED_PHASE_ROWS", {"avx512": True, "avx2": True})


def _conv_stage(shape, o, k, strides, pads):
    from minitvm.relay.backend import te_compiler

    x, w = relay.var("x", shape=shape), relay.var("w", shape=(o, shape[1], *k))
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function(
        [x, w], relay.nn.conv2d(x, w, strides=strides, padding=pads))))
    _, _, (conv,) = te_compiler.build_te(mod["main"])
    return conv


@pytest.mark.parametrize("shape, k, stride, pads, wq", [
    ((1, 8, 128, 128), (3, 3), 2, (1, 1, 1, 1), 80),     # OW 64: 65 -> 80 columns
    ((1, 3, 224, 224), (3, 3), 2, (1, 1, 1, 1), 128),    # OW 112: 113 -> 128
    ((1, 3, 224, 224), (7, 7), 2, (3, 3, 3, 3), 115),    # 7x7: 2 of 7 columns aligned
    ((1, 8, 129, 128), (3, 3), 2, (0, 0, 1, 1), 80),     # odd height, asymmetric padding
    ((1, 8, 64, 64), (3, 3), 2, (1, 1, 1, 1), 33),       # OW 32: 33 -> 48 is too many
    ((1, 8, 64, 64), (3, 3), 1, (1, 1, 1, 1), 66),       # stride 1: not padded
    ((1, 8, 60, 60), (3, 3), 2, (1, 1, 1, 1), 31),       # OW 30: grid mode, not padded
])
def test_padded_row_rule(shape, k, stride, pads, wq, aligned):
    g = conv_direct.geometry(_conv_stage(shape, 16, k, (stride, stride), pads))
    assert g["wq"] == wq
    assert g["plane"] == g["hq"] * wq
    if wq % 16 == 0:
        planes = shape[1] * stride * stride
        assert g["xph_len"] >= planes * g["plane"]


def test_padding_keeps_the_band_split(aligned, monkeypatch):
    """A copy in bands whose padded rows would leave no band size stays unpadded."""
    monkeypatch.setattr(conv_direct, "BANDS", {"avx512": True, "avx2": True})
    monkeypatch.setattr(conv_direct, "BAND_MIN_BYTES", 0)
    # 8 channels x 4 phases x 65 floats: a band of 2 rows + 1 takes 24,960 bytes unpadded,
    # 30,720 padded
    monkeypatch.setattr(conv_direct, "BAND_BYTES", 26 * 1024)
    g = conv_direct.geometry(_conv_stage((1, 8, 128, 128), 16, (3, 3), (2, 2), (1, 1, 1, 1)))
    assert g["wq"] == 65 and conv_direct.band_rows(g) == 2
    monkeypatch.setattr(conv_direct, "BAND_BYTES", 32 * 1024)
    g = conv_direct.geometry(_conv_stage((1, 8, 128, 128), 16, (3, 3), (2, 2), (1, 1, 1, 1)))
    assert g["wq"] == 80 and conv_direct.band_rows(g) == 2


def test_off_leaves_rows_unpadded(monkeypatch, direct_conv_only):
    monkeypatch.setattr(conv_direct, "ALIGNED_PHASE_ROWS", {"avx512": False, "avx2": False})
    g = conv_direct.geometry(_conv_stage((1, 8, 128, 128), 16, (3, 3), (2, 2), (1, 1, 1, 1)))
    assert g["wq"] == 65


def _phased_sizes(lib):
    (prim,) = [k.prim_func for name, k in lib.get_lib().kernels.items() if "conv2d" in name]
    return {s.buffer.name: int(s.buffer.shape[0]) for s in walk_stmts(prim.body)
            if isinstance(s, S.DeclBuffer) and s.buffer.name.startswith("xph")}


CASES = [
    # (N, C, H, W), O, (KH, KW), strides, (top, left, bottom, right), epilogue, bands,
    # the phased row (padded but for the 5x5 conv: two of its five columns read from column 0)
    ((1, 8, 128, 128), 20, (3, 3), (2, 2), (1, 1, 1, 1), "bias_relu", False, 80),
    ((1, 5, 67, 128), 13, (3, 3), (2, 2), (1, 1, 1, 1), "residual_relu", False, 80),  # odd H
    ((1, 4, 129, 129), 16, (3, 3), (2, 2), (0, 0, 1, 1), "none", False, 80),  # asymmetric
    ((1, 3, 224, 224), 10, (3, 3), (2, 2), (1, 1, 1, 1), "bias_relu", False, 128),  # a stem
    ((1, 3, 64, 128), 10, (5, 5), (2, 2), (2, 2, 2, 2), "bias_relu", False, 66),  # 5x5: unpadded
    ((3, 4, 64, 128), 32, (3, 3), (2, 2), (1, 1, 1, 1), "bias_relu", False, 80),  # a batch
    ((1, 8, 128, 128), 20, (3, 3), (2, 2), (1, 1, 1, 1), "bias_relu", True, 80),
    ((2, 6, 64, 128), 26, (3, 3), (2, 2), (1, 1, 1, 1), "residual_relu", True, 80),
]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("case", CASES)
def test_padded_rows_match_numpy(case, threads, aligned, monkeypatch):
    shape, o, k, strides, pads, epi, banded, wq = case
    if banded:  # bands of 4 output rows (the padded rows' bytes)
        monkeypatch.setattr(conv_direct, "BANDS", {"avx512": True, "avx2": True})
        monkeypatch.setattr(conv_direct, "BAND_MIN_BYTES", 0)
        monkeypatch.setattr(conv_direct, "BAND_BYTES", shape[1] * 4 * 5 * wq * 4)
    else:  # one copy of the whole image (0.65-0.7 MB here: AVX2's threshold would band it)
        monkeypatch.setattr(conv_direct, "BAND_MIN_BYTES", 1 << 20)
    lib, inputs, want = build_conv(shape, o, k, strides, pads, epi=epi,
                                   rng=np.random.default_rng(7))
    sizes = _phased_sizes(lib)
    name = "xph_band" if banded else "xph"
    assert ("xph_band" in sizes) == banded and name in sizes
    # every phase plane of the copy holds its rows at the padded width
    rows = (4 if banded else want.shape[2]) + (k[0] - 1) // strides[0]
    assert sizes[name] >= shape[1] * 4 * rows * wq
    np.testing.assert_allclose(run_graph(lib, inputs, threads), want, rtol=1e-4, atol=1e-4)


def test_symbolic_batch(aligned):
    """Relax with a symbolic batch: images one by one or over the pool, padded rows both."""
    n = tir.Var("n", "int64")
    x = relax.Var("x", relax.TensorStructInfo([n, 6, 64, 128], "float32"))
    rng = np.random.default_rng(3)
    wt = rng.standard_normal((24, 6, 3, 3)).astype("float32")
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            y = bb.emit(relax.op.nn.conv2d(x, relax.const(wt), strides=2, padding=1))
            gv = bb.emit_output(bb.emit(relax.op.nn.relu(y)))
        bb.emit_func_output(gv)
    vm = relax.VirtualMachine(relax.build(bb.get(), "llvm"), tvm.cpu())
    for batch in (1, 5):
        a = rng.standard_normal((batch, 6, 64, 128)).astype("float32")
        want = np.maximum(conv_ref(a, wt, (2, 2), (1, 1, 1, 1)), 0)
        np.testing.assert_allclose(vm["main"](a).numpy(), want, rtol=1e-4, atol=1e-4)

"""Build-time weight transforms write their packed layout straight into a 64-byte aligned
array (``runtime.ndarray.aligned_empty``), so ``aligned`` keeps it as it is instead of copying
every packed weight a second time; the values are the layouts' numpy references."""

import numpy as np
import pytest

from minitvm.runtime.ndarray import CONST_ALIGN, aligned, aligned_empty
from minitvm.schedule import conv_lanes, conv_pointwise, conv_winograd
from minitvm.schedule.gemm_pack import pack_b


@pytest.mark.parametrize("shape, dtype", [((3, 5), "float32"), (7, "int8"), ((0, 4), "float32"),
                                          ((2, 3, 4), "float64")])
def test_aligned_empty_is_aligned_contiguous(shape, dtype):
    a = aligned_empty(shape, dtype)
    assert a.shape == (shape if isinstance(shape, tuple) else (shape,))
    assert a.dtype == np.dtype(dtype) and a.flags.c_contiguous and a.flags.writeable
    if a.size:
        assert a.ctypes.data % CONST_ALIGN == 0
        assert aligned(a) is a


def _is_kept(out):
    return out.ctypes.data % CONST_ALIGN == 0 and aligned(out) is out


def test_pack_b_is_aligned_and_matches_its_layout():
    rng = np.random.default_rng(0)
    b = rng.standard_normal((50, 24)).astype("float32")  # [N, K], transposed
    out = pack_b(b, 16, transpose_b=True)
    assert _is_kept(out)
    mat = np.zeros((24, 64), "float32")
    mat[:, :50] = b.T
    np.testing.assert_array_equal(out, mat.reshape(24, 4, 16).transpose(1, 0, 2))


def test_conv_lanes_pack_is_aligned_and_matches_its_layout():
    rng = np.random.default_rng(1)
    w = rng.standard_normal((16, 3, 3, 3)).astype("float32")
    out = conv_lanes.PackWeight(16, 3, 3, 3)(w)
    assert _is_kept(out)
    lanes = conv_lanes.LANES
    np.testing.assert_array_equal(out, w.reshape(16 // lanes, lanes, 3, 3, 3)
                                  .transpose(0, 2, 3, 4, 1))


def test_pointwise_and_winograd_packs_are_aligned():
    rng = np.random.default_rng(2)
    w = rng.standard_normal((16, 8, 1, 1)).astype("float32")
    pixels = conv_pointwise.PackWeight("pixels", 16, 8)(w)
    assert _is_kept(pixels)
    assert sorted(pixels.tolist()) == sorted(w.reshape(-1).tolist())  # a permutation
    w3 = rng.standard_normal((8, 4, 3, 3)).astype("float32")
    m = next(iter(conv_winograd.MATRICES))
    u = conv_winograd.PackWeight(m, 8, 4)(w3)
    assert _is_kept(u)
    g = np.array(conv_winograd.MATRICES[m][1], "float64")
    ref = np.einsum("ai,ocij,bj->abo c".replace(" ", ""), g, w3.astype("float64"), g)
    # the tap order inside a row tile is the pack's: compare the multisets per (a, b)
    got = u.reshape(g.shape[0], g.shape[0], -1)
    np.testing.assert_allclose(np.sort(got, axis=-1),
                               np.sort(ref.reshape(g.shape[0], g.shape[0], -1), axis=-1),
                               rtol=1e-4, atol=1e-4)

"""The antialiased resize's filter bands (``frontend_common.antialias``): the taps reproduce the
filter matrix, and the lowering plan picks taps or dense products by their cost."""

from __future__ import annotations

import numpy as np

from minitvm.frontend_common.antialias import antialias_weights, filter_taps, separable_plan


def test_filter_taps_apply_the_filter_matrix():
    """The tap bands reproduce the [out, in] matrix product, rows with no taps included."""
    rng = np.random.default_rng(0)
    for n_in, n_out, mode in [(37, 11, "bicubic"), (20, 45, "bilinear"), (9, 9, "bilinear")]:
        m = antialias_weights(n_in, n_out, mode)
        m[n_out // 2] = 0.0
        idx, w = filter_taps(m)
        assert idx.shape == w.shape and idx.min() >= 0 and idx.max() < n_in
        x = rng.standard_normal((n_in, 3))
        np.testing.assert_allclose(np.einsum("ok,okc->oc", w, x[idx]), m @ x, atol=1e-12)


def test_separable_plan_picks_taps_for_a_camera_frame():
    """CLIP's preprocessing (240x320 -> 112x112, 5- and 6-tap bands): taps along the height
    first (vectorized over the width), then along the width; a 20 -> 4 bicubic filter spans
    the input: dense."""
    def plan(h, w, oh, ow, mode):
        return separable_plan(antialias_weights(h, oh, mode), antialias_weights(w, ow, mode))

    assert plan(240, 320, 112, 112, "bilinear") == "rows_first"
    assert plan(64, 64, 128, 128, "bilinear") == "cols_first"
    assert plan(20, 20, 4, 4, "bicubic") == "dense"

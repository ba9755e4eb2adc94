"""bench_layers_ort's pairing of a dense kernel with ONNX Runtime's node: by output shape, so a
dense that ORT runs inside another node (an LSTM's input projection) pairs with none rather
than with the next Gemm of another shape."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks"))

import bench_layers_ort as blo  # noqa: E402


def test_dense_pairs_with_the_gemm_of_its_output_shape():
    # DCCRN: the LSTM's input projection (256x512 -> 256x256) runs inside ORT's LSTM node; the
    # only Gemm is the projection after it (256x64 -> 256x512, kept 3-D as (4, 64, 512))
    gemms = [(0.135, (4, 64, 64), (4, 64, 512))]
    assert blo.pair_dense(gemms, (256, 256)) is None
    assert len(gemms) == 1
    hit = blo.pair_dense(gemms, (256, 512))
    assert hit == (0.135, (4, 64, 64), (4, 64, 512))
    assert gemms == []


def test_dense_pairs_first_unpaired_node_in_order():
    gemms = [(1.0, (1, 8), (1, 4)), (2.0, (1, 4), (1, 4)), (3.0, (1, 8), (1, 16))]
    assert blo.pair_dense(gemms, (1, 4))[0] == 1.0
    assert blo.pair_dense(gemms, (1, 4))[0] == 2.0
    assert blo.pair_dense(gemms, (1, 4)) is None  # each ORT node pairs once
    assert blo.pair_dense(gemms, (4, 4)) is None  # as many elements, another last dim
    assert blo.pair_dense(gemms, (16,))[0] == 3.0  # ORT's leading dims flattened

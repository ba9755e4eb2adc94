"""Which 1x1 convs pack their input per ISA (``conv_pointwise.PACK_MISALIGNED``): planes whose
rows are no whole cache lines (25x5, 31x4) pack on AVX2 and not on AVX-512, where other reasons
(many output channels, aliased rows) still pack; numerics either way."""

import numpy as np
import pytest
from pointwise_cases import build_pointwise

import minitvm as tvm
from minitvm import relay
from minitvm.contrib import graph_executor
from minitvm.relay.backend import te_compiler
from minitvm.schedule import conv_pointwise


def _stage(shape, o):
    x, w = relay.var("x", shape=shape), relay.var("w", shape=(o, shape[1], 1, 1))
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function(
        [x, w], relay.nn.conv2d(x, w))))
    _, _, (conv,) = te_compiler.build_te(mod["main"])
    return conv


@pytest.mark.parametrize("isa,shape,o,packed", [
    ("avx512", (1, 64, 25, 5), 64, False),  # DS-CNN's: rows of 500 bytes, in place
    ("avx2", (1, 64, 25, 5), 64, True),
    ("avx512", (1, 64, 25, 5), 256, True),  # many output channels: packed on both
    ("avx512", (1, 32, 31, 4), 48, False),
    ("avx2", (1, 32, 31, 4), 48, True),
    ("avx512", (1, 16, 16, 16), 64, False),  # whole lines: never for that reason
    ("avx2", (1, 16, 16, 16), 64, False),
])
def test_pack_by_isa(monkeypatch, isa, shape, o, packed):
    monkeypatch.setattr(conv_pointwise, "vector_isa", lambda: isa)
    g = conv_pointwise.geometry(_stage(shape, o))
    assert g is not None and g["mode"] == "pixels"
    assert g["pw_pack"] == packed


@pytest.mark.parametrize("shape,o", [((1, 64, 25, 5), 64), ((2, 32, 14, 14), 48)])
def test_in_place_panels_match_numpy(shape, o):
    lib, feeds, want = build_pointwise(shape, o, "relu")
    g = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    for k, v in feeds.items():
        g.set_input(k, v)
    g.run()
    np.testing.assert_allclose(g.get_output(0).numpy(), want, rtol=1e-4, atol=1e-4)

"""The implicit-GEMM conv2d runs its channel tiles as the outer loop when the output planes
alias in L2 (``conv_direct.aliased_planes``): planes a multiple of the L2 set stride apart
(128x128 outputs on a 1 MB 16-way L2), more of them than half the ways hold. Results match
numpy either way."""

import numpy as np
import pytest
from conv_reference import conv_ref

import minitvm as tvm
from minitvm import relay
from minitvm.backend import kernel_cache
from minitvm.contrib import graph_executor
from minitvm.relay.backend import te_compiler
from minitvm.schedule import conv_direct
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import walk_stmts


def _stage(shape, o, k, stride, pad):
    x, w = relay.var("x", shape=shape), relay.var("w", shape=(o, shape[1], k, k))
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function(
        [x, w], relay.nn.conv2d(x, w, strides=(stride, stride), padding=(pad, pad)))))
    _, _, (conv,) = te_compiler.build_te(mod["main"])
    return conv


@pytest.mark.parametrize("shape, o, stride, aliased", [
    ((1, 3, 256, 256), 64, 2, True),    # DeepLab's stem: 128x128 planes, 64 KB apart
    ((1, 3, 256, 256), 8, 2, False),    # 8 planes fit half the ways
    ((1, 3, 128, 128), 64, 1, True),
    ((1, 3, 224, 224), 32, 2, False),   # 112x112: 49 KB apart, spread over the sets
    ((1, 3, 128, 128), 64, 2, True),    # 64x64: 16 KB apart, 4 sets: 64 > 8 x 4
    ((1, 3, 128, 128), 32, 2, False),   # 32 planes over 4 sets
])
def test_aliased_planes(shape, o, stride, aliased):
    g = conv_direct.geometry(_stage(shape, o, 3, stride, 1))
    assert conv_direct.aliased_planes(g) == aliased
    assert conv_direct.weights_outer(g) == (aliased and conv_direct.ALIASED_TILES_OUTER[
        conv_direct.vector_isa()])


def test_other_reasons_for_tiles_outer_stand():
    """Weights larger than the phased image put the tiles outer with or without aliasing; a
    single tile never is (10 channels: aliased planes, but fewer than two tiles of 6 rows on
    AVX2 or 12 on AVX-512)."""
    g = conv_direct.geometry(_stage((1, 256, 7, 7), 256, 3, 1, 1))
    assert not conv_direct.aliased_planes(g) and conv_direct.weights_outer(g)
    g = conv_direct.geometry(_stage((1, 3, 256, 256), 10, 3, 2, 1))
    assert conv_direct.aliased_planes(g) and not conv_direct.weights_outer(g)


def _outer_loop_names(prim):
    return [s.loop_var.name for s in walk_stmts(prim.body) if isinstance(s, S.For) and
            s.loop_var.name.startswith(("tile", "panel"))]


@pytest.mark.parametrize("on", [True, False])
def test_aliased_conv_runs_tiles_outer_and_matches_numpy(on, monkeypatch, direct_conv_only):
    """A 4 KB set stride (monkeypatched) makes 32x32 planes alias: the channel tiles become
    the outer loop, the pixel panels inside; a residual epilogue is fused either way."""
    monkeypatch.setattr(conv_direct, "L2_SET_BYTES", 4096)
    monkeypatch.setattr(conv_direct, "ALIASED_TILES_OUTER", {"avx512": on, "avx2": on})
    kernel_cache.clear_cache()
    rng = np.random.default_rng(4)
    shape, o = (1, 3, 64, 64), 24
    wv = rng.standard_normal((o, 3, 3, 3)).astype("float32")
    bias = rng.standard_normal(o).astype("float32")
    x, r = relay.var("x", shape=shape), relay.var("r", shape=(1, o, 32, 32))
    y = relay.nn.bias_add(relay.nn.conv2d(x, relay.const(wv), strides=(2, 2), padding=(1, 1),
                                          kernel_size=(3, 3), channels=o), relay.const(bias))
    y = relay.nn.relu(y + r)
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(tvm.IRModule.from_expr(relay.Function([x, r], y)), target="llvm")
    kernel_cache.clear_cache()
    (prim,) = [k.prim_func for name, k in lib.get_lib().kernels.items() if "conv2d" in name]
    names = _outer_loop_names(prim)
    assert names[0].startswith("tile" if on else "panel")
    xv = rng.standard_normal(shape).astype("float32")
    rv = rng.standard_normal((1, o, 32, 32)).astype("float32")
    m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    m.run(x=xv, r=rv)
    want = np.maximum(conv_ref(xv, wv, (2, 2), (1, 1, 1, 1)) + bias.reshape(1, -1, 1, 1) + rv,
                      0)
    np.testing.assert_allclose(m.get_output(0).numpy(), want, rtol=1e-4, atol=1e-4)

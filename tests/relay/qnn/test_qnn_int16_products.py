"""QnnCanonicalize of qnn.conv2d / qnn.dense with int16 data and an int8 or int16 weight without
zero points: the product of the values as they are (nn.conv2d / nn.dense of int16 data, no
int32 casts), which ``schedule/conv_vnni`` / ``gemm_vnni`` run on int16 words; with a zero
point, the int32 casts stay. Equal to numpy's int64 products either way."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.contrib import graph_executor
from minitvm.schedule import conv_vnni

c = relay.const


def _canonical(y):
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function(
        relay.analysis.free_vars(y), y)))
    return relay.qnn.transform.CanonicalizeOps()(mod)


def run_graph(lib, feeds: dict):
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    for k, v in feeds.items():
        m.set_input(k, v)
    m.run()
    return m.get_output(0).numpy()


def _buffers(lib) -> set[str]:
    """The buffers the kernels declare (the int16-word schedules' accumulators among them)."""
    from minitvm.tir import stmt as S
    from minitvm.tir.stmt_functor import walk_stmts

    return {st.buffer.name for k in lib.get_lib().kernels.values() if k.prim_func is not None
            for st in walk_stmts(k.prim_func.body) if isinstance(st, S.DeclBuffer)}


def _built(y):
    with tvm.transform.PassContext(opt_level=3):
        return relay.build(tvm.IRModule.from_expr(relay.Function(relay.analysis.free_vars(y), y)),
                           target="llvm")


@pytest.mark.parametrize("w_dtype", ["int8", "int16"])
@pytest.mark.parametrize("x_zp", [0, 3])
def test_qnn_conv2d_of_int16_data(w_dtype, x_zp):
    rng = np.random.default_rng(4)
    w = rng.integers(-100, 100, (24, 7, 3, 3)).astype(w_dtype)
    xv = rng.integers(-32768, 32768, (1, 7, 9, 9)).astype("int16")
    x = relay.var("x", shape=xv.shape, dtype="int16")
    y = relay.qnn.op.conv2d(x, c(w), c(x_zp, "int32"), c(0, "int32"), c(1.0), c(1.0),
                            kernel_size=(3, 3), channels=24, strides=(2, 2), padding=(1, 1),
                            out_dtype="int32")
    text = _canonical(y)["main"].astext()
    assert ("cast(%x" in text) == bool(x_zp)  # (no zero point: the int16 data itself)
    xp = np.pad(xv.astype("int64") - x_zp, ((0, 0), (0, 0), (1, 1), (1, 1)))
    want = np.zeros((1, 24, 5, 5), "int64")
    for ky in range(3):
        for kx in range(3):
            want += np.einsum("nchw,oc->nohw", xp[:, :, ky:ky + 9:2, kx:kx + 9:2],
                              w[:, :, ky, kx].astype("int64"))
    lib = _built(y)
    np.testing.assert_array_equal(run_graph(lib, {"x": xv}), want)
    if conv_vnni.pairs_available() and not x_zp:
        assert "vn_acc" in _buffers(lib)


@pytest.mark.parametrize("w_dtype", ["int8", "int16"])
def test_qnn_dense_of_int16_data(w_dtype):
    rng = np.random.default_rng(6)
    w = rng.integers(-100, 100, (10, 33)).astype(w_dtype)
    av = rng.integers(-32768, 32768, (5, 33)).astype("int16")
    a = relay.var("a", shape=av.shape, dtype="int16")
    y = relay.qnn.op.dense(a, c(w), c(0, "int32"), c(0, "int32"), c(1.0), c(1.0), units=10,
                           out_dtype="int32")
    text = _canonical(y)["main"].astext()
    assert "cast(" not in text and "nn.dense(%a" in text
    lib = _built(y)
    np.testing.assert_array_equal(run_graph(lib, {"a": av}), av.astype("int64") @ w.T)
    if conv_vnni.pairs_available():
        assert "vg_acc" in _buffers(lib)

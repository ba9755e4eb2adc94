"""Strided 1x1 convs in the 1x1 schedule (``schedule/conv_pointwise.py``, ``subsample``): the
pixels a strided conv reads are copied into a temporary and the stride-1 kernels run on it.
Numerics against numpy for both kernels on odd planes, unequal and large strides, batches,
epilogues and two threads; the structure of the lowered kernel; and what stays elsewhere
(a symbolic batch, the switch off). The 1x1 schedule runs on AVX2 and AVX-512 alike
(``conv_pointwise.ENABLED``)."""

import numpy as np
import pytest
from pointwise_cases import build_pointwise as _build

import minitvm as tvm
from minitvm import relay
from minitvm.backend import kernel_cache
from minitvm.contrib import graph_executor
from minitvm.runtime import threadpool
from minitvm.schedule import conv_pointwise
from minitvm.schedule.common import vector_isa
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import walk_stmts

needs_pointwise = pytest.mark.skipif(not conv_pointwise.ENABLED[vector_isa()],
                                     reason="the 1x1 schedule is off for this ISA (ENABLED)")


def _run(lib, feeds):
    g = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    for k, v in feeds.items():
        g.set_input(k, v)
    g.run()
    return g.get_output(0).numpy()


def _buffer_names(lib) -> set:
    (prim,) = [k.prim_func for name, k in lib.get_lib().kernels.items() if "conv2d" in name]
    return {s.buffer.name for s in walk_stmts(prim.body) if isinstance(s, S.DeclBuffer)}


CASES = [
    # (N, C, H, W), O, strides, epilogue, the kernel that takes it
    ((1, 24, 16, 16), 20, (2, 2), "residual_relu", "pixels"),   # 8x8 = 4 panels of 16
    ((2, 9, 31, 31), 13, (2, 2), "bias_clip", "pixels"),             # 16x16, odd input, batch 2
    ((1, 40, 13, 13), 24, (2, 2), "residual_relu", "channels"),  # 7x7: 49 pixels
    ((1, 16, 9, 11), 40, (2, 2), "bias_clip", "channels"),           # 5x6: rows shorter than 8
    ((1, 8, 9, 30), 16, (2, 1), "residual_relu", "channels"),   # unequal strides, 5x30
    ((2, 24, 28, 28), 32, (3, 3), "bias_clip", "channels"),          # 10x10, stride 3
    ((1, 130, 14, 14), 64, (2, 2), "residual_relu", "channels"),  # 3 channel blocks
]


@needs_pointwise
@pytest.mark.parametrize("case", CASES)
def test_matches_numpy(case):
    shape, o, strides, epi, mode = case
    lib, feeds, want = _build(shape, o, epi, strides)
    np.testing.assert_allclose(_run(lib, feeds), want, rtol=1e-4, atol=1e-4)
    names = _buffer_names(lib)
    assert {"pw_acc", "pw_sub"} <= names and "xph" not in names  # no phased copy


@needs_pointwise
@pytest.mark.parametrize("shape, o", [((1, 64, 56, 56), 128),   # the copy in the workspace
                                      ((1, 64, 32, 32), 128)])  # on the stack (64 KiB)
def test_two_threads_match_numpy(shape, o):
    lib, feeds, want = _build(shape, o, "residual_relu", (2, 2))
    old = threadpool.get_num_threads()
    threadpool.set_num_threads(2)
    try:
        got = _run(lib, feeds)
    finally:
        threadpool.set_num_threads(old)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def _stage(shape, o, strides):
    from minitvm.relay.backend import te_compiler

    x, w = relay.var("x", shape=shape), relay.var("w", shape=(o, shape[1], 1, 1))
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function(
        [x, w], relay.nn.conv2d(x, w, strides=strides))))
    _, _, (conv,) = te_compiler.build_te(mod["main"])
    return conv


def test_geometry(monkeypatch):
    g = conv_pointwise.geometry(_stage((1, 8, 32, 32), 12, (2, 2)))
    assert (g["mode"], g["p"], g["sh"], g["sw"]) == ("pixels", 256, 2, 2)
    g = conv_pointwise.geometry(_stage((1, 8, 13, 13), 16, (2, 2)))
    assert (g["mode"], g["p"]) == ("channels", 49)
    # 2x4 = 8 pixels and 12 channels: neither kernel fits, strided or not
    assert conv_pointwise.geometry(_stage((1, 8, 4, 8), 12, (2, 2))) is None
    monkeypatch.setattr(conv_pointwise, "STRIDED", False)
    assert conv_pointwise.geometry(_stage((1, 8, 32, 32), 12, (2, 2))) is None
    assert conv_pointwise.geometry(_stage((1, 8, 32, 32), 12, (1, 1)))["mode"] == "pixels"


@needs_pointwise
def test_switched_off_goes_to_conv_direct(monkeypatch):
    monkeypatch.setattr(conv_pointwise, "STRIDED", False)
    kernel_cache.clear_cache()
    try:
        lib, feeds, want = _build((1, 16, 9, 11), 40, "bias_clip", (2, 2))
    finally:
        kernel_cache.clear_cache()
    np.testing.assert_allclose(_run(lib, feeds), want, rtol=1e-4, atol=1e-4)
    assert "pw_sub" not in _buffer_names(lib)


def test_relax_symbolic_batch_takes_the_subsampled_copy():
    """The subsampled copy is sized for a static batch: a symbolic one runs as a loop over
    images around the static kernel of one image (schedule/batch_loop.py), which takes it, and
    matches numpy at every batch."""
    from minitvm import relax, tir

    n = tir.Var("n", "int64")
    x = relax.Var("x", relax.TensorStructInfo([n, 12, 16, 16], "float32"))
    rng = np.random.default_rng(3)
    wt = rng.standard_normal((20, 12, 1, 1)).astype("float32")
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            gv = bb.emit_output(bb.emit(relax.op.nn.conv2d(x, relax.const(wt), strides=(2, 2))))
        bb.emit_func_output(gv)
    ex = relax.build(bb.get(), "llvm")
    (rec, _), = [v for k, v in ex.kernels.items() if "conv2d" in k]
    if conv_pointwise.ENABLED[vector_isa()]:
        assert "pw_sub" in rec.prim_func.script()
    vm = relax.VirtualMachine(ex, tvm.cpu())
    for batch in (1, 3):
        a = rng.standard_normal((batch, 12, 16, 16)).astype("float32")
        want = np.einsum("nchw,oc->nohw", a[:, :, ::2, ::2], wt[:, :, 0, 0])
        np.testing.assert_allclose(vm["main"](a).numpy(), want, rtol=1e-4, atol=1e-4)

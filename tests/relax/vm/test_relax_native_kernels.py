"""Kernel work behind the Relax native entry's latency: constant matmul weights packed at build
time (relax/vm/const_prepack.py, ``schedule.optimize_prim_func_prepacked``), vector partial sums
for short reductions, and the implicit-GEMM conv2d's row mode (no padding columns computed)."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, te, tir
from minitvm.relax.vm.const_prepack import compact_constants
from minitvm.runtime.relax_vm import VMFunction
from minitvm.runtime.relax_vm.executable import ARG_CONST, ARG_REG, CALL, MOVE, RET
from minitvm.schedule.gemm_kernel import pack_b
from minitvm.schedule.prim_func import optimize_prim_func_prepacked


def _matmul_prim(k=64, n=48):
    m = tir.Var("m", "int64")
    a = te.placeholder((m, k), "float32", "a")
    b = te.placeholder((k, n), "float32", "b")
    r = te.reduce_axis((0, k), "r")
    c = te.compute((m, n), lambda i, j: te.sum(a[i, r] * b[r, j], axis=r), name="matmul",
                   tag="matmul", attrs={"operands": (a, b), "transpose_a": False,
                                        "transpose_b": False})
    return te.create_prim_func([a, b, c])


def test_prepacked_prim_func_reads_the_packed_layout():
    prim = _matmul_prim()
    fast, transforms = optimize_prim_func_prepacked(prim, None, [1])
    if not transforms:
        pytest.skip("the generated matmul does not take this shape here")
    assert list(transforms) == [1]
    packed_buf = fast.buffer_map[fast.params[1]]
    w = np.random.rand(64, 48).astype("float32")
    packed = transforms[1](w)
    assert tuple(int(d) for d in packed_buf.shape) == packed.shape
    np.testing.assert_array_equal(packed, pack_b(w, packed.shape[2]))
    f = tvm.compile(fast, "llvm")
    for rows in (1, 5, 200):
        a = np.random.rand(rows, 64).astype("float32")
        c = np.empty((rows, 48), "float32")
        f(a, packed, c)
        np.testing.assert_allclose(c, a @ w, rtol=1e-5, atol=1e-5)
    # a non-constant B (or one read elsewhere) keeps the plain layout
    same, none = optimize_prim_func_prepacked(prim, None, [])
    assert none == {} and tuple(int(d) for d in same.buffer_map[same.params[1]].shape) == \
        (64, 48)


def _linear_module(widths=(40, 64, 10), share=False, reuse_weight=False):
    """x: (n, 40) -> matmuls with bound weights (``share``: the same weight twice;
    ``reuse_weight``: the weight is also added to the result, so it stays unpacked too)."""
    rng = np.random.default_rng(0)
    ws = [rng.standard_normal((a, b)).astype("float32") for a, b in zip(widths, widths[1:])]
    n = tir.Var("n", "int64")
    x = relax.Var("x", relax.TensorStructInfo([n, widths[0]], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            h = x
            for w in ws:
                h = bb.emit(relax.op.nn.relu(relax.op.matmul(h, relax.const(w))))
            if share:
                h = bb.emit(relax.op.matmul(h, relax.const(np.eye(widths[-1], dtype="float32"))))
                h = bb.emit(relax.op.matmul(h, relax.const(np.eye(widths[-1], dtype="float32"))))
            if reuse_weight:
                h = bb.emit(relax.op.add(relax.op.sum(relax.const(ws[-1])), h))
            gv = bb.emit_output(h)
        bb.emit_func_output(gv)
    return bb.get(), ws


def _ref(ws, x, reuse_weight=False):
    for w in ws:
        x = np.maximum(x @ w, 0)
    return x + ws[-1].sum() if reuse_weight else x


@pytest.mark.parametrize("share, reuse", [(False, False), (True, False), (False, True)])
def test_bound_weights_are_packed_once_at_every_size(share, reuse, tmp_path):
    mod, ws = _linear_module(share=share, reuse_weight=reuse)
    ex = relax.build(mod, "llvm")
    shapes = {tuple(c.shape) for c in ex.constants if isinstance(c, np.ndarray)}
    assert any(len(s) == 3 for s in shapes)  # a packed [N/nr, K, nr] weight
    if not reuse:
        assert (40, 64) not in shapes  # the plain copy is gone
    path = str(tmp_path / "packed.so")
    ex.export_library(path)
    for exe in (ex, tvm.runtime.load_module(path)):
        vm = relax.VirtualMachine(exe, tvm.cpu())
        for rows in (1, 7, 130, 7):
            x = np.random.rand(rows, 40).astype("float32")
            np.testing.assert_allclose(vm["main"](x).numpy(), _ref(ws, x, reuse), rtol=1e-4,
                                       atol=1e-4)


def test_weights_passed_at_run_time_are_not_packed():
    n = tir.Var("n", "int64")
    x = relax.Var("x", relax.TensorStructInfo([n, 40], "float32"))
    w = relax.Var("w", relax.TensorStructInfo([40, 64], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, w]):
        with bb.dataflow():
            gv = bb.emit_output(bb.emit(relax.op.matmul(x, w)))
        bb.emit_func_output(gv)
    ex = relax.build(bb.get(), "llvm")
    assert not [c for c in ex.constants if isinstance(c, np.ndarray) and c.ndim == 3]
    vm = relax.VirtualMachine(ex, tvm.cpu())
    a, b = np.random.rand(9, 40).astype("float32"), np.random.rand(40, 64).astype("float32")
    np.testing.assert_allclose(vm["main"](a, b).numpy(), a @ b, rtol=1e-5)


def test_int8_conv_weight_is_packed_as_int8():
    """A bound int8 conv weight of a float32 conv (a quantized model's: the ONNX importer keeps
    it int8) is packed once at build time into conv_lanes' layout and stays int8; the result
    is the exact integer convolution."""
    rng = np.random.default_rng(2)
    w = rng.integers(-128, 128, (32, 16, 3, 3)).astype("int8")
    x = relax.Var("x", relax.TensorStructInfo([1, 16, 4, 4], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            gv = bb.emit_output(bb.emit(relax.op.nn.conv2d(x, relax.const(w), padding=[1, 1],
                                                           out_dtype="float32")))
        bb.emit_func_output(gv)
    ex = relax.build(bb.get(), "llvm")
    consts = [c for c in ex.constants if isinstance(c, np.ndarray)]
    assert any(c.dtype == np.int8 and c.ndim == 5 for c in consts)  # [O/16, C, KH, KW, 16]
    assert not any(c.shape == w.shape for c in consts)  # the plain copy is gone
    xv = rng.integers(0, 256, (1, 16, 4, 4)).astype("float32")
    out = relax.VirtualMachine(ex, tvm.cpu())["main"](xv).numpy()
    xp = np.pad(xv.astype(np.int64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    want = np.zeros((1, 32, 4, 4), np.int64)
    for ky in range(3):
        for kx in range(3):
            want += np.einsum("chw,oc->ohw", xp[0, :, ky:ky + 4, kx:kx + 4],
                              w[:, :, ky, kx].astype(np.int64))[None]
    np.testing.assert_array_equal(out, want.astype(np.float32))


def test_compact_constants_renumbers_references():
    consts = [np.zeros(1), np.ones(2), np.full(3, 2.0)]
    code = [[MOVE, 1, [ARG_CONST, 2]], [CALL, 2, 0, [[ARG_REG, 1], [ARG_CONST, 0]]], [RET, 2]]
    f = VMFunction("main", ["x"], 3, code)
    kept = compact_constants([f], consts)
    assert len(kept) == 2
    assert f.code[0][2] == [ARG_CONST, 1] and f.code[1][3][1] == [ARG_CONST, 0]
    np.testing.assert_array_equal(kept[1], consts[2])


def test_global_mean_uses_vector_partial_sums():
    """A mean over a 16x16 window (innermost axis as wide as a vector) accumulates in vector
    lanes, not one 256-long chain of scalar adds; results match numpy at several batches."""
    n = tir.Var("n", "int64")
    x = relax.Var("x", relax.TensorStructInfo([n, 3, 16, 16], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            gv = bb.emit_output(bb.emit(relax.op.mean(x, axis=[2, 3])))
        bb.emit_func_output(gv)
    ex = relax.build(bb.get(), "llvm")
    (rec, _spec), = [v for k, v in ex.kernels.items() if k.startswith("mean")]
    text = rec.prim_func.script()
    assert "acc_1[vi" in text and "T.vectorized(16)" in text  # lane-wise partial sums
    vm = relax.VirtualMachine(ex, tvm.cpu())
    for batch in (1, 5, 2):
        a = np.random.rand(batch, 3, 16, 16).astype("float32")
        np.testing.assert_allclose(vm["main"](a).numpy(), a.mean(axis=(2, 3)), rtol=1e-5)


def _conv_ref(x, w, stride, pad):
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = (h + 2 * pad - kh) // stride + 1, (wd + 2 * pad - kw) // stride + 1
    out = np.zeros((n, o, oh, ow))
    for ky in range(kh):
        for kx in range(kw):
            patch = xp[:, :, ky:ky + stride * (oh - 1) + 1:stride,
                       kx:kx + stride * (ow - 1) + 1:stride]
            out += np.einsum("nchw,oc->nohw", patch, w[:, :, ky, kx])
    return out


@pytest.mark.parametrize("c, h, w, o, stride, pad, rows_mode", [
    (3, 6, 32, 8, 1, 1, True),    # OW = 32: one row per 32-pixel panel
    (5, 7, 16, 9, 1, 1, True),    # OW = 16, odd rows: the last panel overhangs the grid
    (4, 9, 31, 6, 2, 1, True),    # stride 2: OW = 16
    (3, 5, 15, 4, 1, 1, False),   # OW = 15: padded grid columns, cropped
])
def test_conv2d_row_mode_matches_numpy(c, h, w, o, stride, pad, rows_mode):
    from minitvm.schedule import conv_direct
    from minitvm.schedule.common import vector_isa

    n = tir.Var("n", "int64")
    x = relax.Var("x", relax.TensorStructInfo([n, c, h, w], "float32"))
    rng = np.random.default_rng(3)
    wt = rng.standard_normal((o, c, 3, 3)).astype("float32")
    bias = rng.standard_normal((1, o, 1, 1)).astype("float32")
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            y = bb.emit(relax.op.nn.conv2d(x, relax.const(wt), strides=stride, padding=pad))
            gv = bb.emit_output(bb.emit(relax.op.nn.relu(relax.op.add(y, relax.const(bias)))))
        bb.emit_func_output(gv)
    ex = relax.build(bb.get(), "llvm")
    (rec, _), = [v for k, v in ex.kernels.items() if "conv2d" in k]
    ow = (w + 2 * pad - 3) // stride + 1
    assert (ow % conv_direct.ROW_LANES == 0) == rows_mode
    # row mode writes the output layout itself: no padded grid temporary (nor does a conv
    # whose micro-kernel applies the epilogue: conv_direct.fuses_epilogue)
    fused = conv_direct.FUSED_EPILOGUE[vector_isa()]
    assert ("conv2d_nchw = T.allocate" not in rec.prim_func.script()) == (rows_mode or fused)
    vm = relax.VirtualMachine(ex, tvm.cpu())
    for batch in (1, 3, 1):
        a = rng.standard_normal((batch, c, h, w)).astype("float32")
        want = np.maximum(_conv_ref(a, wt, stride, pad) + bias, 0)
        np.testing.assert_allclose(vm["main"](a).numpy(), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("groups, cg", [(2, 32), (2, 8), (4, 24)])
def test_grouped_conv_with_a_runtime_weight(groups, cg):
    """A grouped conv whose weight is an input, not a constant (CondConv's per-sample kernels):
    the im2col GEMM passes the Relax function's buffer pointers to the BLAS call, which the
    well-formedness check rejected ("variable 'w' is used but not defined") before a parameter's
    buffer_map counted as defining its data pointer."""
    from minitvm.topi.testing.conv import conv2d_nchw_python

    c, o = groups * cg, groups * cg
    x = relax.Var("x", relax.TensorStructInfo([1, c, 8, 8], "float32"))
    w = relax.Var("w", relax.TensorStructInfo([o, cg, 3, 3], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, w]):
        with bb.dataflow():
            gv = bb.emit_output(relax.op.nn.conv2d(x, w, padding=1, groups=groups))
        bb.emit_func_output(gv)
    ex = relax.build(bb.get(), "llvm")
    assert [v[0].kind for k, v in ex.kernels.items() if "conv2d" in k] == ["native"]
    vm = relax.VirtualMachine(ex, tvm.cpu())
    rng = np.random.default_rng(groups * cg)
    a = rng.standard_normal((1, c, 8, 8)).astype("float32")
    wt = rng.standard_normal((o, cg, 3, 3)).astype("float32")
    want = conv2d_nchw_python(a, wt, 1, 1, groups=groups)
    np.testing.assert_allclose(vm["main"](a, wt).numpy(), want, rtol=1e-4, atol=1e-4)

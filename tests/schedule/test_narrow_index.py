"""32-bit index arithmetic for Relax's int64-indexed kernels (``schedule/narrow_index.py``): the
per-image function of a symbolic batch (``batch_loop.per_image``) loops, indexes and shapes its
buffers in int32 when every buffer is under 2**31 elements, while int64 values (an argmax's
index, indices loaded from a buffer) keep their type; the kernels compute what numpy does at
batch 1 and 4."""

import numpy as np
import pytest
from conv_reference import conv_ref

import minitvm as tvm
from minitvm import relax, tir
from minitvm.relax.pipeline import get_pipeline
from minitvm.schedule import batch_loop
from minitvm.schedule.narrow_index import narrow_indices
from minitvm.tir import expr as E
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import post_order, walk_stmts


def _model(n, w, b):
    """conv 3x3/2 + bias + relu -> max pool 3x3/2 (pad 1) -> avg pool 3x3/1 (pad 1, padding
    not counted) -> argmax over channels (int64) and the max value gathered at it."""
    x = relax.Var("x", relax.TensorStructInfo([n, 3, 20, 20], "float32"))
    bb = relax.BlockBuilder()
    nn = relax.op.nn
    with bb.function("main", [x]):
        with bb.dataflow():
            y = bb.emit(nn.relu(relax.op.add(nn.conv2d(x, relax.const(w), strides=2, padding=1),
                                             relax.const(b.reshape(1, -1, 1, 1)))))
            y = bb.emit(nn.max_pool2d(y, pool_size=3, strides=2, padding=1))
            y = bb.emit(nn.avg_pool2d(y, pool_size=3, strides=1, padding=1,
                                      count_include_pad=False))
            idx = bb.emit(relax.op.argmax(y, axis=1, keepdims=True))
            top = bb.emit(relax.op.take_along_axis(y, idx, axis=1)
                          if hasattr(relax.op, "take_along_axis")
                          else relax.op.gather_elements(y, idx, axis=1))
            gv = bb.emit_output(relax.Tuple([y, idx, top]))
        bb.emit_func_output(gv)
    return bb.get()


def _reference(a, w, b):
    y = np.maximum(conv_ref(a, w, (2, 2), (1, 1, 1, 1)) + b.reshape(1, -1, 1, 1), 0)
    p = np.pad(y, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=-np.inf)
    oh = (p.shape[2] - 3) // 2 + 1
    m = np.full((*y.shape[:2], oh, oh), -np.inf)
    for ky in range(3):
        for kx in range(3):
            m = np.maximum(m, p[:, :, ky:ky + 2 * oh - 1:2, kx:kx + 2 * oh - 1:2])
    q = np.pad(m, ((0, 0), (0, 0), (1, 1), (1, 1)))
    ones = np.pad(np.ones(m.shape[2:]), 1)
    s = sum(q[:, :, ky:ky + oh, kx:kx + oh] for ky in range(3) for kx in range(3))
    cnt = sum(ones[ky:ky + oh, kx:kx + oh] for ky in range(3) for kx in range(3))
    avg = s / cnt
    idx = avg.argmax(axis=1)[:, None]
    return avg, idx, np.take_along_axis(avg, idx, axis=1)


@pytest.fixture(scope="module")
def weights():
    rng = np.random.default_rng(0)
    return (rng.standard_normal((24, 3, 3, 3)).astype("float32") * 0.4,
            rng.standard_normal(24).astype("float32") * 0.1)


def _prims(mod):
    out = get_pipeline("default_build")(mod)
    return {gv.name_hint: f for gv, f in out.functions.items() if isinstance(f, tir.PrimFunc)}


def _ints(func):
    """dtypes of the loop and block variables and of the buffer dims of ``func``."""
    got = set()
    for s in walk_stmts(func.body):
        if isinstance(s, S.For):
            got.add(s.loop_var.dtype)
        elif isinstance(s, S.Block):
            got.update(iv.var.dtype for iv in s.iter_vars)
            got.update(d.dtype for buf in s.alloc_buffers for d in buf.shape)
    got.update(d.dtype for buf in func.buffer_map.values() for d in buf.shape)
    return got


def test_per_image_functions_index_in_int32(weights):
    n = tir.Var("n", "int64")
    prims = _prims(_model(n, *weights))
    images = 0
    for name, f in prims.items():
        var = batch_loop.batch_var(f)
        one = batch_loop.per_image(f, var) if var is not None else None
        if one is None:
            continue
        images += 1
        assert _ints(f) & {"int64"}  # Relax wrote it with int64 indices
        assert _ints(one[0]) == {"int32"}, name
        # int64 values stay int64: argmax's stored index
        stores = [s for s in walk_stmts(one[0].body) if isinstance(s, S.BufferStore)]
        for s in stores:
            assert s.value.dtype == s.buffer.dtype, name
    assert images >= 3  # the conv, the pools, the argmax


def test_values_loaded_as_indices_keep_int64(weights):
    n = tir.Var("n", "int64")
    prims = _prims(_model(n, *weights))
    gathers = [f for k, f in prims.items() if "gather" in k or "take" in k]
    assert gathers
    for f in gathers:
        var = batch_loop.batch_var(f)
        g = narrow_indices(batch_loop.per_image(f, var)[0]) if var is not None else \
            narrow_indices(f)
        loads = [e for s in walk_stmts(g.body) if isinstance(s, S.BufferStore)
                 for e in post_order(s.value) if isinstance(e, E.BufferLoad)
                 and e.buffer.dtype == "int64"]
        assert loads  # the index tensor is read as int64 data
        assert all(ld.dtype == "int64" for ld in loads)


def test_buffers_of_2_to_the_31_elements_keep_int64():
    big = tir.decl_buffer((65536, 32768), "float32", "big")
    out = tir.decl_buffer((65536, 32768), "float32", "out")
    i, j = tir.Var("i", "int64"), tir.Var("j", "int64")
    body = S.For(i, E.IntImm("int64", 0), E.IntImm("int64", 65536), S.ForKind.SERIAL,
                 S.For(j, E.IntImm("int64", 0), E.IntImm("int64", 32768), S.ForKind.SERIAL,
                       S.BufferStore(out, E.BufferLoad(big, [i, j]), [i, j])))
    f = tir.PrimFunc([big.data, out.data], body, buffer_map={big.data: big, out.data: out})
    assert narrow_indices(f) is f


@pytest.mark.parametrize("batch", [1, 4])
def test_narrowed_kernels_match_numpy(weights, batch):
    n = tir.Var("n", "int64")
    vm = relax.VirtualMachine(relax.build(_model(n, *weights), "llvm"), tvm.cpu())
    a = np.random.default_rng(batch).standard_normal((batch, 3, 20, 20)).astype("float32")
    for _ in range(2):  # the interpreted first call, then the native entry's plan
        avg, idx, top = vm["main"](tvm.nd.array(a))
        want = _reference(a, *weights)
        np.testing.assert_allclose(avg.numpy(), want[0], rtol=1e-4, atol=1e-5)
        assert idx.numpy().dtype == np.int64
        np.testing.assert_array_equal(idx.numpy(), want[1])
        np.testing.assert_allclose(top.numpy(), want[2], rtol=1e-4, atol=1e-5)

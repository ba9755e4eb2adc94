"""How the implicit-GEMM conv2d splits its work over the thread pool: image by image (each
image its own phased copy) for batches of small images, pixel panels inside each image for one
big image; a symbolic batch picks at run time. Results against numpy at 1 and 2 threads."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, relay, tir
from minitvm.contrib import graph_executor
from minitvm.runtime import threadpool
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import walk_stmts


def _conv_ref(x, w, stride, pad):
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    xp = np.pad(x.astype("float64"), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = (h + 2 * pad - kh) // stride + 1, (wd + 2 * pad - kw) // stride + 1
    out = np.zeros((n, o, oh, ow))
    for ky in range(kh):
        for kx in range(kw):
            patch = xp[:, :, ky:ky + stride * (oh - 1) + 1:stride,
                       kx:kx + stride * (ow - 1) + 1:stride]
            out += np.einsum("nchw,oc->nohw", patch, w[:, :, ky, kx])
    return out


def _parallel_loops(prim):
    return [s.loop_var.name for s in walk_stmts(prim.body)
            if isinstance(s, S.For) and s.kind == S.ForKind.PARALLEL]


@pytest.fixture
def two_threads():
    before = threadpool.get_num_threads()
    yield
    threadpool.set_num_threads(before)


@pytest.mark.parametrize("shape, o, by_image", [
    ((3, 8, 32, 32), 16, True),    # small images: one image per task
    ((2, 32, 34, 30), 32, False),  # two big images: each one's pixel panels split
    ((5, 32, 34, 30), 32, True),   # enough big images to split the batch
])
def test_relay_conv_split_matches_numpy(shape, o, by_image, two_threads, direct_conv_only):
    rng = np.random.default_rng(0)
    wv = rng.standard_normal((o, shape[1], 3, 3)).astype("float32")
    bias = rng.standard_normal(o).astype("float32")
    x = relay.var("x", shape=shape)
    y = relay.nn.relu(relay.nn.bias_add(relay.nn.conv2d(
        x, relay.const(wv), padding=(1, 1), kernel_size=(3, 3), channels=o), relay.const(bias)))
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(tvm.IRModule.from_expr(relay.Function([x], y)), target="llvm")
    (prim,) = [k.prim_func for name, k in lib.get_lib().kernels.items() if "conv2d" in name]
    loops = _parallel_loops(prim)
    # the images' per-thread slices ("image_slot...") are the parallel loop, or the panels
    # ("panel...") are
    assert any(v.startswith("image_slot") for v in loops) == by_image
    assert any(v.startswith("panel") for v in loops) == (not by_image)
    xv = rng.standard_normal(shape).astype("float32")
    want = np.maximum(_conv_ref(xv, wv, 1, 1) + bias[:, None, None], 0)
    for threads in (1, 2):
        threadpool.set_num_threads(threads)
        m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
        m.run(x=xv)
        np.testing.assert_allclose(m.get_output(0).numpy(), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("c, hw, o, stride", [
    (16, 16, 32, 1),  # small images
    (32, 34, 32, 1),  # big images
    (8, 33, 16, 2),   # stride 2, odd size
])
def test_relax_symbolic_batch_conv_split(c, hw, o, stride, two_threads):
    n = tir.Var("n", "int64")
    x = relax.Var("x", relax.TensorStructInfo([n, c, hw, hw], "float32"))
    rng = np.random.default_rng(1)
    wt = rng.standard_normal((o, c, 3, 3)).astype("float32")
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            y = bb.emit(relax.op.nn.conv2d(x, relax.const(wt), strides=stride, padding=1))
            gv = bb.emit_output(bb.emit(relax.op.nn.relu(y)))
        bb.emit_func_output(gv)
    ex = relax.build(bb.get(), "llvm")
    (rec, _), = [v for k, v in ex.kernels.items() if "conv2d" in k]
    # the symbolic batch is a loop over images around the static kernel of one image
    # (schedule/batch_loop.py): a parallel loop, and where the image's kernel has parallel
    # loops of its own, a serial one at batch 1 so that those use the pool
    body = rec.prim_func.body
    if isinstance(body, S.IfThenElse):
        loops = [body.then_case, body.else_case]
        assert loops[1].kind == S.ForKind.SERIAL
    else:
        loops = [body]
    assert all(isinstance(f, S.For) and f.loop_var.name == "image" for f in loops)
    assert loops[0].kind == S.ForKind.PARALLEL
    vm = relax.VirtualMachine(ex, tvm.cpu())
    for threads in (2, 1):
        threadpool.set_num_threads(threads)
        for batch in (1, 2, 5, 1):
            a = rng.standard_normal((batch, c, hw, hw)).astype("float32")
            want = np.maximum(_conv_ref(a, wt, stride, 1), 0)
            # (a 3x3 stride-1 conv with its weight bound may take Winograd: rounding of 1e-5
            # of the output's range)
            np.testing.assert_allclose(vm["main"](a).numpy(), want, rtol=1e-4,
                                       atol=1e-4 * max(1.0, float(np.abs(want).max())))


@pytest.mark.parametrize("shape, k, stride, pad, dil", [
    ((2, 3, 9, 7), 3, (1, 1), (4, 5, 4, 5), (1, 1)),   # padding wider than the input
    ((1, 4, 12, 10), 3, (2, 1), (1, 0, 1, 2), (1, 2)),  # stride 2 in height only, dilated
    ((1, 5, 6, 6), 5, (1, 1), (0, 0, 0, 0), (1, 1)),    # no padding
])
def test_stride1_phase_rows_match_numpy(shape, k, stride, pad, dil):
    """The contiguous row copy used when the width stride is 1, on unusual paddings."""
    rng = np.random.default_rng(2)
    o = 6
    wv = rng.standard_normal((o, shape[1], k, k)).astype("float32")
    x = relay.var("x", shape=shape)
    y = relay.nn.conv2d(x, relay.const(wv), strides=stride, padding=pad, dilation=dil,
                        kernel_size=(k, k), channels=o)
    xv = rng.standard_normal(shape).astype("float32")
    outs = []
    for native in (True, False):
        with tvm.transform.PassContext(opt_level=3,
                                       config={"relay.backend.use_native": native}):
            lib = relay.build(tvm.IRModule.from_expr(relay.Function([x], y)), target="llvm")
        m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
        m.run(x=xv)
        outs.append(m.get_output(0).numpy())
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-4, atol=1e-4)

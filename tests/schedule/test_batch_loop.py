"""A symbolic batch as a loop over images (``schedule/batch_loop.py``): functions whose every
block computes each image from that image alone run the static per-image kernel once per image
(the static schedules: Winograd, channel lanes, pooling rows), numerically equal to the same
model built for each batch size; functions that mix images, GEMMs over the batch rows and
functions with other symbolic dimensions keep the symbolic lowering. Relax conv weights bound
as constants are packed at build time (``relax/vm/const_prepack.py``)."""

import functools

import numpy as np
import pytest
from conv_reference import conv_ref

import minitvm as tvm
from minitvm import relax, tir
from minitvm.relax.pipeline import get_pipeline
from minitvm.schedule import batch_loop, optimize_prim_func
from minitvm.schedule.prim_func import optimize_prim_func_prepacked
from minitvm.tir import expr as E
from minitvm.tir import stmt as S
from minitvm.tir.buffer import decl_buffer
from minitvm.tir.function import PrimFunc
from minitvm.tir.stmt_functor import post_order, walk_stmts


def _net(n, rng):
    """conv 3x3 + bias + relu, max pool, 1x1 conv, depthwise 3x3, residual add, relu, softmax
    over channels, a global mean and a stride-2 conv: (n, 8, 12, 12) -> (n, 16, 3, 3)."""
    x = relax.Var("x", relax.TensorStructInfo([n, 8, 12, 12], "float32"))
    w1 = rng.standard_normal((16, 8, 3, 3)).astype("float32") * 0.3
    b1 = rng.standard_normal((1, 16, 1, 1)).astype("float32")
    w2 = rng.standard_normal((16, 16, 1, 1)).astype("float32") * 0.3
    w3 = rng.standard_normal((16, 1, 3, 3)).astype("float32") * 0.3
    w4 = rng.standard_normal((16, 16, 3, 3)).astype("float32") * 0.3
    bb = relax.BlockBuilder()
    nn = relax.op.nn
    with bb.function("main", [x]):
        with bb.dataflow():
            y = bb.emit(nn.relu(relax.op.add(nn.conv2d(x, relax.const(w1), padding=1),
                                             relax.const(b1))))
            y = bb.emit(nn.max_pool2d(y, pool_size=2, strides=2))
            z = bb.emit(nn.conv2d(y, relax.const(w2)))
            z = bb.emit(nn.conv2d(z, relax.const(w3), padding=1, groups=16))
            y = bb.emit(nn.relu(relax.op.add(y, z)))
            y = bb.emit(nn.softmax(y, axis=1))
            y = bb.emit(relax.op.subtract(y, relax.op.mean(y, axis=[2, 3], keepdims=True)))
            gv = bb.emit_output(bb.emit(nn.conv2d(y, relax.const(w4), strides=2, padding=1)))
        bb.emit_func_output(gv)
    return bb.get()


def _run(mod, a):
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    return vm["main"](tvm.nd.array(a)).numpy()


@functools.cache
def _built(batch, seed: int):
    """``relax.build`` of ``_net`` at ``batch`` (an int, or the name of a symbolic batch
    variable) with the weights of ``seed``: built once for the tests that run it."""
    n = tir.Var(batch, "int64") if isinstance(batch, str) else batch
    return relax.build(_net(n, np.random.default_rng(seed)), "llvm")


def _run_net(batch, seed: int, a):
    vm = relax.VirtualMachine(_built(batch, seed), tvm.cpu())
    return vm["main"](tvm.nd.array(a)).numpy()


def test_symbolic_batch_matches_static_builds():
    ex = _built("n", 0)
    vm = relax.VirtualMachine(ex, tvm.cpu())
    rng = np.random.default_rng(1)
    for batch in (1, 3, 2):
        a = rng.standard_normal((batch, 8, 12, 12)).astype("float32")
        got = vm["main"](tvm.nd.array(a)).numpy()
        want = _run_net(batch, 0, a)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
        # each image alone gives the same rows
        for i in range(batch):
            np.testing.assert_allclose(got[i:i + 1], vm["main"](tvm.nd.array(a[i:i + 1])).numpy(),
                                       rtol=1e-6, atol=1e-6)
    looped = [rec.prim_func for rec, _ in ex.kernels.values()
              if any(isinstance(s, S.For) and s.loop_var.name == "image"
                     for s in walk_stmts(rec.prim_func.body))]
    assert len(looped) >= 4  # the convs, the pool, the softmax and the mean


def _prims(mod):
    out = get_pipeline("default_build")(mod)
    return {gv.name_hint: f for gv, f in out.functions.items() if isinstance(f, tir.PrimFunc)}


def test_conv_function_runs_the_static_kernel_per_image():
    n = tir.Var("n", "int64")
    prims = _prims(_net(n, np.random.default_rng(0)))
    name = next(k for k in prims if k.startswith("fused_conv2d") and "relu" in k)
    f = prims[name]
    assert batch_loop.batch_var(f) is not None
    g = optimize_prim_func(f)
    loop = g.body
    assert isinstance(loop, S.For) and loop.loop_var.name == "image"
    assert loop.kind == S.ForKind.PARALLEL
    # inside the image loop no extent depends on the batch: the static schedules ran (a tile's
    # filter rows may depend on the tile, conv_lanes.tap_rows)
    inner = [s.extent for s in walk_stmts(loop.body) if isinstance(s, S.For)]
    batch = batch_loop.batch_var(f)
    assert inner and not any(v is batch for x in inner for v in post_order(x)
                             if isinstance(v, tir.Var))
    # the parameters keep the symbolic batch; the views inside move by one image per step
    first = g.buffer_map[g.params[0]]
    assert first.shape[0] is f.buffer_map[f.params[0]].shape[0]
    assert isinstance(first.shape[0], tir.Var)


def test_conv_weight_bound_as_constant_is_prepacked():
    n = tir.Var("n", "int64")
    prims = _prims(_net(n, np.random.default_rng(0)))
    name = next(k for k in prims if k.startswith("fused_conv2d") and "relu" in k)
    f = prims[name]
    pos = next(k for k, p in enumerate(f.params) if len(f.buffer_map[p].shape) == 4 and
               isinstance(f.buffer_map[p].shape[0], E.IntImm))  # the weight
    g, packs = optimize_prim_func_prepacked(f, None, [pos])
    assert pos in packs
    w = np.random.default_rng(2).standard_normal((16, 8, 3, 3)).astype("float32")
    packed = packs[pos](w)
    assert tuple(int(d) for d in g.buffer_map[g.params[pos]].shape) == packed.shape


def _sum_over_batch(n):
    x = relax.Var("x", relax.TensorStructInfo([n, 4, 6, 6], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            y = bb.emit(relax.op.add(x, relax.op.sum(x, axis=[0], keepdims=True)))
            gv = bb.emit_output(bb.emit(relax.op.flip(y, axis=0)))
        bb.emit_func_output(gv)
    return bb.get()


def test_functions_mixing_images_keep_the_symbolic_lowering():
    n = tir.Var("n", "int64")
    prims = _prims(_sum_over_batch(n))
    mixing = [f for name, f in prims.items() if "sum" in name or "flip" in name]
    assert len(mixing) == 2
    for f in mixing:  # the sum over the batch, and the flip that reads another image
        v = batch_loop.batch_var(f)
        assert v is None or batch_loop.per_image(f, v) is None
    # adding the (unbatched) sum to every image is one image's kernel, once per image
    (add,) = [f for name, f in prims.items() if "add" in name]
    assert batch_loop.per_image(add, batch_loop.batch_var(add)) is not None
    a = np.random.default_rng(3).standard_normal((3, 4, 6, 6)).astype("float32")
    want = (a + a.sum(axis=0, keepdims=True))[::-1]
    np.testing.assert_allclose(_run(_sum_over_batch(n), a), want, rtol=1e-5, atol=1e-5)


def test_gemm_rows_and_other_symbolic_dims_are_not_batches():
    n, s = tir.Var("n", "int64"), tir.Var("s", "int64")
    x = relax.Var("x", relax.TensorStructInfo([n, 32], "float32"))
    w = np.ones((32, 8), "float32")
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            gv = bb.emit_output(bb.emit(relax.op.matmul(x, relax.const(w))))
        bb.emit_func_output(gv)
    for f in _prims(bb.get()).values():  # a GEMM over n rows stays one GEMM
        assert batch_loop.batch_var(f) is None
    y = relax.Var("y", relax.TensorStructInfo([n, 2, s, 16], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [y]):
        with bb.dataflow():
            gv = bb.emit_output(bb.emit(relax.op.nn.softmax(y, axis=-1)))
        bb.emit_func_output(gv)
    for f in _prims(bb.get()).values():  # a second symbolic dim: not one image's kernel
        assert batch_loop.batch_var(f) is None


def test_deep_block_expression_does_not_recurse():
    n = tir.Var("n", "int64")
    x = decl_buffer((n, 2, 2, 2), "float32", "x")
    y = decl_buffer((n, 2, 2, 2), "float32", "y")
    ivs = [E.IterVar(E.Range.from_min_extent(E.IntImm("int64", 0), d), E.Var(f"v{k}", "int64"),
                     E.IterVar.DataPar) for k, d in enumerate(x.shape)]
    idx = [iv.var for iv in ivs]
    value = E.BufferLoad(x, idx)
    for _ in range(100_000):
        value = value + E.FloatImm("float32", 1.0)
    loops = [E.Var(f"i{k}", "int64") for k in range(4)]
    blk = S.Block(ivs, [], [], "deep", S.BufferStore(y, value, idx))
    body = S.BlockRealize(loops, E.IntImm("bool", 1), blk)
    for lv, d in reversed(list(zip(loops, x.shape))):
        body = S.For(lv, E.IntImm("int64", 0), d, S.ForKind.SERIAL, body)
    xp, yp = E.Var("xp", "handle"), E.Var("yp", "handle")
    f = PrimFunc([xp, yp], body, buffer_map={xp: x, yp: y})
    assert batch_loop.batch_var(f) is n
    assert batch_loop.separable(f, n)
    one, strides = batch_loop.per_image(f, n)
    assert set(strides) == {id(x.data), id(y.data)}
    assert isinstance(one, PrimFunc)


def _elementwise(value_of):
    """``y[n, 2] = value_of(x, batch axis var, other axis var)`` as one block."""
    n = tir.Var("n", "int64")
    x = decl_buffer((n, 2), "float32", "x")
    y = decl_buffer((n, 2), "float32", "y")
    ivs = [E.IterVar(E.Range.from_min_extent(E.IntImm("int64", 0), d), E.Var(f"v{k}", "int64"),
                     E.IterVar.DataPar) for k, d in enumerate(x.shape)]
    loops = [E.Var(f"i{k}", "int64") for k in range(2)]
    value = value_of(x, *(iv.var for iv in ivs))
    body = S.BlockRealize(loops, E.IntImm("bool", 1), S.Block(ivs, [], [], "b", S.BufferStore(
        y, value, [iv.var for iv in ivs])))
    for lv, d in reversed(list(zip(loops, x.shape))):
        body = S.For(lv, E.IntImm("int64", 0), d, S.ForKind.SERIAL, body)
    xp, yp = E.Var("xp", "handle"), E.Var("yp", "handle")
    return PrimFunc([xp, yp], body, buffer_map={xp: x, yp: y}), n


@pytest.mark.parametrize("value_of,own", [
    (lambda x, b, c: x[b, c] * x[b, 1 - c], True),  # the image's own elements, shared loads
    (lambda x, b, c: x[b, c] + E.Cast("float32", b), False),  # the image axis as a value
    (lambda x, b, c: x[0, c], False),  # another image's element
    (lambda x, b, c: x[b, c] + x[b, E.Min(b, 1)], False),  # the image axis in a later index
    # a gather's form: an index read from the image's own data (a load in a load's index)
    (lambda x, b, c: x[b, E.Cast("int64", x[b, c])], True),
    (lambda x, b, c: x[b, E.Cast("int64", x[0, c])], False),  # ... from another image
])
def test_block_values_read_their_own_image_only(value_of, own):
    f, n = _elementwise(value_of)
    assert batch_loop.separable(f, n) is own


@pytest.mark.parametrize("batch", [1, 4])
def test_dynamic_batch_onnx_style_residual_block(batch):
    """The form an ONNX import with a dynamic batch axis produces (``batch`` symbolic)."""
    a = np.random.default_rng(batch).standard_normal((batch, 8, 12, 12)).astype("float32")
    np.testing.assert_allclose(_run_net("batch", 5, a), _run_net(batch, 5, a), rtol=1e-5,
                               atol=1e-5)


def _relu_plus_one(n):
    x = relax.Var("x", relax.TensorStructInfo([n, 16, 64, 64], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            gv = bb.emit_output(bb.emit(relax.op.nn.relu(relax.op.add(
                x, relax.const(np.float32(1.0))))))
        bb.emit_func_output(gv)
    return bb.get()


def _kernel_ir(mod, part: str) -> str:
    (rec, _), = [v for k, v in relax.build(mod, "llvm").kernels.items() if part in k]
    return rec.ir


def test_image_loop_is_one_parallel_instance_loop_compiled_once():
    from minitvm.codegen.llvm.stmt import INSTANCE_LOOP
    from minitvm.runtime import threadpool

    n = tir.Var("n", "int64")
    (f,) = [f for name, f in _prims(_relu_plus_one(n)).items() if "relu" in name]
    g = optimize_prim_func(f)
    # one image is big enough for its own parallel loop: one parallel image loop around it, an
    # instance loop (the code generator runs the image's loop on the pool at batch 1)
    loop = g.body
    assert isinstance(loop, S.For) and loop.kind == S.ForKind.PARALLEL
    assert loop.annotations.get(INSTANCE_LOOP)
    assert any(isinstance(s, S.For) and s.kind == S.ForKind.PARALLEL for s in walk_stmts(loop.body))
    # the image's kernel is compiled once: the dynamic kernel's code adds as often as the one of
    # the model built for one image
    dyn, one = _kernel_ir(_relu_plus_one(n), "relu"), _kernel_ir(_relu_plus_one(1), "relu")
    assert dyn.count(" fadd ") == one.count(" fadd ") >= 1
    # a small image's kernel has no parallel loop: one parallel image loop as well
    (h,) = [f for name, f in _prims(_sum_over_batch(n)).items() if "add" in name]
    loop = optimize_prim_func(h).body
    assert isinstance(loop, S.For) and loop.kind == S.ForKind.PARALLEL
    vm = relax.VirtualMachine(relax.build(_relu_plus_one(n), "llvm"), tvm.cpu())
    old = threadpool.get_num_threads()
    try:
        for threads in (2, 1):
            threadpool.set_num_threads(threads)
            for batch in (1, 3, 1):
                a = np.random.default_rng(batch).standard_normal((batch, 16, 64, 64)).astype(
                    "float32")
                np.testing.assert_array_equal(vm["main"](tvm.nd.array(a)).numpy(),
                                              np.maximum(a + 1, 0))
    finally:
        threadpool.set_num_threads(old)


def test_conv_net_kernels_are_compiled_once():
    """Every image kernel of the conv net holds as many multiply-adds as the one-image build's."""
    dyn = _built("n", 0).kernels
    one = _built(1, 0).kernels
    looped = 0
    for name, (rec, _) in dyn.items():
        if not isinstance(rec.prim_func.body, S.For) or rec.prim_func.body.loop_var.name != "image":
            continue
        looped += 1
        (static,) = [r for k, (r, _) in one.items() if k == name]
        for op in (" fmul ", " fadd ", "@llvm.fma"):
            assert rec.ir.count(op) == static.ir.count(op), (name, op)
    assert looped >= 3


@pytest.mark.parametrize("threads", [1, 2])
def test_images_on_several_threads_match_static_builds(threads):
    """Each image's temporaries are its own: images run on two threads at once give the static
    builds' results."""
    from minitvm.runtime import threadpool

    vm = relax.VirtualMachine(_built("n", 0), tvm.cpu())
    rng = np.random.default_rng(7)
    cases = [(b, rng.standard_normal((b, 8, 12, 12)).astype("float32")) for b in (1, 2, 5, 4)]
    want = [_run_net(b, 0, a) for b, a in cases]
    old = threadpool.get_num_threads()
    threadpool.set_num_threads(threads)
    try:
        for _ in range(3):
            for (_, a), w in zip(cases, want, strict=True):
                got = vm["main"](tvm.nd.array(a)).numpy()
                np.testing.assert_allclose(got, w, rtol=1e-5, atol=1e-5)
    finally:
        threadpool.set_num_threads(old)


def _tokens_linear(n, rows: int, rng):
    """(n, rows, 16) tokens through a linear layer and a layer norm."""
    x = relax.Var("x", relax.TensorStructInfo([n, rows, 16], "float32"))
    w = rng.standard_normal((16, 24)).astype("float32")
    g, b = np.ones(24, "float32"), np.zeros(24, "float32")
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            y = bb.emit(relax.op.matmul(x, relax.const(w)))
            gv = bb.emit_output(bb.emit(relax.op.nn.layer_norm(
                y, relax.const(g), relax.const(b), axes=[-1])))
        bb.emit_func_output(gv)
    return bb.get()


@pytest.mark.parametrize("rows", [80, 8])
def test_three_dim_tokens_are_images_when_each_has_enough_rows(rows):
    n = tir.Var("n", "int64")
    prims = [f for name, f in _prims(_tokens_linear(n, rows, np.random.default_rng(0))).items()
             if "matmul" in name or "layer_norm" in name]
    assert len(prims) == 2
    for f in prims:
        looped = any(isinstance(s, S.For) and s.loop_var.name == "image"
                     for s in walk_stmts(optimize_prim_func(f).body))
        assert looped == (rows >= batch_loop.MIN_IMAGE_ROWS)
    vm = relax.VirtualMachine(relax.build(_tokens_linear(n, rows, np.random.default_rng(0)),
                                          "llvm"), tvm.cpu())
    for batch in (1, 3):
        a = np.random.default_rng(batch).standard_normal((batch, rows, 16)).astype("float32")
        want = _run(_tokens_linear(batch, rows, np.random.default_rng(0)), a)
        np.testing.assert_allclose(vm["main"](tvm.nd.array(a)).numpy(), want, rtol=1e-4,
                                   atol=1e-4)


def _lone_conv(n, w, b, stride):
    x = relax.Var("x", relax.TensorStructInfo([n, w.shape[1], 16, 16], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            y = relax.op.nn.conv2d(x, relax.const(w), strides=stride, padding=1)
            gv = bb.emit_output(bb.emit(relax.op.add(y, relax.const(b.reshape(1, -1, 1, 1)))))
        bb.emit_func_output(gv)
    return bb.get()


@pytest.mark.parametrize("threads", [1, 2])
def test_per_image_conv_bands_split_at_run_time(threads):
    """A per-image conv_lanes kernel in the "bands" order on the pool picks its band split at
    run time (``conv_lanes_emit.SOLO_BANDS``): one band of every tile on one thread, an image of a
    batch on the pool included, ``lanes_parts`` bands on several. Batches of 1, 3 and 4 give
    numpy's conv either way; the build's constants (the prepacked weight) are 64-byte aligned."""
    from minitvm.runtime import threadpool

    rng = np.random.default_rng(3)
    w = (rng.standard_normal((96, 64, 3, 3)) * 0.1).astype("float32")
    b = rng.standard_normal(96).astype("float32")
    n = tir.Var("n", "int64")
    ex = relax.build(_lone_conv(n, w, b, 2), "llvm")
    (rec,) = [r for r, _ in ex.kernels.values() if any(
        isinstance(s, S.For) and s.loop_var.name == "image" for s in walk_stmts(r.prim_func.body))]
    lets = [s for s in walk_stmts(rec.prim_func.body) if isinstance(s, S.LetStmt) and
            any(isinstance(c, E.Call) and "num_threads" in str(c.op) for c in post_order(s.value))]
    assert len(lets) == 2  # (the bands' number and size)
    assert all(c.ctypes.data % 64 == 0 for c in ex.constants
               if isinstance(c, np.ndarray) and c.size)
    vm = relax.VirtualMachine(ex, tvm.cpu())
    old = threadpool.get_num_threads()
    threadpool.set_num_threads(threads)
    try:
        for batch in (1, 3, 4):
            a = rng.standard_normal((batch, 64, 16, 16)).astype("float32")
            got = vm["main"](tvm.nd.array(a)).numpy()
            want = conv_ref(a, w, (2, 2), (1, 1, 1, 1)) + b.reshape(1, -1, 1, 1)
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    finally:
        threadpool.set_num_threads(old)

"""optimize_prim_func: block-form PrimFuncs (te.create_prim_func, Relax's LegalizeOps/FuseTIR)
scheduled by the shared schedules, numerically equal to the blocks as written."""

from pathlib import Path

import numpy as np
import pytest

from minitvm import te, tir
from minitvm.codegen.build import build
from minitvm.schedule import LoweringOptions, gemm_tb, optimize_prim_func
from minitvm.schedule.raise_blocks import analyze_nest, gemm_tag, raise_nest, unwrap_root
from minitvm.schedule.raise_patterns import affine, conv_tag, pad_of
from minitvm.script.parser import from_source
from minitvm.tir import stmt as S
from minitvm.tir.buffer import decl_buffer
from minitvm.tir.function import PrimFunc
from minitvm.tir.stmt_functor import walk_stmts

SEED = Path(__file__).resolve().parents[1] / "relax" / "seed" / "seed003_fused.txt"


def i64(v):
    return tir.IntImm("int64", v)


def f32(v):
    return tir.const(v, "float32")


def _arrays(params, sizes, rng):
    """Random inputs (and zeroed outputs) for ``params`` with symbolic dims set by ``sizes``."""
    out = []
    for t in params:
        shape = [d.value if isinstance(d, tir.IntImm) else sizes[d.name] for d in t.shape]
        out.append(rng.standard_normal(shape).astype("float32"))
    return out


def _check(func_args, sizes_list, rng, rtol=1e-4, atol=1e-4):
    """Optimized and as-written builds agree on every size; returns the optimized func."""
    f = te.create_prim_func(func_args)
    g = optimize_prim_func(f)
    assert g is not f
    ref, opt = build(f)["main"], build(g)["main"]
    for sizes in sizes_list:
        a = _arrays(func_args, sizes, rng)
        b = [x.copy() for x in a]
        ref(*a)
        opt(*b)
        np.testing.assert_allclose(b[-1], a[-1], rtol=rtol, atol=atol)
    return g


def _stmts(func, kind):
    return [s for s in walk_stmts(func.body) if isinstance(s, kind)]


def _has_blocks(func) -> bool:
    return any(isinstance(s, S.BlockRealize) and s.block.iter_vars
               for s in walk_stmts(func.body))


def _uses_gemm_microkernel(func) -> bool:
    """The packed GEMM's register tile: an ``acc`` allocation with a vectorized column loop."""
    accs = [s for s in _stmts(func, S.Allocate) if s.buffer_var.name.startswith("acc")]
    vec = [s for s in _stmts(func, S.For) if s.kind == S.ForKind.VECTORIZED]
    return bool(accs) and any(isinstance(s.extent, tir.IntImm) and s.extent.value >= 8
                              for s in vec)


def _matmul(n, k, m, trans_b=False, dtype_k="int64"):
    c = (lambda v: tir.IntImm(dtype_k, v)) if dtype_k else (lambda v: v)
    x = te.placeholder((n, c(k)), name="x")
    w = te.placeholder((c(m), c(k)) if trans_b else (c(k), c(m)), name="w")
    r = te.reduce_axis((c(0), c(k)), name="k")
    if trans_b:
        return x, w, te.compute((n, c(m)), lambda i, j: te.sum(x[i, r] * w[j, r], axis=r),
                                name="matmul")
    return x, w, te.compute((n, c(m)), lambda i, j: te.sum(x[i, r] * w[r, j], axis=r),
                            name="matmul")


# ---------------------------------------------------------------------------------- GEMMs
def test_symbolic_row_matmul_takes_the_packed_gemm(rng):
    n = tir.Var("n", "int64")
    x, w, y = _matmul(n, 784, 128)
    g = _check([x, w, y], [{"n": 1}, {"n": 7}, {"n": 64}, {"n": 67}], rng)
    assert not _has_blocks(g)
    assert _uses_gemm_microkernel(g)
    # one run-time-sized parallel loop over row blocks and column panels
    par = [s for s in _stmts(g, S.For) if s.kind == S.ForKind.PARALLEL]
    assert par and "parallel_min_extent" in par[0].annotations


def _uses_transposed_b_kernel(func) -> bool:
    """schedule.gemm_tb's kernel (few rows, W read untransposed): its ``nt_sum`` accumulators."""
    return any(s.buffer_var.name.startswith("nt_sum") for s in _stmts(func, S.Allocate))


def test_odd_static_matmul_with_transposed_weight(rng):
    x, w, y = _matmul(i64(37), 53, 29, trans_b=True)
    g = _check([x, w, y], [{}], rng)
    # at most gemm_tb.MAX_ROWS rows: the dot-product kernel reading W as stored, no packing
    assert _uses_transposed_b_kernel(g)
    # more rows (gemm_tb.MAX_ROWS depends on the host's vector ISA): W packed into panels
    x, w, y = _matmul(i64(gemm_tb.MAX_ROWS + 173), 53, 29, trans_b=True)
    assert _uses_gemm_microkernel(_check([x, w, y], [{}], rng))


def test_fused_matmul_add_relu_writes_the_gemm_into_the_output(rng):
    n = tir.Var("n", "int64")
    x, w, mm = _matmul(n, 96, 40)
    b = te.placeholder((i64(40),), name="b")
    add = te.compute((n, i64(40)), lambda i, j: mm[i, j] + b[j], name="T_add")
    relu = te.compute((n, i64(40)), lambda i, j: te.max(add[i, j], f32(0.0)), name="relu")
    g = _check([x, w, b, relu], [{"n": 1}, {"n": 9}, {"n": 100}], rng)
    assert _uses_gemm_microkernel(g)
    # no intermediate is allocated: the GEMM writes the output, add+relu run on it in place
    names = {s.buffer_var.name for s in _stmts(g, S.Allocate)}
    assert not names & {"matmul", "T_add"}


def test_batch_matmul_with_symbolic_n_and_k(rng):
    n = tir.Var("n", "int64")
    q = te.placeholder((i64(3), n, i64(24)), name="q")
    kt = te.placeholder((i64(3), i64(24), n), name="kt")
    r = te.reduce_axis((i64(0), i64(24)), name="r")
    s = te.compute((i64(3), n, n), lambda b, i, j: te.sum(q[b, i, r] * kt[b, r, j], axis=r),
                   name="scores")
    g = _check([q, kt, s], [{"n": 1}, {"n": 5}, {"n": 40}], rng)
    assert _uses_gemm_microkernel(g)
    a = te.placeholder((i64(3), n, n), name="a")
    v = te.placeholder((i64(3), n, i64(24)), name="v")
    r2 = te.reduce_axis((i64(0), n), name="r2")
    o = te.compute((i64(3), n, i64(24)), lambda b, i, j: te.sum(a[b, i, r2] * v[b, r2, j],
                                                                 axis=r2), name="ctx")
    g = _check([a, v, o], [{"n": 1}, {"n": 5}, {"n": 40}], rng)
    assert _uses_gemm_microkernel(g)


def test_broadcast_batch_matmul_static(rng):
    a = te.placeholder((i64(4), i64(17), i64(19)), name="a")
    b = te.placeholder((i64(1), i64(23), i64(19)), name="b")
    r = te.reduce_axis((i64(0), i64(19)), name="r")
    o = te.compute((i64(4), i64(17), i64(23)),
                   lambda n, i, j: te.sum(a[n, i, r] * b[0, j, r], axis=r), name="bmm")
    t = raise_nest(analyze_nest(unwrap_root(te.create_prim_func([a, b, o]))[1][0]),
                   lambda buf: te.placeholder(buf.shape, buf.dtype, buf.name))
    assert t.op.tag == "batch_matmul" and t.op.attrs["transpose_b"]
    _check([a, b, o], [{}], rng)


def test_gemm_tag_rejects_non_gemm_reductions():
    x = te.placeholder((i64(8), i64(8)), name="x")
    r = te.reduce_axis((i64(0), i64(8)), name="r")
    sq = te.compute((i64(8), i64(8)), lambda i, j: te.sum(x[i, r] * x[i, r], axis=r), name="sq")
    mx = te.compute((i64(8), i64(8)), lambda i, j: te.max(x[i, r] * x[r, j], axis=r), name="mx")
    assert gemm_tag(sq) == ("", {})
    assert gemm_tag(mx) == ("", {})


def test_rank4_batch_matmul_and_rank3_matmul(rng):
    """BERT in Relax: [b, h, s, d] @ [b, h, d, s] and [b, s, 768] @ [768, 768]."""
    s = tir.Var("s", "int64")
    q = te.placeholder((i64(1), i64(2), s, i64(16)), name="q")
    kt = te.placeholder((i64(1), i64(2), i64(16), s), name="kt")
    r = te.reduce_axis((i64(0), i64(16)), name="r")
    sc = te.compute((i64(1), i64(2), s, s), lambda b, h, i, j: te.sum(
        q[b, h, i, r] * kt[b, h, r, j], axis=r), name="scores")
    g = _check([q, kt, sc], [{"s": 1}, {"s": 9}, {"s": 33}], rng)
    assert _uses_gemm_microkernel(g)
    x = te.placeholder((i64(1), s, i64(48)), name="x")
    w = te.placeholder((i64(48), i64(64)), name="w")
    r2 = te.reduce_axis((i64(0), i64(48)), name="r2")
    y = te.compute((i64(1), s, i64(64)), lambda b, i, j: te.sum(x[b, i, r2] * w[r2, j], axis=r2),
                   name="proj")
    g = _check([x, w, y], [{"s": 1}, {"s": 9}, {"s": 33}], rng)
    assert _uses_gemm_microkernel(g)


def test_large_weight_matmul_packs_only_for_many_rows(rng):
    """A big ``[K, N]`` B is read in place for few rows and packed for many: both variants
    are generated and the symbolic row count picks one at run time."""
    n = tir.Var("n", "int64")
    x, w, y = _matmul(n, 1100, 128)
    g = _check([x, w, y], [{"n": 2}, {"n": 17}, {"n": 40}], rng)
    def packs(stmt):
        return any(isinstance(s, S.BufferStore) and s.buffer.name == "matmul_bpack"
                   for s in walk_stmts(stmt))

    branches = [s for s in _stmts(g, S.IfThenElse) if s.else_case is not None and
                packs(s.else_case)]
    assert branches, "the packed variant must be the else branch"
    assert not packs(branches[0].then_case)


# ---------------------------------------------------------------------------------- conv2d
def _padded_conv(n, c, h, o, stride, use_select, cond_hi=None):
    x = te.placeholder((n, c, h, h), name="x")
    w = te.placeholder((o, c, 3, 3) if isinstance(c, int) else (o, c, i64(3), i64(3)), name="w")
    hp = h + 2
    hi = h + 1 if cond_hi is None else cond_hi

    def pad_body(b, ch, i, j):
        cond = tir.And(tir.And(i >= 1, i < hi), tir.And(j >= 1, j < h + 1))
        if use_select:
            return tir.Select(cond, x[b, ch, i - 1, j - 1], f32(0.0))
        return te.if_then_else(cond, x[b, ch, i - 1, j - 1], f32(0.0))

    p = te.compute((n, c, hp, hp), pad_body, name="pad_temp")
    rc = te.reduce_axis((0, c), name="rc")
    ry, rx = te.reduce_axis((0, 3), name="ry"), te.reduce_axis((0, 3), name="rx")
    oh = (hp - 3) // stride + 1
    y = te.compute((n, o, oh, oh), lambda b, f, i, j: te.sum(
        p[b, rc, i * stride + ry, j * stride + rx] * w[f, rc, ry, rx], axis=[rc, ry, rx]),
        name="conv2d_nchw")
    return x, w, p, y


def _conv_taken(func) -> bool:
    """The implicit-GEMM convolution's phased input copy ``xph``."""
    return any(s.buffer_var.name == "xph" for s in _stmts(func, S.Allocate))


@pytest.mark.parametrize("use_select", [False, True])
def test_padded_conv_takes_the_implicit_gemm(rng, use_select):
    x, w, p, y = _padded_conv(2, 5, 9, 12, 1, use_select)
    assert conv_tag(y)[0] == "conv2d_nchw"
    assert conv_tag(y)[1]["padding"] == (1, 1, 1, 1) and conv_tag(y)[1]["operands"][0] is x
    g = _check([x, w, y], [{}], rng)
    assert _conv_taken(g)


def test_strided_conv_with_symbolic_batch_and_fused_relu(rng):
    b = tir.Var("b", "int64")
    x = te.placeholder((b, i64(4), i64(11), i64(11)), name="x")
    w = te.placeholder((i64(6), i64(4), i64(3), i64(3)), name="w")
    bias = te.placeholder((i64(6),), name="bias")
    rc = te.reduce_axis((i64(0), i64(4)), name="rc")
    ry, rx = te.reduce_axis((i64(0), i64(3)), name="ry"), te.reduce_axis((i64(0), i64(3)), name="rx")
    cv = te.compute((b, i64(6), i64(5), i64(5)), lambda n, f, i, j: te.sum(
        x[n, rc, i * i64(2) + ry, j * i64(2) + rx] * w[f, rc, ry, rx], axis=[rc, ry, rx]),
        name="conv")
    y = te.compute((b, i64(6), i64(5), i64(5)), lambda n, f, i, j: te.max(
        cv[n, f, i, j] + bias[f], f32(0.0)), name="relu")
    assert conv_tag(cv)[1]["strides"] == (2, 2)
    g = _check([x, w, bias, y], [{"b": 1}, {"b": 3}], rng)
    assert _conv_taken(g)


def test_wrong_pad_condition_is_not_taken_as_padding(rng):
    x, w, p, y = _padded_conv(1, 3, 8, 4, 1, False, cond_hi=8)  # last row zeroed too
    assert pad_of(p) is None
    tag, attrs = conv_tag(y)
    assert tag == "conv2d_nchw" and attrs["operands"][0] is p and attrs["padding"] == (0,) * 4
    _check([x, w, y], [{}], rng)


def test_affine_index_analysis():
    i, k = tir.Var("i", "int64"), tir.Var("k", "int64")
    terms, const = affine(i * i64(2) + k - i64(3))
    assert {v.name: c for v, c in terms.values()} == {"i": 2, "k": 1} and const == -3
    assert affine(i * k) is None
    assert affine(tir.FloorDiv(i, i64(2))) is None


# ---------------------------------------------------------------------------------- others
def test_softmax_over_symbolic_rows_and_columns(rng):
    n = tir.Var("n", "int64")
    x = te.placeholder((i64(2), n, n), name="x")
    k = te.reduce_axis((i64(0), n), name="k")
    mx = te.compute((i64(2), n), lambda h, i: te.max(x[h, i, k], axis=k), name="mx")
    ex = te.compute((i64(2), n, n), lambda h, i, j: te.exp(x[h, i, j] - mx[h, i]), name="ex")
    k2 = te.reduce_axis((i64(0), n), name="k2")
    s = te.compute((i64(2), n), lambda h, i: te.sum(ex[h, i, k2], axis=k2), name="s")
    o = te.compute((i64(2), n, n), lambda h, i, j: ex[h, i, j] / s[h, i], name="softmax")
    g = _check([x, o], [{"n": 1}, {"n": 15}, {"n": 33}, {"n": 70}], rng, rtol=1e-5)
    assert not _has_blocks(g)
    assert any(s.kind == S.ForKind.VECTORIZED for s in _stmts(g, S.For))


def test_layer_norm_odd_static_shape(rng):
    x = te.placeholder((i64(3), i64(70)), name="x")
    g_ = te.placeholder((i64(70),), name="gamma")
    k = te.reduce_axis((i64(0), i64(70)), name="k")
    s = te.compute((i64(3),), lambda i: te.sum(x[i, k], axis=k), name="s")
    k2 = te.reduce_axis((i64(0), i64(70)), name="k2")
    s2 = te.compute((i64(3),), lambda i: te.sum(x[i, k2] * x[i, k2], axis=k2), name="s2")

    def ln(i, j):
        mean = s[i] / f32(70.0)
        return (x[i, j] - mean) * te.rsqrt(s2[i] / f32(70.0) - mean * mean + f32(1e-5)) * g_[j]

    o = te.compute((i64(3), i64(70)), ln, name="ln")
    _check([x, g_, o], [{}], rng)


def test_elementwise_chain_is_inlined_into_one_nest(rng):
    n = tir.Var("n", "int64")
    x = te.placeholder((n, i64(31)), name="x")
    y = te.placeholder((i64(31),), name="y")
    a = te.compute((n, i64(31)), lambda i, j: x[i, j] * y[j] + f32(1.0), name="a")
    b = te.compute((n, i64(31)), lambda i, j: te.tanh(a[i, j]), name="b")
    c = te.compute((n, i64(31)), lambda i, j: b[i, j] - x[i, j], name="c")
    g = _check([x, y, c], [{"n": 1}, {"n": 13}], rng, rtol=1e-5)
    stores = _stmts(g, S.BufferStore)
    assert {s.buffer.name for s in stores} == {"c"}  # a and b inlined, nothing allocated
    assert not _stmts(g, S.Allocate)


def _tiled(func) -> bool:
    """The transpose schedule: a loop over one tile's rows around the vectorized loop."""
    return any(isinstance(s, S.For) and s.kind == S.ForKind.SERIAL and
               isinstance(s.body, S.For) and s.body.kind == S.ForKind.VECTORIZED and
               s.loop_var.name.startswith("p") for s in walk_stmts(func.body))


def test_transpose_is_tiled(rng):
    a = te.placeholder((i64(77), i64(45)), name="a")
    t = te.compute((i64(45), i64(77)), lambda i, j: a[j, i], name="T_transpose")
    g = _check([a, t], [{}], rng, rtol=0, atol=0)
    assert _tiled(g)


def test_symbolic_reshape_transpose_chain_is_tiled(rng):
    """LegalizeOps + FuseTIR's head split of BERT: reshape, transpose, transpose, fused."""
    s = tir.Var("seq", "int64")
    x = te.placeholder((i64(1), s, i64(96)), name="x")
    r = te.compute((i64(1), s, i64(3), i64(32)), lambda a, i, h, d: x[0, i, h * i64(32) + d],
                   name="T_reshape")
    t1 = te.compute((i64(1), i64(3), s, i64(32)), lambda a, h, i, d: r[a, i, h, d],
                    name="T_transpose")
    t2 = te.compute((i64(1), i64(3), i64(32), s), lambda a, h, d, i: t1[a, h, i, d],
                    name="T_transpose_1")
    g = _check([x, t2], [{"seq": 1}, {"seq": 17}, {"seq": 40}], rng, rtol=0, atol=0)
    assert _tiled(g)
    assert not _stmts(g, S.Allocate)  # the chain is one loop nest


def test_int32_static_conv_and_pool_shapes(rng):
    x = te.placeholder((2, 3, 9, 9), name="x")
    w = te.placeholder((4, 3, 3, 3), name="w")
    rc, ry, rx = (te.reduce_axis((0, 3), name=nm) for nm in ("rc", "ry", "rx"))
    y = te.compute((2, 4, 7, 7), lambda b, o, i, j: te.sum(
        x[b, rc, i + ry, j + rx] * w[o, rc, ry, rx], axis=[rc, ry, rx]), name="conv")
    r1, r2 = te.reduce_axis((0, 2), name="r1"), te.reduce_axis((0, 2), name="r2")
    p = te.compute((2, 4, 6, 6), lambda b, c, i, j: te.max(y[b, c, i + r1, j + r2],
                                                          axis=[r1, r2]), name="pool")
    _check([x, w, p], [{}], rng)


def test_full_reduction_to_a_rank0_buffer(rng):
    n = tir.Var("n", "int64")
    x = te.placeholder((n, i64(5)), name="x")
    r1, r2 = te.reduce_axis((i64(0), n), name="r1"), te.reduce_axis((i64(0), i64(5)), name="r2")
    total = te.compute((), lambda: te.sum(x[r1, r2], axis=[r1, r2]), name="total")
    scaled = te.compute((i64(3),), lambda i: x[i, i] * total[()], name="scaled")
    g = _check([x, total], [{"n": 1}, {"n": 40}], rng)
    assert not _has_blocks(g)
    _check([x, scaled], [{"n": 3}, {"n": 9}], rng)


def test_legalized_relax_ops(rng):
    """What LegalizeOps writes for a few heavy ops, optimized and run against the blocks."""
    from minitvm import relax
    from minitvm.relax.transform import LegalizeOps

    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo((2, 3, 12, 12), "float32"))
    w = relax.Var("w", relax.TensorStructInfo((8, 3, 3, 3), "float32"))
    with bb.function("main", [x, w]):
        with bb.dataflow():
            c = bb.emit(relax.op.nn.conv2d(x, w, padding=(1, 1)))
            p = bb.emit(relax.op.nn.max_pool2d(c, pool_size=(2, 2), strides=(2, 2)))
            s = bb.emit(relax.op.nn.softmax(p, axis=-1))
            m = bb.emit(relax.op.mean(s, axis=[2, 3]))
            gv = bb.emit_output(m)
        bb.emit_func_output(gv)
    mod = LegalizeOps()(bb.get())
    prims = {gv.name_hint: f for gv, f in mod.functions.items() if isinstance(f, PrimFunc)}
    assert {"conv2d", "max_pool2d", "softmax", "mean"} <= set(prims)
    for name, f in prims.items():
        g = optimize_prim_func(f)
        assert not _has_blocks(g), name
        args = [rng.standard_normal([int(d) for d in f.buffer_map[p].shape]).astype("float32")
                for p in f.params]
        b = [a.copy() for a in args]
        build(f, name="k")["k"](*args)
        build(g, name="k")["k"](*b)
        np.testing.assert_allclose(b[-1], args[-1], rtol=1e-5, atol=1e-5, err_msg=name)
    assert _conv_taken(optimize_prim_func(prims["conv2d"]))


def test_seed003_fused_functions(rng):
    """The PrimFuncs FuseTIR prints for seed 003, optimized, at several batch sizes."""
    mod = from_source(SEED.read_text())
    for name in ("fused_matmul_add_relu", "fused_matmul1_add1", "transpose"):
        f = mod[name]
        g = optimize_prim_func(f)
        assert not _has_blocks(g)
        if name.startswith("fused"):
            assert _uses_gemm_microkernel(g)
        ref, opt = build(f)["main"], build(g)["main"]
        for n in (1, 3, 64):
            args = []
            for p in f.params:
                buf = f.buffer_map[p]
                shape = [d.value if isinstance(d, tir.IntImm) else n for d in buf.shape]
                args.append(rng.standard_normal(shape).astype("float32"))
            b = [a.copy() for a in args]
            ref(*args)
            opt(*b)
            np.testing.assert_allclose(b[-1], args[-1], rtol=1e-4, atol=1e-4)


# ---------------------------------------------------------------------------------- kept
def _scan_func():
    """``a[i] = a[i-1] + x[i]`` (i >= 1) after ``a[0] = x[0]``, then ``y = a * 2``: the scan
    block reads what it writes, so it must keep its order; the last block is raisable."""
    n = i64(10)
    x = decl_buffer((n,), "float32", "x")
    y = decl_buffer((n,), "float32", "y")
    a = decl_buffer((n,), "float32", "a")
    i = tir.Var("i", "int64")
    vi = tir.Var("vi", "int64")
    dom = tir.Range.from_min_extent(i64(0), n)
    prev = tir.Max(vi - i64(1), i64(0))
    scan_val = tir.Select(vi > i64(0), a[prev] + x[vi], x[vi])
    scan = S.Block([tir.IterVar(dom, vi, tir.IterVar.DataPar)], [], [], "scan",
                   S.BufferStore(a, scan_val, [vi]))
    scan_nest = S.For(i, i64(0), n, S.ForKind.SERIAL, S.BlockRealize([i], True, scan))
    j = tir.Var("j", "int64")
    vj = tir.Var("vj", "int64")
    dbl = S.Block([tir.IterVar(dom, vj, tir.IterVar.DataPar)], [], [], "dbl",
                  S.BufferStore(y, a[vj] * f32(2.0), [vj]))
    dbl_nest = S.For(j, i64(0), n, S.ForKind.SERIAL, S.BlockRealize([j], True, dbl))
    root = S.Block([], [], [], "root", S.SeqStmt([scan_nest, dbl_nest]), alloc_buffers=[a])
    return PrimFunc([x, y], S.BlockRealize([], True, root), attrs={"tir.noalias": True}), \
        scan_nest


def test_unraisable_block_is_kept_as_written(rng):
    f, scan_nest = _scan_func()
    assert analyze_nest(scan_nest).block is None
    g = optimize_prim_func(f)
    assert g is not f
    kept = [s for s in walk_stmts(g.body) if isinstance(s, S.For) and s is scan_nest]
    assert kept, "the scan nest must be kept as the same statement"
    names = {s.block.name_hint for s in _stmts(g, S.BlockRealize)}
    assert "scan" in names and "dbl" not in names
    x = rng.standard_normal(10).astype("float32")
    y1, y2 = np.zeros(10, "float32"), np.zeros(10, "float32")
    build(f)["main"](x, y1)
    build(g)["main"](x, y2)
    np.testing.assert_allclose(y2, np.cumsum(x) * 2, rtol=1e-5)
    np.testing.assert_allclose(y2, y1, rtol=1e-6)


def test_function_without_blocks_is_returned_unchanged():
    x = decl_buffer((4,), "float32", "x")
    i = tir.Var("i", "int32")
    body = S.For(i, 0, 4, S.ForKind.SERIAL, S.BufferStore(x, x[i] + f32(1.0), [i]))
    f = PrimFunc([x], body)
    assert optimize_prim_func(f) is f


def test_numpy_only_options_keep_the_function():
    x, w, y = _matmul(i64(4), 8, 8)
    f = te.create_prim_func([x, w, y])
    assert optimize_prim_func(f, LoweringOptions(native=False)) is f


def test_bad_input_is_a_clear_error():
    with pytest.raises(TypeError, match="expects a tir.PrimFunc"):
        optimize_prim_func("not a function")


def test_deep_expression_at_default_recursion_limit(rng):
    """A 100,000-deep elementwise expression is raised and scheduled without recursion."""
    x = te.placeholder((i64(4),), name="x")

    def body(i):
        e = x[i]
        for _ in range(100_000):
            e = e + f32(1.0)
        return e

    y = te.compute((i64(4),), body, name="y")
    g = optimize_prim_func(te.create_prim_func([x, y]))
    assert not _has_blocks(g)
    assert [s.buffer.name for s in _stmts(g, S.BufferStore)] == ["y"] * len(
        _stmts(g, S.BufferStore))

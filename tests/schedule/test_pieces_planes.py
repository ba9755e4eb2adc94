"""Stages with a piece tree along an outer axis (``schedule/pieces.split_planes``): a channel
concatenate of NCHW planes is stored piece by piece, copies as flat runs of vectors (no
per-element test, no scalar row tails), other pieces as their own nests; numerics against numpy
over batch sizes, axes, dtypes, fused epilogues and mixed pieces."""

from types import SimpleNamespace

import numpy as np
import pytest
from relay_build import build_run

from minitvm import relay, te, topi
from minitvm.ir.type import TensorType
from minitvm.schedule import pieces
from minitvm.schedule.lower import lower_te
from minitvm.tir import expr as E
from minitvm.tir import stmt as S
from minitvm.tir.stmt_functor import post_order, walk_stmts


def _build(fn, *arrays):
    return build_run(fn, *arrays)[0][0]


def _concat_func(shapes, axis, dtype="float32"):
    """The lowered PrimFunc of a TE concatenate of placeholders of ``shapes``."""
    xs = [te.placeholder(s, dtype, f"a{k}") for k, s in enumerate(shapes)]
    out_shape = list(shapes[0])
    out_shape[axis] = sum(s[axis] for s in shapes)
    (out,) = topi.get_compute("concatenate")(SimpleNamespace(axis=axis), xs,
                                             TensorType(tuple(out_shape), dtype))
    func, _ = lower_te(xs, [out])
    return func


def _stmts(func):
    return list(walk_stmts(func.body))


def _exprs(func):
    out = []
    for s in _stmts(func):
        for v in ("value", "condition"):
            e = getattr(s, v, None)
            if isinstance(e, E.PrimExpr):
                out.extend(post_order(e))
    return out


CASES = [  # shapes of the operands, axis
    ([(1, 128, 27, 27), (1, 128, 27, 27)], 1),  # SqueezeNet's fire concat
    ([(1, 64, 55, 55), (1, 64, 55, 55)], 1),
    ([(2, 3, 5, 7), (2, 4, 5, 7), (2, 1, 5, 7)], 1),  # batch 2: runs per image
    ([(3, 4, 5), (2, 4, 5)], 0),
    ([(2, 3, 6, 5), (2, 3, 2, 5)], 2),
    ([(1, 1, 1, 3), (1, 2, 1, 3)], 1),  # runs shorter than a vector
    ([(2, 1700, 40), (2, 20, 40)], 1),  # parallel chunks of one run with a tail
]


@pytest.mark.parametrize("shapes,axis", CASES)
def test_concat_outer_axis_matches_numpy(shapes, axis):
    rng = np.random.default_rng(1)
    xs = [rng.standard_normal(s).astype("float32") for s in shapes]
    got = _build(lambda *v: relay.concatenate(list(v), axis=axis), *xs)
    np.testing.assert_array_equal(got, np.concatenate(xs, axis))


@pytest.mark.parametrize("dtype", ["int8", "float64", "int32"])
def test_concat_outer_axis_dtypes_and_epilogue(dtype):
    rng = np.random.default_rng(2)
    xs = [(rng.standard_normal((2, c, 9, 11)) * 20).astype(dtype) for c in (3, 17)]
    got = _build(lambda a, b: relay.nn.relu(relay.concatenate([a, b], axis=1)), *xs)
    np.testing.assert_array_equal(got, np.maximum(np.concatenate(xs, 1), 0))


def test_concat_with_upsampled_piece_and_broadcast_operand():
    """A piece that is not a copy (nearest upsampling, YOLO's neck) keeps a nest of its own;
    the copy beside it still runs flat; an operand read at one element is left alone."""
    rng = np.random.default_rng(3)
    small = rng.standard_normal((1, 4, 6, 6)).astype("float32")
    big = rng.standard_normal((1, 5, 12, 12)).astype("float32")
    bias = rng.standard_normal((1,)).astype("float32")

    def fn(s, b, k):
        up = relay.nn.upsampling(s, 2.0, 2.0, method="nearest_neighbor")
        return relay.add(relay.concatenate([up, b], axis=1), k)

    got = _build(fn, small, big, bias)
    up = small.repeat(2, axis=2).repeat(2, axis=3)
    np.testing.assert_allclose(got, np.concatenate([up, big], 1) + bias[0], rtol=0, atol=0)


def test_copy_pieces_are_flat_runs_without_tests():
    func = _concat_func([(1, 128, 27, 27), (1, 128, 27, 27)], 1)
    exprs = _exprs(func)
    assert not any(isinstance(e, E.Call) and e.op_name == "tir.if_then_else" for e in exprs)
    assert not any(isinstance(e, (E.Min, E.Max)) for e in exprs)
    stores = [s for s in _stmts(func) if isinstance(s, S.BufferStore)]
    assert stores and all(s.buffer.name == "out0_flat" and len(s.indices) == 1 for s in stores)
    loads = [e for e in exprs if isinstance(e, E.BufferLoad)]
    assert {e.buffer.name for e in loads} == {"in0_flat", "in1_flat"}
    # every vector loop is whole vectors: no scalar tail of a 27-column row
    serial = [s for s in _stmts(func) if isinstance(s, S.For) and s.kind == S.ForKind.SERIAL
              and not any(isinstance(x, S.For) for x in _loop_kids(s))]
    assert not serial


def _loop_kids(loop):
    return list(walk_stmts(loop.body))


def test_non_copy_pieces_keep_per_piece_nests():
    """An upsampled piece is not a row-major copy: ``split_planes`` still cuts the axis (no
    test left) but writes that piece through the multi-dimensional buffer."""
    a = te.placeholder((1, 2, 4, 6), "float32", "a")
    b = te.placeholder((1, 3, 2, 3), "float32", "b")
    bt = te.compute((1, 3, 4, 6), lambda n, c, h, w: b[n, c, h // 2, w // 2], name="up")
    (out,) = topi.get_compute("concatenate")(SimpleNamespace(axis=1), [a, bt],
                                             TensorType((1, 5, 4, 6), "float32"))
    func, _ = lower_te([a, b], [out])
    exprs = _exprs(func)
    assert not any(isinstance(e, E.Call) and e.op_name == "tir.if_then_else" for e in exprs)
    names = {e.buffer.name for e in exprs if isinstance(e, E.BufferLoad)}
    assert names == {"in0_flat", "in1"}


def test_split_planes_declines_without_outer_cuts():
    """A last-axis concatenate has no outer-axis piece tree: the innermost split handles it."""
    xs = [te.placeholder((2, 3, w), "float32", f"a{w}") for w in (4, 5)]
    (out,) = topi.get_compute("concatenate")(SimpleNamespace(axis=2), xs,
                                             TensorType((2, 3, 9), "float32"))
    from minitvm.schedule.common import LowerCtx
    from minitvm.tir.buffer import decl_buffer

    buf = decl_buffer((2, 3, 9), "float32", "o")
    assert pieces.split_planes(LowerCtx(), out, buf, out.op.body, 16, False) is None


def test_large_runs_are_parallel_chunks():
    run = 4 * pieces.FLAT_CHUNK + 100  # the first piece's elements per image
    func = _concat_func([(2, run, 1), (2, 20, 1)], 1)
    loops = [s for s in _stmts(func) if isinstance(s, S.For)]
    par = [s for s in loops if s.kind == S.ForKind.PARALLEL]
    # whole chunks of each image's run, image x chunk in parallel, then the tails
    assert par and par[0].extent.value == 2 * 4


def test_many_pieces_keep_one_nest():
    """Past ``MAX_PLANE_PIECES`` the stage keeps one nest with its tree (code size)."""
    n = pieces.MAX_PLANE_PIECES + 1
    func = _concat_func([(1, 1, 3, 4)] * n, 1)
    exprs = _exprs(func)
    assert any(isinstance(e, E.Call) and e.op_name == "tir.if_then_else" for e in exprs)
    rng = np.random.default_rng(5)
    xs = [rng.standard_normal((1, 1, 3, 4)).astype("float32") for _ in range(n)]
    got = _build(lambda *v: relay.concatenate(list(v), axis=1), *xs)
    np.testing.assert_array_equal(got, np.concatenate(xs, 1))


# ----------------------------------------------------------------- pieces across the rows
def _decode(v, c, h, w, stride, grid):
    """One YOLO scale: ``[1, 3c, h, w]`` to ``[1, 3hw, c]`` through sigmoid, its first two
    attributes scaled and shifted by a per-pixel grid."""
    y = relay.sigmoid(relay.transpose(relay.reshape(v, (1, 3, c, h, w)), (0, 1, 3, 4, 2)))
    xy = relay.strided_slice(y, [0, 0, 0, 0, 0], [1, 3, h, w, 2])
    rest = relay.strided_slice(y, [0, 0, 0, 0, 2], [1, 3, h, w, c])
    xy = (xy * relay.const(2.0) + grid) * relay.const(float(stride))
    return relay.reshape(relay.concatenate([xy, rest], axis=-1), (1, 3 * h * w, c))


def _decode_ref(x, c, h, w, stride, grid):
    y = 1.0 / (1.0 + np.exp(-x.reshape(1, 3, c, h, w).transpose(0, 1, 3, 4, 2)))
    y = np.concatenate([(y[..., :2] * 2 + grid) * stride, y[..., 2:]], -1)
    return y.reshape(1, 3 * h * w, c)


SCALES = [(16, 16, 8), (8, 8, 16), (3, 3, 32)]  # h, w, stride: 16 and 8 lanes, and too narrow


def test_decode_heads_vectorized_across_rows_match_numpy():
    rng = np.random.default_rng(6)
    c = 7
    xs = [rng.standard_normal((1, 3 * c, h, w)).astype("float32") for h, w, _ in SCALES]
    grids = [rng.standard_normal((1, 1, h, w, 2)).astype("float32") for h, w, _ in SCALES]

    def fn(*vs):
        heads = [_decode(v, c, h, w, s, g)
                 for v, g, (h, w, s) in zip(vs[:3], vs[3:], SCALES, strict=True)]
        return relay.concatenate(heads, axis=1)

    got = _build(fn, *xs, *grids)
    want = np.concatenate([_decode_ref(x, c, h, w, s, g)
                           for x, g, (h, w, s) in zip(xs, grids, SCALES, strict=True)], 1)
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=2e-6)


def _head(x, c, h, w, name):
    def body(b, o, a):
        return te.sigmoid(x[b, o // (h * w) * c + a, o // w % h, o % w])

    return te.compute((1, 3 * h * w, c), body, name=name)


def test_decode_pieces_read_whole_vectors():
    """The vectorized loop runs along the pixels: each load of the head is unit-stride in the
    vector variable (its last index), the grid's stride 2, the output's store scattered."""
    c, lanes = 7, 16
    heads, pieces_ = [], []
    for k, (h, w, _) in enumerate(SCALES[:2]):
        x = te.placeholder((1, 3 * c, h, w), "float32", f"x{k}")
        heads.append(x)
        pieces_.append(_head(x, c, h, w, f"head{k}"))
    (out,) = topi.get_compute("concatenate")(SimpleNamespace(axis=1), pieces_,
                                             TensorType((1, 3 * (256 + 64), c), "float32"))
    func, _ = lower_te(heads, [out])
    vec = [s for s in _stmts(func) if isinstance(s, S.For) and s.kind == S.ForKind.VECTORIZED]
    assert {s.extent.value for s in vec} == {lanes, 8}  # (16-wide planes, then 8-wide)
    for loop in vec:
        qi = loop.loop_var
        (store,) = [s for s in _loop_kids(loop) if isinstance(s, S.BufferStore)]
        assert any(x is qi for x in post_order(store.indices[1]))
        loads = [e for e in post_order(store.value) if isinstance(e, E.BufferLoad)]
        assert loads and all(not any(x is qi for i in e.indices[:-1] for x in post_order(i))
                             for e in loads)
    assert not any(isinstance(e, E.Call) and e.op_name == "tir.if_then_else"
                   for e in _exprs(func))


def test_across_rows_declines_wide_strides():
    """A piece whose pixels are read 6 elements apart (not a vector load) keeps its nest: the
    innermost axis stays the vectorized one; the result is still right."""
    rng = np.random.default_rng(7)
    a = rng.standard_normal((1, 16, 3)).astype("float32")
    b = rng.standard_normal((1, 2, 16, 3)).astype("float32")

    def fn(x, y):  # [1, 16, 3] beside [1, 16, 6]: y read with stride 6 along the pixels
        yt = relay.reshape(relay.transpose(y, (0, 2, 1, 3)), (1, 16, 6))
        z = relay.concatenate([relay.concatenate([x, x], axis=-1), yt], axis=1)
        return relay.sigmoid(relay.transpose(z, (0, 2, 1)))

    got = _build(fn, a, b)
    yt = b.transpose(0, 2, 1, 3).reshape(1, 16, 6)
    z = np.concatenate([np.concatenate([a, a], -1), yt], 1)
    np.testing.assert_allclose(got, 1 / (1 + np.exp(-z.transpose(0, 2, 1))), rtol=2e-6,
                               atol=2e-6)


def test_lane_stride_accepts_only_short_constant_strides():
    from minitvm.arith import Analyzer
    from minitvm.tir.buffer import decl_buffer

    qi, r = E.Var("qi", "int32"), E.Var("r", "int32")
    ana = Analyzer()
    ana.bind(qi, E.Range.from_min_extent(E.IntImm("int32", 0), E.IntImm("int32", 16)))
    buf = decl_buffer((4, 6, 16), "float32", "b")
    two = E.IntImm("int32", 2)
    assert pieces._lane_stride(ana, buf, [r, r, qi], qi) == 1
    assert pieces._lane_stride(ana, buf, [r, r, qi * two], qi) == 2
    assert pieces._lane_stride(ana, buf, [r, qi, r], qi) is None  # 16 apart
    assert pieces._lane_stride(ana, buf, [r, r, qi * qi], qi) is None  # not affine


def test_shift_of_long_chain_does_not_recurse():
    v = E.Var("v", "int32")
    e = v
    for _ in range(100_000):
        e = E.Add(e, E.IntImm("int32", 1))
    assert pieces._shift_of(E.Sub(e, E.IntImm("int32", 7)), v) == 100_000 - 7
    assert pieces._shift_of(E.Mul(v, E.IntImm("int32", 2)), v) is None


def _piece_tree(j, k: int, width: int):
    """``if_then_else(j < width, a0[...], if_then_else(j < 2 * width, a1[...], ...))``: a
    ``k``-piece tree whose piece ``p`` reads ``ap[min(j - p * width, width - 1)]``."""
    from minitvm.tir.buffer import decl_buffer

    int32 = lambda v: E.IntImm("int32", v)  # noqa: E731
    bufs = [decl_buffer((width,), "float32", f"a{p}") for p in range(k)]
    expr = E.BufferLoad(bufs[-1], [E.Min(j - int32((k - 1) * width), int32(width - 1))])
    for p in range(k - 2, -1, -1):
        load = E.BufferLoad(bufs[p], [E.Min(j - int32(p * width), int32(width - 1))])
        expr = E.Call("float32", "tir.if_then_else", [E.LT(j, int32((p + 1) * width)), load,
                                                      expr])
    return expr, bufs


@pytest.mark.parametrize("piece", [0, 3, 7])
def test_resolve_takes_a_piece_branch_and_its_clamps(piece):
    j = E.Var("j", "int32")
    tree, bufs = _piece_tree(j, 8, 5)
    got = pieces.resolve(tree, j, piece * 5, piece * 5 + 5)
    assert isinstance(got, E.BufferLoad) and got.buffer is bufs[piece]
    # the clamp min(j - 5p, 4) is decided by the range: the plain index remains
    assert not any(isinstance(e, (E.Min, E.Call)) for e in post_order(got))


def test_resolve_keeps_undecided_tests():
    j = E.Var("j", "int32")
    tree, _ = _piece_tree(j, 3, 5)
    got = pieces.resolve(tree, j, 3, 8)  # straddles the first cut: the tree's root stays
    assert isinstance(got, E.Call) and got.op_name == "tir.if_then_else"


def test_resolve_deep_tree_does_not_recurse():
    """A 100,000-piece tree: resolving the last piece walks its chain of tests iteratively."""
    j = E.Var("j", "int32")
    tree, bufs = _piece_tree(j, 100_000, 2)
    got = pieces.resolve(tree, j, 2 * 99_999, 2 * 100_000)
    assert isinstance(got, E.BufferLoad) and got.buffer is bufs[-1]

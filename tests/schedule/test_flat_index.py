"""Symbolic-shape stages that copy in row-major order (``schedule/flat_index.py``): the flat
offset polynomial proves a reshape under a symbolic batch (ViT's head split) without bounds, the
stage becomes rows of contiguous vectors through flat views, and the numerics match numpy at
several batch sizes; stages that are not row-major copies keep the generic lowering."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relax, tir
from minitvm.relax.pipeline import get_pipeline
from minitvm.schedule import optimize_prim_func
from minitvm.schedule.flat_index import Canon, flat_offset
from minitvm.tir import expr as E
from minitvm.tir import stmt as S
from minitvm.tir.buffer import decl_buffer
from minitvm.tir.stmt_functor import post_order, walk_stmts


def _i(v):
    return E.IntImm("int64", v)


def test_head_split_reshape_offsets_are_equal():
    n = tir.Var("n", "int64")
    i, j, k = (tir.Var(s, "int64") for s in "ijk")
    src = decl_buffer((_i(197), n, _i(192)), "float32", "src")
    dst = decl_buffer((_i(197), n * _i(3), _i(64)), "float32", "dst")
    r = j * _i(64) + k
    y = r // _i(192) + i * n  # the form the legalizer's analyzer leaves
    canon = Canon()
    got = flat_offset(canon, src, [y // n, y % n, r % _i(192)])
    assert got == flat_offset(canon, dst, [i, j, k])
    # 192 * n * i + 64 * j + k: the divisions by n and by 192 cancel
    assert all(canon.atoms[a][0] == "var" for m in got for a in m)


def test_transpose_and_shifted_loads_are_not_the_stored_position():
    n = tir.Var("n", "int64")
    i, j = tir.Var("i", "int64"), tir.Var("j", "int64")
    a = decl_buffer((n, _i(8)), "float32", "a")
    at = decl_buffer((_i(8), n), "float32", "at")
    canon = Canon()
    out = flat_offset(canon, a, [i, j])
    assert flat_offset(canon, at, [j, i]) != out
    assert flat_offset(canon, a, [i, (j + _i(1)) % _i(8)]) != out
    # a floor division whose numerator is not a multiple stays an atom: no false proof
    assert flat_offset(canon, a, [(i * _i(8) + j) // _i(16) * _i(2), j]) != out


def test_long_index_chain_does_not_recurse():
    x = tir.Var("x", "int64")
    e = x
    for _ in range(100_000):
        e = E.Add(e, _i(1))
    p = Canon().of(E.FloorMod(e, _i(7)) + E.FloorDiv(e, _i(7)) * _i(7))
    assert p == {((0,)): 1, (): 100_000}


def _head_split(n, fused: bool):
    """(T, n, 3C) -> (T, n, 3, C) -> (T, 3n, C/...) reshapes as ViT's attention writes them,
    with a scale fused into the second when ``fused``."""
    x = relax.Var("x", relax.TensorStructInfo([7, n, 48], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            y = bb.emit(relax.op.add(x, relax.const(np.float32(1.0))))
            y = bb.emit(relax.op.reshape(y, [7, n * 3, 16]))
            if fused:
                y = bb.emit(relax.op.multiply(y, relax.const(np.float32(0.5))))
            gv = bb.emit_output(bb.emit(relax.op.permute_dims(y, [1, 0, 2])))
        bb.emit_func_output(gv)
    return bb.get()


@pytest.mark.parametrize("fused", [False, True])
def test_symbolic_reshape_matches_numpy_at_several_batches(fused):
    n = tir.Var("n", "int64")
    vm = relax.VirtualMachine(relax.build(_head_split(n, fused), "llvm"), tvm.cpu())
    rng = np.random.default_rng(0)
    for batch in (1, 4, 3, 2):
        a = rng.standard_normal((7, batch, 48)).astype("float32")
        want = (a + 1).reshape(7, batch * 3, 16) * (0.5 if fused else 1.0)
        got = vm["main"](tvm.nd.array(a)).numpy()
        np.testing.assert_allclose(got, want.transpose(1, 0, 2), rtol=1e-6)


def _reshape_prim_func():
    """The symbolic reshape PrimFunc as LegalizeOps writes ViT's head split."""
    x = relax.Var("x", relax.TensorStructInfo([7, tir.Var("n", "int64"), 48], "float32"))
    bb = relax.BlockBuilder()
    n = x.struct_info.shape.values[1]
    with bb.function("main", [x]):
        with bb.dataflow():
            y = bb.emit(relax.op.reshape(x, [7, n * 3, 16]))
            gv = bb.emit_output(bb.emit(relax.op.multiply(y, y)))
        bb.emit_func_output(gv)
    mod = get_pipeline("default_build")(bb.get())
    return [f for gv, f in mod.functions.items() if isinstance(f, tir.PrimFunc) and
            gv.name_hint in ("reshape", "multiply")]


def test_symbolic_reshape_lowers_to_flat_contiguous_vectors():
    funcs = _reshape_prim_func()
    assert len(funcs) == 2  # the reshape, and the elementwise multiply (same positions)
    for f in funcs:
        g = optimize_prim_func(f)
        stores = [s for s in walk_stmts(g.body) if isinstance(s, S.BufferStore)]
        assert stores and all(s.buffer.name.endswith("_flat") for s in stores)
        vec = [s for s in walk_stmts(g.body) if isinstance(s, S.For) and
               s.kind == S.ForKind.VECTORIZED]
        assert vec
        for s in stores:  # no division left in any index
            for ix in s.indices:
                assert not any(isinstance(e, (E.FloorDiv, E.FloorMod)) for e in post_order(ix))

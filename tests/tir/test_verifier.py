"""tir.analysis.verify_well_formed: undefined variables, undeclared buffers, rank mismatches."""

import pytest

from minitvm import te, tir
from minitvm.tir.analysis import verify_well_formed


def test_te_functions_are_well_formed():
    n = te.var("n")
    A = te.placeholder((n, 8), name="A")
    k = te.reduce_axis((0, 8), name="k")
    B = te.compute((n,), lambda i: te.sum(A[i, k], axis=k), name="B")
    assert verify_well_formed(te.create_prim_func([A, B]))


def test_undefined_variable():
    A = tir.decl_buffer((8,), "float32", "A")
    i, j = tir.Var("i", "int32"), tir.Var("j", "int32")
    f = tir.PrimFunc([A], tir.For(i, 0, 8, 0, tir.BufferStore(A, 1.0, [j])))
    with pytest.raises(ValueError, match="variable 'j' is used but not defined"):
        verify_well_formed(f)
    assert verify_well_formed(f, assert_mode=False) is False


def test_loop_variable_out_of_scope():
    A = tir.decl_buffer((8,), "float32", "A")
    i = tir.Var("i", "int32")
    loop = tir.For(i, 0, 8, 0, tir.BufferStore(A, 1.0, [i]))
    f = tir.PrimFunc([A], tir.SeqStmt([loop, tir.BufferStore(A, 2.0, [i])]))
    with pytest.raises(ValueError, match="'i' is used but not defined"):
        verify_well_formed(f)


def test_rank_mismatch():
    A = tir.decl_buffer((8, 8), "float32", "A")
    i = tir.Var("i", "int32")
    f = tir.PrimFunc([A], tir.For(i, 0, 8, 0, tir.BufferStore(A, 1.0, [i])))
    with pytest.raises(ValueError, match="buffer 'A' has rank 2 but is accessed with 1 indices"):
        verify_well_formed(f)
    g = tir.PrimFunc([A], tir.For(i, 0, 8, 0, tir.BufferStore(A, A[i, i, i], [i, i])))
    with pytest.raises(ValueError, match="rank 2 but is accessed with 3"):
        verify_well_formed(g)


def test_undeclared_buffer():
    A = tir.decl_buffer((8,), "float32", "A")
    X = tir.decl_buffer((8,), "float32", "X")
    f = tir.PrimFunc([A], tir.BufferStore(A, X[0], [0]))
    with pytest.raises(ValueError, match="buffer 'X' is used but not declared"):
        verify_well_formed(f)


def test_block_var_outside_block():
    A = tir.decl_buffer((8,), "float32", "A")
    i, vi = tir.Var("i", "int32"), tir.Var("v_i", "int32")
    blk = tir.Block([tir.IterVar(tir.Range(0, 8), vi, tir.IterVar.DataPar)], [],
                    [tir.BufferRegion(A, [vi])], "b", tir.BufferStore(A, 0.0, [vi]))
    realize = tir.BlockRealize([i], True, blk)
    f = tir.PrimFunc([A], tir.SeqStmt([tir.For(i, 0, 8, 0, realize),
                                       tir.BufferStore(A, 1.0, [vi])]))
    with pytest.raises(ValueError, match="'v_i' is used but not defined"):
        verify_well_formed(f)


def test_symbolic_shape_vars_are_defined_by_buffer_map():
    n = tir.Var("n", "int64")
    A = tir.decl_buffer((n,), "float32", "A")
    i = tir.Var("i", "int64")
    f = tir.PrimFunc([A], tir.For(i, 0, n, 0, tir.BufferStore(A, 0.0, [i])))
    assert verify_well_formed(f)


def test_buffer_map_binds_the_data_pointer():
    """A parameter bound in ``buffer_map`` defines its buffer's data pointer too (the code
    generator maps both to the argument): an extern call passing ``A.data`` is well formed (a
    grouped conv's im2col GEMM over a Relax function's buffers was rejected), while a data
    pointer no parameter binds still is not."""
    a_h, b_h = tir.Var("a", "handle"), tir.Var("b", "handle")
    A = tir.decl_buffer((8,), "float32", "A")
    B = tir.decl_buffer((8,), "float32", "B")
    assert A.data is not a_h
    call = tir.Evaluate(tir.call_extern("int32", "ext", A.data, B.data))
    f = tir.PrimFunc([a_h, b_h], call, buffer_map={a_h: A, b_h: B})
    assert verify_well_formed(f)
    C = tir.decl_buffer((8,), "float32", "C")
    g = tir.PrimFunc([a_h], tir.Evaluate(tir.call_extern("int32", "ext", A.data, C.data)),
                     buffer_map={a_h: A})
    with pytest.raises(ValueError, match="variable 'C' is used but not defined"):
        verify_well_formed(g)

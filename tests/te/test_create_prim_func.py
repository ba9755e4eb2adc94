"""te.compute / te.create_prim_func: one block per stage, reductions with T.init."""

import pytest

from minitvm import te, tir


def _blocks(func):
    out = []
    tir.stmt_functor.post_order_visit(
        func.body, lambda n: out.append(n) if isinstance(n, tir.Block) else None)
    return {b.name_hint: b for b in out}


def test_placeholder_and_compute_shapes():
    A = te.placeholder((3, 4), "float16", "A")
    B = te.compute(A.shape, lambda i, j: A[i, j] * 2.0, name="B")
    assert [int(s) for s in B.shape] == [3, 4]
    assert B.dtype == "float16" and B.op.name == "B"
    assert [iv.var.name for iv in B.op.axis] == ["i", "j"]
    assert B.op.input_tensors == [A]


def test_varargs_compute_names_axes():
    A = te.placeholder((2, 3, 4), name="A")
    B = te.compute(A.shape, lambda *idx: A[idx] + 1.0, name="B")
    assert [iv.var.name for iv in B.op.axis] == ["i0", "i1", "i2"]


def test_reduction_block_has_init_and_reduce_axis():
    A = te.placeholder((8, 16), name="A")
    k = te.reduce_axis((0, 16), name="k")
    B = te.compute((8,), lambda i: te.max(A[i, k], axis=k), name="B")
    f = te.create_prim_func([A, B])
    blk = _blocks(f)["B"]
    assert [iv.iter_type for iv in blk.iter_vars] == [tir.IterVar.DataPar,
                                                      tir.IterVar.CommReduce]
    assert blk.init is not None
    text = f.script()
    assert 'v_i, v_k = T.axis.remap("SR", [i, k])' in text
    assert "B[v_i] = T.float32(-3.4028234663852886e+38)" in text
    assert "B[v_i] = T.max(B[v_i], A[v_i, v_k])" in text
    assert "T.reads(A[v_i, v_k])" in text


def test_intermediate_stage_is_alloc_buffer():
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: A[i] + 1.0, name="B")
    C = te.compute((4,), lambda i: B[i] * 2.0, name="C")
    f = te.create_prim_func([A, C])
    root = f.body.block
    assert [b.name for b in root.alloc_buffers] == ["B"]
    assert list(_blocks(f)) == ["B", "C", "root"]


def test_missing_placeholder_is_an_error():
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: A[i] + 1.0, name="B")
    with pytest.raises(ValueError, match="placeholder 'A' is used but not in the argument"):
        te.create_prim_func([B])


def test_stencil_reads_are_merged():
    A = te.placeholder((10,), name="A")
    B = te.compute((8,), lambda i: A[i] + A[i + 1] + A[i + 2], name="B")
    text = te.create_prim_func([A, B]).script()
    assert "T.reads(A[v_i:v_i + 3])" in text


def test_sum_with_where_and_symbolic_shape():
    n = te.var("n")
    A = te.placeholder((n, n), name="A")
    k = te.reduce_axis((0, n), name="k")
    B = te.compute((n,), lambda i: te.sum(A[i, k], axis=k, where=k <= i), name="B")
    f = te.create_prim_func([A, B])
    assert tir.analysis.verify_well_formed(f)
    assert "if v_k <= v_i:" in f.script()


def test_elementwise_te_max_of_two_exprs():
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: te.max(A[i], tir.const(0.0, "float32")), name="relu")
    assert "T.max(A[v_i], T.float32(0.0))" in te.create_prim_func([A, B]).script()

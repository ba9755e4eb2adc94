"""TVMScript printing of PrimFuncs: golden text in the form TVM prints."""

from minitvm import te, tir


def _i64(v):
    return tir.const(v, "int64")


def test_elementwise_golden():
    A = te.placeholder((128,), name="A")
    B = te.placeholder((128,), name="B")
    C = te.compute((128,), lambda i: A[i] + B[i], name="C")
    assert te.create_prim_func([A, B, C]).script() == '''\
# from tvm.script import tir as T

@T.prim_func
def main(A: T.Buffer((128,), "float32"), B: T.Buffer((128,), "float32"), C: T.Buffer((128,), "float32")):
    T.func_attr({"tir.noalias": T.bool(True)})
    # with T.block("root"):
    for i in range(128):
        with T.block("C"):
            v_i = T.axis.spatial(128, i)
            T.reads(A[v_i], B[v_i])
            T.writes(C[v_i])
            C[v_i] = A[v_i] + B[v_i]'''


def test_fused_matmul_add_relu_golden():
    n = te.var("n", "int64")
    x = te.placeholder((n, _i64(784)), name="x")
    w = te.placeholder((_i64(784), _i64(128)), name="permute_dims")
    b = te.placeholder((_i64(128),), name="fc1_bias")
    k = te.reduce_axis((_i64(0), _i64(784)), name="k")
    mm = te.compute((n, _i64(128)), lambda i0, i1: te.sum(x[i0, k] * w[k, i1], axis=k),
                    name="matmul_intermediate")
    add = te.compute((n, _i64(128)), lambda ax0, ax1: mm[ax0, ax1] + b[ax1],
                     name="T_add_intermediate")
    relu = te.compute((n, _i64(128)), lambda i0, i1: te.max(add[i0, i1], tir.const(0.0)),
                      name="compute_intermediate")
    text = te.create_prim_func([x, w, b, relu]).script()
    assert text == '''\
# from tvm.script import tir as T

@T.prim_func
def main(var_x: T.handle, permute_dims: T.Buffer((T.int64(784), T.int64(128)), "float32"), fc1_bias: T.Buffer((T.int64(128),), "float32"), var_compute_intermediate: T.handle):
    T.func_attr({"tir.noalias": T.bool(True)})
    n = T.int64()
    x = T.match_buffer(var_x, (n, T.int64(784)))
    compute_intermediate = T.match_buffer(var_compute_intermediate, (n, T.int64(128)))
    # with T.block("root"):
    matmul_intermediate = T.alloc_buffer((n, T.int64(128)))
    T_add_intermediate = T.alloc_buffer((n, T.int64(128)))
    for i0, i1, k in T.grid(n, T.int64(128), T.int64(784)):
        with T.block("matmul_intermediate"):
            v_i0, v_i1, v_k = T.axis.remap("SSR", [i0, i1, k])
            T.reads(x[v_i0, v_k], permute_dims[v_k, v_i1])
            T.writes(matmul_intermediate[v_i0, v_i1])
            with T.init():
                matmul_intermediate[v_i0, v_i1] = T.float32(0.0)
            matmul_intermediate[v_i0, v_i1] = matmul_intermediate[v_i0, v_i1] + x[v_i0, v_k] * permute_dims[v_k, v_i1]
    for ax0, ax1 in T.grid(n, T.int64(128)):
        with T.block("T_add_intermediate"):
            v_ax0, v_ax1 = T.axis.remap("SS", [ax0, ax1])
            T.reads(matmul_intermediate[v_ax0, v_ax1], fc1_bias[v_ax1])
            T.writes(T_add_intermediate[v_ax0, v_ax1])
            T_add_intermediate[v_ax0, v_ax1] = matmul_intermediate[v_ax0, v_ax1] + fc1_bias[v_ax1]
    for i0, i1 in T.grid(n, T.int64(128)):
        with T.block("compute_intermediate"):
            v_i0, v_i1 = T.axis.remap("SS", [i0, i1])
            T.reads(T_add_intermediate[v_i0, v_i1])
            T.writes(compute_intermediate[v_i0, v_i1])
            compute_intermediate[v_i0, v_i1] = T.max(T_add_intermediate[v_i0, v_i1], T.float32(0.0))'''


def test_loop_kinds_and_statements():
    A = tir.decl_buffer((64,), "float32", "A")
    i, j = tir.Var("i", "int32"), tir.Var("j", "int32")
    x = tir.Var("x", "float32")
    body = tir.SeqStmt([
        tir.For(i, 0, 4, tir.ForKind.PARALLEL, tir.For(
            j, 0, 16, tir.ForKind.VECTORIZED, tir.BufferStore(A, A[i * 16 + j] * 2.0,
                                                              [i * 16 + j]))),
        tir.For(i, 2, 6, tir.ForKind.UNROLLED, tir.LetStmt(x, A[i], tir.IfThenElse(
            x > 0.5, tir.BufferStore(A, x, [i]), tir.BufferStore(A, tir.exp(-x), [i])))),
        tir.Evaluate(0),
    ])
    f = tir.PrimFunc([A], body, attrs={"global_symbol": "k"})
    assert f.script() == '''\
# from tvm.script import tir as T

@T.prim_func
def k(A: T.Buffer((64,), "float32")):
    for i in T.parallel(4):
        for j in T.vectorized(16):
            A[i * 16 + j] = A[i * 16 + j] * T.float32(2.0)
    for i in T.unroll(2, 8):
        x: T.float32 = A[i]
        if x > T.float32(0.5):
            A[i] = x
        else:
            A[i] = T.exp(x * T.float32(-1.0))
    T.evaluate(0)'''


def test_func_attrs_sorted_and_name():
    A = tir.decl_buffer((4,), "int32", "A")
    f = tir.PrimFunc([A], tir.BufferStore(A, 1, [0]))
    f = f.with_attr("op_pattern", 2).with_attr("tir.noalias", True)
    text = f.script()
    assert 'T.func_attr({"op_pattern": 2, "tir.noalias": T.bool(True)})' in text
    assert "def main(A: T.Buffer((4,), \"int32\")):" in text
    assert f.with_attr("global_symbol", "foo").script().count("def foo(") == 1


def test_expression_printing():
    a, b, c = (tir.Var(n, "int32") for n in "abc")
    assert str(tir.expr_to_str(a - (b + c))) == "a - (b + c)" if hasattr(tir, "expr_to_str") \
        else True
    from minitvm.tir.printer import expr_to_str

    assert expr_to_str(a - (b + c)) == "a - (b + c)"
    assert expr_to_str((a + b) * c) == "(a + b) * c"
    assert expr_to_str(a + b * c) == "a + b * c"
    assert expr_to_str(a // 4 % 3) == "a // 4 % 3"
    assert expr_to_str(tir.Cast("int64", a)) == 'T.Cast("int64", a)'
    assert expr_to_str(tir.const(3, "int64")) == "T.int64(3)"
    assert expr_to_str(tir.const(1e-5, "float32")) == "T.float32(1.0000000000000001e-05)"
    assert expr_to_str(tir.Select(a < b, a, b)) == "T.Select(a < b, a, b)"
    assert expr_to_str(tir.if_then_else(a < 1, 1.0, 2.0)) == \
        "T.if_then_else(a < 1, T.float32(1.0), T.float32(2.0))"
    assert expr_to_str(tir.And(a < b, b < c)) == "a < b and b < c"
    assert expr_to_str(tir.min_value("float32")) == "T.float32(-3.4028234663852886e+38)"


def test_name_collisions_get_suffixes():
    A = tir.decl_buffer((4, 4), "float32", "A")
    i1, i2 = tir.Var("i", "int32"), tir.Var("i", "int32")
    body = tir.For(i1, 0, 4, 0, tir.For(i2, 0, 4, tir.ForKind.PARALLEL,
                                        tir.BufferStore(A, 0.0, [i1, i2])))
    text = tir.PrimFunc([A], body).script()
    assert "for i in range(4):" in text and "for i_1 in T.parallel(4):" in text
    assert "A[i, i_1] = T.float32(0.0)" in text

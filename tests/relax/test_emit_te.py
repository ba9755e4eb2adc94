"""relax.BlockBuilder.call_te / emit_te: TE computations turned into PrimFuncs + call_tir."""

import pytest

import minitvm as tvm
from minitvm import relax, te, tir
from minitvm.script import from_source


def _t(*shape, dtype="float32"):
    return relax.TensorStructInfo(list(shape), dtype)


def add(A, B):
    return te.compute(A.shape, lambda i, j: A[i, j] + B[i, j], name="T_add")


def multiply(A, B):
    return te.compute(A.shape, lambda i, j: A[i, j] * B[i, j], name="T_multiply")


def _prim_funcs(mod):
    return {gv.name_hint: f for gv, f in mod.functions.items()
            if isinstance(f, tir.PrimFunc)}


def _roundtrip(mod):
    text = mod.script()
    parsed = from_source(text)
    tvm.ir.assert_structural_equal(parsed, mod)
    return text


def test_emit_te_static_shapes():
    x = relax.Var("x", _t(10, 20))
    y = relax.Var("y", _t(10, 20))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, y]):
        call = bb.call_te(add, x, y)
        assert isinstance(call, relax.Call)
        lv = bb.emit(call)
        bb.emit_func_output(lv)
    mod = bb.get()
    pf = _prim_funcs(mod)
    assert list(pf) == ["add"]
    f = pf["add"]
    assert len(f.params) == 3
    assert dict(f.attrs.items()) == {"tir.noalias": True}
    assert call.op.name == "relax.call_tir"
    assert call.args[0].name_hint == "add"
    assert list(call.args[1].fields) == [x, y]
    assert call.sinfo_args[0].dtype == "float32"
    assert lv.struct_info.ndim == 2
    text = mod.script()
    assert "@T.prim_func(private=True)" in text
    assert "def add(" in text
    assert "R.call_tir(cls.add, (x, y), out_sinfo=R.Tensor((10, 20), dtype=\"float32\"))" in text
    _roundtrip(mod)


def test_emit_te_buffer_dims_are_int64():
    x = relax.Var("x", _t(4, 8))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        bb.emit_func_output(bb.emit_te(add, x, x))
    f = _prim_funcs(bb.get())["add"]
    for buf in f.buffer_map.values():
        assert [d.dtype for d in buf.shape] == ["int64", "int64"]
        assert [d.value for d in buf.shape] == [4, 8]


def test_emit_te_symbolic_shapes():
    n = tir.Var("n", "int64")
    x = relax.Var("x", _t(n, 20))
    y = relax.Var("y", _t(n, 20))
    seen = {}

    def add_spy(A, B):
        seen["dim"] = A.shape[0]
        return add(A, B)

    bb = relax.BlockBuilder()
    with bb.function("main", [x, y]):
        lv = bb.emit_te(add_spy, x, y, primfunc_name_hint="add")
        bb.emit_func_output(lv)
    assert seen["dim"] is n  # placeholders use the struct info's own tir.Var
    mod = bb.get()
    text = mod.script()
    assert "T.match_buffer" in text
    assert "n = T.int64()" in text
    assert 'R.call_tir(cls.add, (x, y), out_sinfo=R.Tensor((n, 20), dtype="float32"))' in text
    assert tvm.ir.structural_equal(lv.struct_info, _t(n, 20))
    _roundtrip(mod)


def test_name_dedup_and_reuse():
    x = relax.Var("x", _t(10, 20))
    y = relax.Var("y", _t(10, 20))
    z = relax.Var("z", _t(5, 5))
    bb = relax.BlockBuilder()
    with bb.function("main", [x, y, z]):
        a = bb.emit_te(add, x, y)
        b = bb.emit_te(add, a, y)           # identical PrimFunc: reused
        c = bb.emit_te(add, z, z)           # other shapes: a new PrimFunc "add1"
        d = bb.emit_te(multiply, x, y)
        bb.emit_func_output((b, c, d))
    mod = bb.get()
    assert sorted(_prim_funcs(mod)) == ["add", "add1", "multiply"]
    main = mod["main"]
    calls = [bd.value for blk in main.body.blocks for bd in blk.bindings]
    assert [c.args[0].name_hint for c in calls] == ["add", "add", "add1", "multiply"]
    text = _roundtrip(mod)
    assert "R.call_tir(cls.add1, (z, z)" in text


def test_primfunc_name_hint_and_lambda():
    x = relax.Var("x", _t(3))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        a = bb.emit_te(lambda A: te.compute(A.shape, lambda i: A[i] * 2.0, name="T_mul"), x,
                       primfunc_name_hint="double")
        bb.emit_func_output(a)
    assert list(_prim_funcs(bb.get())) == ["double"]


def test_non_expr_args_pass_through_and_nested_lists():
    x = relax.Var("x", _t(4, 4))
    y = relax.Var("y", _t(4, 4))
    got = {}

    def scaled_sum(tensors, scale, name="T_sum"):
        got["args"] = (type(tensors), len(tensors), scale, name)
        A, B = tensors
        return te.compute(A.shape, lambda i, j: (A[i, j] + B[i, j]) * scale, name=name)

    bb = relax.BlockBuilder()
    with bb.function("main", [x, y]):
        lv = bb.emit_te(scaled_sum, [x, y], 0.5, name="T_s")
        bb.emit_func_output(lv)
    assert got["args"] == (list, 2, 0.5, "T_s")
    call = bb.get()["main"].body.blocks[0].bindings[0].value
    assert list(call.args[1].fields) == [x, y]
    _roundtrip(bb.get())


def test_shape_expr_argument_becomes_prim_exprs():
    x = relax.Var("x", _t(2, 6))
    got = {}

    def reshape(A, shape):
        got["shape"] = shape
        return te.compute(shape, lambda i, j: A[(i * 3 + j) // 6, (i * 3 + j) % 6],
                          name="T_reshape")

    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        lv = bb.emit_te(reshape, x, relax.ShapeExpr([4, 3]))
        bb.emit_func_output(lv)
    assert [int(d.value) for d in got["shape"]] == [4, 3]
    assert tvm.ir.structural_equal(lv.struct_info, _t(4, 3))
    _roundtrip(bb.get())


def test_multiple_outputs():
    x = relax.Var("x", _t(4, 4))

    def two(A):
        return [te.compute(A.shape, lambda i, j: A[i, j] + 1.0, name="T_p"),
                te.compute(A.shape, lambda i, j: A[i, j] - 1.0, name="T_m")]

    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        lv = bb.emit_te(two, x)
        bb.emit_func_output(lv)
    assert isinstance(lv.struct_info, relax.TupleStructInfo)
    assert len(lv.struct_info.fields) == 2
    assert len(_prim_funcs(bb.get())["two"].params) == 3
    assert "out_sinfo=[R.Tensor((4, 4), dtype=\"float32\"), R.Tensor((4, 4)" in _roundtrip(bb.get())


def test_output_only_symbolic_var_becomes_tir_vars():
    n = tir.Var("n", "int64")
    m = tir.Var("m", "int64")
    x = relax.Var("x", _t(n))
    y = relax.Var("y", _t(m))

    def tile(A, k):
        return te.compute((k,), lambda i: A[i % A.shape[0]], name="T_tile")

    bb = relax.BlockBuilder()
    with bb.function("main", [x, y]):
        lv = bb.emit_te(tile, x, m)
        bb.emit_func_output(lv)
    mod = bb.get()
    call = mod["main"].body.blocks[0].bindings[0].value
    assert len(call.args) == 3
    assert isinstance(call.args[2], relax.ShapeExpr)
    assert call.args[2].values[0] is m
    f = _prim_funcs(mod)["tile"]
    assert len(f.params) == 3  # A, T_tile, m
    assert f.params[2].dtype == "int64"
    text = _roundtrip(mod)
    assert "tir_vars=R.shape([m])" in text
    assert "m: T.int64" in text


def test_primfunc_shares_no_var_with_relax_function():
    n = tir.Var("n", "int64")
    x = relax.Var("x", _t(n, 3))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        bb.emit_func_output(bb.emit_te(add, x, x))
    f = _prim_funcs(bb.get())["add"]
    for buf in f.buffer_map.values():
        assert buf.shape[0] is not n and buf.shape[0].name == "n"


def test_primfunc_attrs():
    x = relax.Var("x", _t(3, 3))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        bb.emit_func_output(bb.emit_te(add, x, x, primfunc_attrs={"op_pattern": 0}))
    attrs = dict(_prim_funcs(bb.get())["add"].attrs.items())
    assert attrs["tir.noalias"] is True and attrs["op_pattern"] == 0


def test_argument_without_tensor_struct_info_is_an_error():
    x = relax.Var("x", _t(4))
    t = relax.Var("t", relax.TupleStructInfo([_t(4), _t(4)]))
    s = relax.Var("s", relax.ObjectStructInfo())
    bb = relax.BlockBuilder()
    with pytest.raises(TypeError, match="TensorStructInfo"):
        with bb.function("main", [x, s]):
            bb.emit_te(add, x, s)
    bb = relax.BlockBuilder()
    with pytest.raises(TypeError, match="TensorStructInfo"):
        with bb.function("main", [x, t]):
            bb.emit_te(add, x, t)


def test_tensor_without_known_shape_is_an_error():
    x = relax.Var("x", relax.TensorStructInfo(ndim=2, dtype="float32"))
    bb = relax.BlockBuilder()
    with pytest.raises(ValueError, match="known shape"):
        with bb.function("main", [x]):
            bb.emit_te(add, x, x)


def test_emit_te_outside_function_is_an_error():
    x = relax.Var("x", _t(4, 4))
    with pytest.raises(ValueError):
        relax.BlockBuilder().emit_te(add, x, x)


def test_te_function_must_return_tensors():
    x = relax.Var("x", _t(4))
    bb = relax.BlockBuilder()
    with pytest.raises(TypeError, match="te.Tensor"):
        with bb.function("main", [x]):
            bb.emit_te(lambda A: 3, x)

"""relax.transform.BindParams and BindSymbolicVars."""

import numpy as np
import pytest
from relax_pass_util import T, assert_equal, run

from minitvm import relax, tir
from minitvm.relax import op as R
from minitvm.relax import transform as rt
from minitvm.runtime.ndarray import NDArray


def _build(params, fn, name="main", private=False, mod=None):
    bb = relax.BlockBuilder(mod)
    with bb.function(name, params, private=private):
        bb.emit_func_output(fn(bb))
    return bb.get()


# ------------------------------------------------------------------------------ BindParams
def _matmul_module():
    n = tir.Var("n", "int64")
    x = relax.Var("x", T(n, 4))
    w = relax.Var("w", T(4, 3))

    def body(bb):
        with bb.dataflow():
            lv = bb.emit(R.matmul(x, w))
            gv = bb.emit_output(R.exp(lv))
        return gv

    return _build([x, w], body), n


def test_bind_by_name_removes_the_parameter():
    mod, _ = _matmul_module()
    wv = np.random.rand(4, 3).astype("float32")
    after = rt.BindParams("main", {"w": wv})(mod)
    func = after["main"]
    assert [p.name_hint for p in func.params] == ["x"]
    matmul = func.body.blocks[0].bindings[0].value
    assert isinstance(matmul.args[1], relax.Constant)
    xv = np.random.rand(5, 4).astype("float32")
    np.testing.assert_allclose(run(after, "main", xv), run(mod, "main", xv, wv), rtol=1e-5)


def test_bind_infers_symbolic_variables():
    mod, n = _matmul_module()
    xv = np.random.rand(5, 4).astype("float32")
    after = rt.BindParams("main", {mod["main"].params[0]: NDArray(xv)})(mod)
    func = after["main"]
    assert [p.name_hint for p in func.params] == ["w"]
    assert [int(d.value) for d in func.ret_struct_info.dims()] == [5, 3]
    w2 = relax.Var("w", T(4, 3))
    const = relax.const(xv)

    def expected(bb):
        with bb.dataflow():
            lv = bb.emit(R.matmul(const, w2))
            gv = bb.emit_output(R.exp(lv))
        return gv

    assert_equal(after, _build([w2], expected))


def test_bind_params_errors_and_lookup_by_global_symbol():
    mod, _ = _matmul_module()
    with pytest.raises(ValueError, match="does not have parameter with name"):
        rt.BindParams("main", {"nope": np.zeros((1,), "float32")})(mod)
    with pytest.raises(TypeError, match="param values are expected"):
        rt.BindParams("main", {"w": [1, 2, 3]})
    other = relax.Var("other", T(4, 3))
    with pytest.raises(ValueError, match="as a parameter"):
        rt.BindParams("main", {other: np.zeros((4, 3), "float32")})(mod)
    # a function whose global symbol differs from its GlobalVar name is found by the symbol
    mod["main"] = mod["main"].with_attr("global_symbol", "entry")
    unchanged = rt.BindParams("main", {"w": np.zeros((4, 3), "float32")})(mod)
    assert len(unchanged["main"].params) == 2
    bound = rt.BindParams("entry", {"w": np.zeros((4, 3), "float32")})(mod)
    assert len(bound["main"].params) == 1


# ------------------------------------------------------------------------ BindSymbolicVars
def _symbolic_module():
    m, n = tir.Var("m", "int64"), tir.Var("n", "int64")
    x = relax.Var("x", T(m, n))

    def body(bb):
        with bb.dataflow():
            lv = bb.emit(R.exp(x))
            s = bb.emit(relax.ShapeExpr([m * 2, n]))
            gv = bb.emit_output(relax.Tuple([lv, s]))
        return gv

    return _build([x], body), m, n


def test_bind_symbolic_vars_by_name_and_var():
    mod, m, n = _symbolic_module()
    after = rt.BindSymbolicVars({"m": 4, n: tir.IntImm("int64", 3)})(mod)
    x2 = relax.Var("x", T(4, 3))

    def expected(bb):
        with bb.dataflow():
            lv = bb.emit(R.exp(x2))
            s = bb.emit(relax.ShapeExpr([8, 3]))
            gv = bb.emit_output(relax.Tuple([lv, s]))
        return gv

    assert_equal(after, _build([x2], expected))


def test_bind_symbolic_vars_partial_and_func_name():
    mod, m, n = _symbolic_module()
    after = rt.BindSymbolicVars({"n": 3}, func_name="main")(mod)
    dims = after["main"].params[0].struct_info.dims()
    assert dims[0] is m and int(dims[1].value) == 3


def test_bind_symbolic_vars_errors():
    mod, m, n = _symbolic_module()
    with pytest.raises(ValueError, match="did not correspond to any symbolic variables"):
        rt.BindSymbolicVars({"k": 3})(mod)
    with pytest.raises(ValueError, match="does not use symbolic var with name"):
        rt.BindSymbolicVars({"k": 3}, "main")(mod)
    other = tir.Var("m", "int64")
    with pytest.raises(ValueError, match="as a symbolic variable"):
        rt.BindSymbolicVars({other: 3}, "main")(mod)
    # two variables of one name
    a, b = tir.Var("n", "int64"), tir.Var("n", "int64")
    x, y = relax.Var("x", T(a)), relax.Var("y", T(b))
    dup = _build([x, y], lambda bb: relax.Tuple([x, y]))
    with pytest.raises(ValueError, match="multiple symbolic variables with name"):
        rt.BindSymbolicVars({"n": 2})(dup)

"""well_formed across a module's functions: calls of module functions against the callee's
FuncStructInfo (argument count, provably incompatible arguments), GlobalVars naming no function,
and Relax variables shared by two functions."""

import logging

import pytest

import minitvm as tvm
from minitvm import relax, tir
from minitvm.ir import GlobalVar
from minitvm.relax.analysis import well_formed
from minitvm.relax.analysis.well_formed import check_well_formed


def T(*shape, dtype="float32"):
    return relax.TensorStructInfo(list(shape), dtype)


def _module(callee_params, call_args_of):
    """``callee(params) = params[0]`` and ``main(x, y) = callee(*call_args_of(x, y))``."""
    bb = relax.BlockBuilder()
    ps = [relax.Var(f"p{k}", s) for k, s in enumerate(callee_params)]
    with bb.function("callee", ps):
        bb.emit_func_output(ps[0])
    gv = bb.get().get_global_var("callee")
    x, y = relax.Var("x", T(2, 3)), relax.Var("y", T(4))
    with bb.function("main", [x, y]):
        out = bb.emit(relax.Call(gv, call_args_of(x, y)))
        bb.emit_func_output(out)
    return bb.get()


def test_good_call_of_a_module_function():
    n = tir.Var("n", "int64")
    mod = _module([T(n, 3), T(4)], lambda x, y: [x, y])
    assert check_well_formed(mod) is None and well_formed(mod)


def test_call_with_the_wrong_number_of_arguments(caplog):
    mod = _module([T(2, 3)], lambda x, y: [x])
    main = mod["main"]
    gv = mod.get_global_var("callee")
    call = main.body.blocks[0].bindings[0].value
    bad_call = relax.Call(gv, [call.args[0], main.params[1]])
    bad_call._checked_type = call._checked_type
    b = main.body.blocks[0].bindings[0]
    body = relax.SeqExpr([relax.BindingBlock([relax.VarBinding(b.var, bad_call)])],
                         main.body.body)
    mod2 = tvm.IRModule({gv: mod["callee"], mod.get_global_var("main"):
                         relax.Function(main.params, body, main.ret_struct_info)})
    with caplog.at_level(logging.WARNING):
        assert not well_formed(mod2)
    assert "call to @callee passes 2 argument(s), but the function takes 1" in caplog.text


def test_call_with_a_provably_incompatible_argument():
    mod = _module([T(2, 3), T(4)], lambda x, y: [x, y])
    main = mod["main"]
    gv = mod.get_global_var("callee")
    b = main.body.blocks[0].bindings[0]
    swapped = relax.Call(gv, [main.params[1], main.params[0]])
    swapped._checked_type = b.value._checked_type
    body = relax.SeqExpr([relax.BindingBlock([relax.VarBinding(b.var, swapped)])],
                         main.body.body)
    mod2 = tvm.IRModule({gv: mod["callee"], mod.get_global_var("main"):
                         relax.Function(main.params, body, main.ret_struct_info)})
    why = check_well_formed(mod2)
    assert why is not None
    assert why.startswith("in @main: argument 0 of the call to @callee is "
                          'R.Tensor((4,), dtype="float32")'), why


def test_unknown_global_var_is_reported():
    mod = _module([T(2, 3), T(4)], lambda x, y: [x, y])
    ghost = GlobalVar("ghost")
    main = mod["main"]
    b = main.body.blocks[0].bindings[0]
    call = relax.Call(ghost, list(main.params))
    call._checked_type = b.value._checked_type
    body = relax.SeqExpr([relax.BindingBlock([relax.VarBinding(b.var, call)])], main.body.body)
    mod2 = tvm.IRModule({mod.get_global_var("main"):
                         relax.Function(main.params, body, main.ret_struct_info)})
    assert "GlobalVar @ghost does not refer to a function of the module" in \
        check_well_formed(mod2)


def test_variable_shared_by_two_functions():
    x = relax.Var("x", T(2))
    f = relax.Function([x], relax.SeqExpr([], x), T(2))
    g = relax.Function([x], relax.SeqExpr([], x), T(2))
    mod = tvm.IRModule({GlobalVar("f"): f, GlobalVar("g"): g})
    why = check_well_formed(mod)
    assert why == "in @g: variable %x is also defined in function @f (a Relax variable " \
                  "belongs to one function)"
    assert check_well_formed(f) is None  # each function alone is fine


@pytest.mark.parametrize("n_funcs", [200])
def test_many_functions_calling_each_other(n_funcs):
    bb = relax.BlockBuilder()
    prev = None
    for k in range(n_funcs):
        x = relax.Var("x", T(2))
        with bb.function(f"f{k}", [x]):
            out = bb.emit(relax.Call(prev, [x])) if prev is not None else x
            bb.emit_func_output(out)
        prev = bb.get().get_global_var(f"f{k}")
    assert well_formed(bb.get())

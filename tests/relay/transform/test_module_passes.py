"""RemoveUnusedFunctions, Inline (InlineGlobals), EtaExpand and LambdaLift."""

import numpy as np
import pytest
from pass_test_util import check_numerics, run_pass

import minitvm as tvm
from minitvm import relay


def _fn(name_shape=(), body=lambda x: relay.exp(x)):
    x = relay.var("x", shape=name_shape)
    return relay.Function([x], body(x))


def test_pass_infos():
    infos = {
        relay.transform.RemoveUnusedFunctions(): ("RemoveUnusedFunctions", 1),
        relay.transform.Inline(): ("InlineGlobals", 1),
        relay.transform.EtaExpand(expand_constructor=True): ("EtaExpand", 1),
        relay.transform.LambdaLift(): ("LambdaLift", 1),
    }
    for p, (name, level) in infos.items():
        assert (p.info.name, p.info.opt_level, list(p.info.required)) == (name, level, [])


# ------------------------------------------------------------------ RemoveUnusedFunctions
def _module_with_helpers():
    mod = tvm.IRModule()
    mod["used"] = _fn()
    mod["unused"] = _fn(body=relay.negative)
    mod["by_value"] = _fn(body=relay.abs)
    used, by_value = mod.get_global_var("used"), mod.get_global_var("by_value")
    y = relay.var("y", shape=())
    mod["main"] = relay.Function([y], relay.Tuple([relay.Call(used, [y]), by_value]))
    return mod


def test_remove_unused_functions():
    mod = _module_with_helpers()
    out = run_pass(relay.transform.RemoveUnusedFunctions(), mod)
    assert sorted(g.name_hint for g in out.functions) == ["by_value", "main", "used"]
    out = relay.transform.RemoveUnusedFunctions(["unused"])(mod)
    assert [g.name_hint for g in out.functions] == ["unused"]


def test_remove_unused_functions_missing_entry():
    with pytest.raises(ValueError, match="entry function 'nope'"):
        relay.transform.RemoveUnusedFunctions(["nope"])(_module_with_helpers())


# ------------------------------------------------------------------ Inline
def test_inline_marked_function_into_caller():
    mod = tvm.IRModule()
    mod["g"] = _fn((2,), lambda x: relay.add(x, relay.exp(x))).with_attr("Inline", 1)
    g = mod.get_global_var("g")
    y = relay.var("y", shape=(2,))
    mod["main"] = relay.Function([y], relay.multiply(relay.Call(g, [y]), y))
    out = run_pass(relay.transform.Inline(), mod)
    assert [gv.name_hint for gv in out.functions] == ["main"]
    y2 = relay.var("y", shape=(2,))
    expected = relay.Function([y2], relay.multiply(relay.add(y2, relay.exp(y2)), y2))
    tvm.ir.assert_structural_equal(out["main"], expected)
    check_numerics(mod, out)


def test_inline_call_chain_and_unmarked_kept():
    mod = tvm.IRModule()
    mod["leaf"] = _fn(body=relay.exp).with_attr("Inline", 1)
    leaf = mod.get_global_var("leaf")
    mod["mid"] = _fn(body=lambda x: relay.Call(leaf, [relay.negative(x)])).with_attr("Inline", 1)
    mod["keep"] = _fn(body=relay.abs)
    mid, keep = mod.get_global_var("mid"), mod.get_global_var("keep")
    y = relay.var("y", shape=())
    mod["main"] = relay.Function([y], relay.add(relay.Call(mid, [y]), relay.Call(keep, [y])))
    out = relay.transform.Inline()(mod)
    assert sorted(g.name_hint for g in out.functions) == ["keep", "main"]
    y2 = relay.var("y", shape=())
    expected = relay.Function(
        [y2], relay.add(relay.exp(relay.negative(y2)), relay.Call(out.get_global_var("keep"),
                                                                  [y2])))
    tvm.ir.assert_structural_equal(out["main"], expected)
    check_numerics(mod, out)


def test_inline_skips_recursive_and_keeps_compiler_function_as_local_call():
    mod = tvm.IRModule()
    ext = _fn(body=relay.exp).with_attr("Inline", 1).with_attr("Compiler", "ccompiler")
    mod["ext"] = ext
    y = relay.var("y", shape=())
    mod["main"] = relay.Function([y], relay.Call(mod.get_global_var("ext"), [y]))
    out = relay.transform.Inline()(mod)
    call = out["main"].body
    assert isinstance(call.op, relay.Function) and call.op.get_attr("Compiler") == "ccompiler"


# ------------------------------------------------------------------ EtaExpand
def test_eta_expand_global_var():
    mod = tvm.IRModule()
    mod["aux"] = _fn()
    aux = mod.get_global_var("aux")
    mod["main"] = relay.Function([], aux)
    out = run_pass(relay.transform.EtaExpand(expand_global_var=True), mod)
    p = relay.var("eta_expand_param", shape=())
    tvm.ir.assert_structural_equal(out["main"],
                                   relay.Function([], relay.Function([p], relay.Call(aux, [p]))))
    # applying the expanded value gives the same result as calling @aux
    out2 = out.shallow_copy()
    w = relay.var("w", shape=())
    out2["run"] = relay.Function([w], relay.Call(out["main"].body, [w]))
    ref = tvm.IRModule({relay.GlobalVar("run"): relay.Function([w], relay.exp(w))})
    check_numerics(ref, out2, entry="run")


def test_eta_expand_constructor():
    mod = tvm.IRModule()
    box = relay.GlobalTypeVar("Box")
    a = relay.TypeVar("a")
    con = relay.Constructor("MkBox", [a], box)
    mod[box] = relay.TypeData(box, [a], [con])
    mod["main"] = relay.Function([], con)
    out = relay.transform.EtaExpand(expand_constructor=True)(mod)
    fn = out["main"].body
    assert isinstance(fn, relay.Function) and len(fn.params) == 1 and len(fn.type_params) == 1
    assert fn.params[0].type_annotation is fn.type_params[0]
    assert isinstance(fn.body, relay.Call) and fn.body.op is con


def test_eta_expand_needs_a_feature():
    mod = tvm.IRModule.from_expr(_fn())
    with pytest.raises(ValueError, match="at least one language feature"):
        relay.transform.EtaExpand()(mod)


# ------------------------------------------------------------------ LambdaLift
def test_lambda_lift_closed_and_capturing_functions():
    x = relay.var("x", shape=(2,))
    z = relay.var("z", shape=(2,))
    closed = relay.Function([z], relay.exp(z))
    capturing = relay.Function([z], relay.add(z, x))
    main = relay.Function([x], relay.add(relay.Call(closed, [x]), relay.Call(capturing, [x])))
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(main))
    out = run_pass(relay.transform.LambdaLift(), mod)
    lifted = sorted(g.name_hint for g in out.functions if g.name_hint != "main")
    assert len(lifted) == 2 and all(n.startswith("lifted_name") for n in lifted)
    closures = [f for g, f in out.functions.items() if f.get_attr("Closure") == 1]
    assert len(closures) == 1 and isinstance(closures[0].body, relay.Function)
    body = out["main"].body
    assert isinstance(body.args[0].op, relay.GlobalVar)
    assert isinstance(body.args[1].op, relay.Call)  # @lifted(%x)(%x)
    check_numerics(mod, out)


def test_lambda_lift_recursive_let_and_primitive():
    n = relay.var("n", shape=(), dtype="int32")
    f = relay.Var("f")
    acc = relay.var("acc", shape=(), dtype="int32")
    rec = relay.Function([n], relay.If(relay.greater(n, relay.const(0)),
                                       relay.add(relay.Call(f, [relay.subtract(n, relay.const(1))]),
                                                 acc), relay.const(0)))
    p = relay.var("p", shape=(), dtype="int32")
    prim = relay.Function([p], relay.negative(p)).with_attr("Primitive", 1)
    main = relay.Function([acc], relay.Let(f, rec, relay.Call(prim, [relay.Call(f, [acc])])))
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(main))
    out = relay.transform.LambdaLift()(mod)
    assert len(out.functions) == 2
    lifted = next(f for g, f in out.functions.items() if g.name_hint != "main")
    assert lifted.get_attr("Closure") == 1
    check_numerics(mod, out, [np.array(3, "int32")])
    assert out["main"].body.body.op is mod["main"].body.body.op  # primitive: not lifted

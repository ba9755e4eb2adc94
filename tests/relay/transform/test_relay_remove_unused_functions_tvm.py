"""RemoveUnusedFunctions keeps TVM's functions: the cases of TVM v0.19's own test, restated.

Everything not reachable from the entry functions goes (the prelude's functions included); a
global function reached as a call, as a call argument or through an ``if`` stays.
"""

import minitvm as tvm
from minitvm import relay
from minitvm.relay.prelude import Prelude


def _names(mod):
    return {gv.name_hint for gv in mod.functions}


def _prelude_mod():
    mod = tvm.IRModule()
    return mod, Prelude(mod)


def _list_body(p):
    _, cons, nil = p.mod.get_type("List")
    hd, tl = p.mod.get_global_var("hd"), p.mod.get_global_var("tl")
    lst = nil()
    for i in [4, 3, 2, 1, 0]:
        lst = cons(relay.const(i), lst)
    return hd(tl(tl(lst)))


def test_remove_all_prelude_functions():
    mod, _ = _prelude_mod()
    x = relay.var("x", shape=(1, 16))
    mod["main"] = relay.Function([x], x)
    assert len(mod.functions) > 1
    out = relay.transform.RemoveUnusedFunctions()(mod)
    assert _names(out) == {"main"}
    assert "List" in {t.name_hint for t in out.type_definitions}  # type definitions stay


def test_referenced_function_is_kept():
    mod, _ = _prelude_mod()
    x = relay.var("x", shape=(1, 16))
    id_name = relay.GlobalVar("id_func")
    mod[id_name] = relay.Function([x], x)
    mod["main"] = relay.Function([x], id_name(x))
    assert _names(relay.transform.RemoveUnusedFunctions()(mod)) == {"id_func", "main"}


def test_keep_only_referenced_prelude_functions():
    mod, p = _prelude_mod()
    mod["main"] = relay.Function([], _list_body(p))
    out = relay.transform.RemoveUnusedFunctions()(mod)
    assert _names(out) == {"tl", "hd", "main"}
    assert int(relay.create_executor("debug", mod=out).evaluate()().numpy()) == 2


def test_multiple_entry_functions():
    mod, p = _prelude_mod()
    mod["main1"] = relay.Function([], _list_body(p))
    x = relay.var("x", shape=(1, 16))
    id_name = relay.GlobalVar("id_func")
    mod[id_name] = relay.Function([x], x)
    mod["main2"] = relay.Function([x], id_name(x))
    out = relay.transform.RemoveUnusedFunctions(["main1", "main2"])(mod)
    assert _names(out) == {"tl", "hd", "main2", "id_func", "main1"}


def _two_constants(mod):
    g1, g2 = relay.GlobalVar("g1"), relay.GlobalVar("g2")
    mod[g1] = relay.Function([], relay.const(1))
    mod[g2] = relay.Function([], relay.const(2))
    return g1, g2


def test_globalvar_as_call_arg_through_if():
    mod = tvm.IRModule({})
    g1, g2 = _two_constants(mod)
    p = relay.var("p", "bool")
    mod["main"] = relay.Function([p], relay.Call(relay.If(p, g1, g2), []))
    out = relay.transform.RemoveUnusedFunctions()(mod)
    assert _names(out) == {"g1", "g2", "main"}
    run = relay.create_executor("debug", mod=out).evaluate()
    assert int(run(True).numpy()) == 1 and int(run(False).numpy()) == 2


def test_call_globalvar_without_args():
    mod = tvm.IRModule({})
    g1, g2 = _two_constants(mod)
    p = relay.var("p", "bool")
    mod["main"] = relay.Function([p], relay.If(p, relay.Call(g1, []), relay.Call(g2, [])))
    assert _names(relay.transform.RemoveUnusedFunctions()(mod)) == {"g1", "g2", "main"}

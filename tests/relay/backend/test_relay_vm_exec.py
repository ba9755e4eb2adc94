"""The Relay VM runs what the graph executor cannot: control flow, recursion, ADTs, closures,
tuples — each result compared with the debug interpreter."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.relay.prelude import Prelude
from minitvm.runtime import vm as runtime_vm
from minitvm.runtime.container import ADT


def vm_run(mod, *args, name="main"):
    exe = relay.vm.compile(mod, target="llvm")
    return runtime_vm.VirtualMachine(exe, tvm.cpu()).invoke(name, *args)


def interp(mod, *args):
    return relay.create_executor("debug", mod=mod).evaluate()(*args)


def scalar(name, dtype="int32"):
    return relay.var(name, shape=(), dtype=dtype)


def test_straight_line_model_matches_interpreter():
    mod, params = relay.testing.mlp.get_workload(batch_size=2, num_classes=5, image_shape=(1, 4, 4))
    x = np.random.default_rng(0).standard_normal((2, 1, 4, 4)).astype("float32")
    exe = relay.vm.compile(mod, target="llvm", params=params)
    out = runtime_vm.VirtualMachine(exe, tvm.cpu()).run(x)
    ref = relay.create_executor("debug", mod=mod, params=params).evaluate()(x)
    np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-5, atol=1e-6)
    assert all(k.kind == "native" for k in exe.kernels)  # every fused function compiled


def test_if_else_takes_both_branches():
    x = relay.var("x", shape=(3,))
    body = relay.If(relay.sum(x) > relay.const(0.0), relay.exp(x) * relay.const(2.0),
                    relay.negative(x) - relay.const(1.0))
    mod = tvm.IRModule.from_expr(relay.Function([x], body))
    exe = relay.vm.compile(mod, target="llvm")
    vm = runtime_vm.VirtualMachine(exe, tvm.cpu())
    for v in ([1.0, 2.0, 3.0], [-1.0, -2.0, 0.5]):
        a = np.array(v, "float32")
        np.testing.assert_allclose(vm.run(a).numpy(), interp(mod, a).numpy(), rtol=1e-6)
    ops = [line.split("#")[1].split()[0] for line in exe.bytecode.splitlines()
           if line.startswith(" ") and "#" in line]
    assert {"if", "goto", "invoke_packed", "alloc_storage", "alloc_tensor", "ret"} <= set(ops)


def test_nested_if_inside_let_shares_values():
    x = scalar("x", "float32")
    y = relay.var("y")
    inner = relay.If(y > relay.const(10.0), y * relay.const(2.0), y)
    body = relay.Let(y, x * x, relay.If(x > relay.const(0.0), inner, y + relay.const(1.0)))
    mod = tvm.IRModule.from_expr(relay.Function([x], body))
    for v in (5.0, 2.0, -3.0):
        a = np.array(v, "float32")
        assert float(vm_run(mod, a).numpy()) == float(interp(mod, a).numpy())


def _sum_to_n():
    """@sum(n) = if n == 0 then 0 else n + @sum(n - 1)"""
    mod = tvm.IRModule()
    f = relay.GlobalVar("sum_to")
    n = scalar("n", "int64")
    body = relay.If(relay.equal(n, relay.const(0, "int64")), relay.const(0, "int64"),
                    n + relay.Call(f, [n - relay.const(1, "int64")]))
    mod[f] = relay.Function([n], body, relay.TensorType((), "int64"))
    m = scalar("m", "int64")
    mod["main"] = relay.Function([m], relay.Call(f, [m]))
    return mod


def test_recursion_through_a_global():
    mod = _sum_to_n()
    assert int(vm_run(mod, np.array(10, "int64")).numpy()) == 55
    exe = relay.vm.compile(mod, target="llvm")
    assert sorted(exe.globals) == ["main", "sum_to"]
    assert "invoke $" in exe.bytecode


def _list_mod():
    mod = tvm.IRModule()
    p = Prelude(mod)
    lst, cons, nil = p.mod.get_type("List")
    elem = relay.TensorType((), "float32")
    ltype = relay.TypeCall(lst, [elem])
    # @build(k) = [k, k-1, ..., 1] as floats
    build = relay.GlobalVar("build")
    k = scalar("k")
    mod[build] = relay.Function(
        [k], relay.If(relay.equal(k, relay.const(0)), nil(),
                      cons(k.astype("float32"), relay.Call(build, [k - relay.const(1)]))), ltype)
    # @total(l) = match l { Cons(h, t) => h + @total(t), Nil => 0 }
    total = relay.GlobalVar("total")
    lv, h, t = relay.var("l", ltype), relay.var("h"), relay.var("t")
    mod[total] = relay.Function([lv], relay.Match(lv, [
        relay.Clause(relay.PatternConstructor(cons, [relay.PatternVar(h), relay.PatternVar(t)]),
                     h + relay.Call(total, [t])),
        relay.Clause(relay.PatternConstructor(nil, []), relay.const(0.0))]), elem)
    return mod, p, build, total, cons, nil


def test_list_adt_sum_by_match():
    mod, _, build, total, _, _ = _list_mod()
    n = scalar("n")
    mod["main"] = relay.Function([n], relay.Call(total, [relay.Call(build, [n])]))
    assert float(vm_run(mod, np.array(6, "int32")).numpy()) == 21.0
    assert float(vm_run(mod, np.array(0, "int32")).numpy()) == 0.0
    exe = relay.vm.compile(mod, target="llvm")
    text = exe.bytecode
    assert "get_tag" in text and "get_field" in text and "alloc_data" in text and "fatal" in text


def test_prelude_map_with_a_closure_returns_a_list_value():
    mod, p, build, total, cons, nil = _list_mod()
    n, c = scalar("n"), scalar("c", "float32")
    x = relay.var("x", shape=(), dtype="float32")
    add_c = relay.Function([x], x * relay.const(2.0) + c)  # captures %c: a closure
    mapped = relay.Call(p.map, [add_c, relay.Call(build, [n])])
    mod["main"] = relay.Function([n, c], relay.Tuple([mapped, relay.Call(total, [mapped])]))
    out = vm_run(mod, np.array(3, "int32"), np.array(0.5, "float32"))
    assert isinstance(out, ADT) and len(out) == 2
    values, node = [], out[0]
    while node.tag == cons.tag:  # walk the returned list value
        values.append(float(node.fields[0].numpy()))
        node = node.fields[1]
    assert node.tag == nil.tag and not node.fields
    assert values == [6.5, 4.5, 2.5]
    assert float(out[1].numpy()) == 13.5


def test_closures_returned_and_called_later():
    x, y = scalar("x", "float32"), scalar("y", "float32")
    adder = relay.Function([y], x + y)  # captures %x
    f = relay.var("f")
    a = scalar("a", "float32")
    body = relay.Let(f, relay.Call(relay.Function([x], adder), [a * relay.const(3.0)]),
                     relay.Tuple([relay.Call(f, [relay.const(1.0)]),
                                  relay.Call(f, [relay.const(2.0)])]))
    mod = tvm.IRModule.from_expr(relay.Function([a], body))
    out = vm_run(mod, np.array(2.0, "float32"))
    assert [float(v.numpy()) for v in out] == [7.0, 8.0]
    ref = interp(mod, np.array(2.0, "float32"))
    assert [float(v.numpy()) for v in ref] == [7.0, 8.0]
    assert "alloc_closure" in relay.vm.compile(mod, "llvm").bytecode
    assert "invoke_closure" in relay.vm.compile(mod, "llvm").bytecode


def test_global_function_as_a_value():
    mod = tvm.IRModule()
    dbl = relay.GlobalVar("dbl")
    x = scalar("x", "float32")
    mod[dbl] = relay.Function([x], x * relay.const(2.0))
    g, v = relay.var("g"), scalar("v", "float32")
    apply_twice = relay.Function([g, v], relay.Call(g, [relay.Call(g, [v])]))
    w = scalar("w", "float32")
    mod["main"] = relay.Function([w], relay.Call(apply_twice, [dbl, w]))
    assert float(vm_run(mod, np.array(1.5, "float32")).numpy()) == 6.0


def test_tuples_in_and_out():
    t = relay.var("t", relay.TupleType([relay.TensorType((2, 2), "float32"),
                                        relay.TensorType((2,), "float32")]))
    a, b = relay.TupleGetItem(t, 0), relay.TupleGetItem(t, 1)
    s = relay.sum(a, axis=1)
    body = relay.Tuple([a + b, relay.Tuple([s, relay.split(s, 2).astuple()])])
    mod = tvm.IRModule.from_expr(relay.Function([t], body))
    av = np.arange(4, dtype="float32").reshape(2, 2)
    bv = np.array([10.0, 20.0], "float32")
    out = vm_run(mod, (av, bv))
    ref = interp(mod, (av, bv))
    np.testing.assert_array_equal(out[0].numpy(), ref[0].numpy())
    np.testing.assert_array_equal(out[1][0].numpy(), ref[1][0].numpy())
    np.testing.assert_array_equal(out[1][1][1].numpy(), ref[1][1][1].numpy())
    out2 = vm_run(mod, tvm.runtime.container.tuple_object([tvm.nd.array(av), tvm.nd.array(bv)]))
    np.testing.assert_array_equal(out2[0].numpy(), av + bv)


def test_references_are_refused_clearly():
    x = scalar("x", "float32")
    r = relay.var("r")
    body = relay.Let(r, relay.RefCreate(x), relay.RefRead(r))
    mod = tvm.IRModule.from_expr(relay.Function([x], body))
    with pytest.raises(ValueError, match="does not support references"):
        relay.vm.compile(mod, "llvm")


def test_let_bound_recursive_local_function_with_a_capture():
    m, k = scalar("m"), scalar("k")
    f = relay.var("f", relay.FuncType([relay.TensorType((), "int32")],
                                      relay.TensorType((), "int32")))
    n = scalar("n")
    # let f = fn (n) { if n == 0 { k } else { n + f(n - 1) } }  (captures %k, calls itself)
    inner = relay.Function([n], relay.If(relay.equal(n, relay.const(0)), k,
                                         n + relay.Call(f, [n - relay.const(1)])),
                           relay.TensorType((), "int32"))
    body = relay.Let(f, inner, relay.Call(f, [m]))
    mod = tvm.IRModule.from_expr(relay.Function([m, k], body))
    args = (np.array(5, "int32"), np.array(100, "int32"))
    assert int(vm_run(mod, *args).numpy()) == 115 == int(interp(mod, *args).numpy())


def test_prelude_foldl_and_tuple_patterns():
    mod, p, build, _, _, _ = _list_mod()
    n = scalar("n")
    acc, x = relay.var("acc", shape=(), dtype="float32"), relay.var("x", shape=(),
                                                                      dtype="float32")
    total = relay.Call(p.foldl, [relay.Function([acc, x], acc * relay.const(2.0) + x),
                                 relay.const(0.0), relay.Call(build, [n])])
    a, b = relay.var("a"), relay.var("b")
    swapped = relay.Match(relay.Tuple([total, n.astype("float32")]), [relay.Clause(
        relay.PatternTuple([relay.PatternVar(a), relay.PatternVar(b)]), relay.Tuple([b, a]))])
    mod["main"] = relay.Function([n], swapped)
    out = vm_run(mod, np.array(3, "int32"))
    ref = interp(mod, np.array(3, "int32"))
    assert float(out[0].numpy()) == 3.0
    assert float(out[1].numpy()) == float(ref[1].numpy()) == ((0 * 2 + 3) * 2 + 2) * 2 + 1

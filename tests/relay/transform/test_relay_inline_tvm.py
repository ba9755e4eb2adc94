"""Inline builds TVM's modules: the cases of TVM v0.19's own test of the pass, restated.

Global functions marked ``Inline=1`` are inlined at their call sites and dropped once no caller
is left; an inlined function for an external compiler stays a function, called in place; a
recursive function is never inlined.
"""

import numpy as np

import minitvm as tvm
from minitvm import relay

SHAPE = (3, 5)


def _inline(f):
    return f.with_attr("Inline", tvm.tir.IntImm("int32", 1))


def _extern(f, name="a"):
    return f.with_attr("Compiler", tvm.tir.StringImm(name))


def _v(name, shape=SHAPE, dtype="float32"):
    return relay.var(name, shape=shape, dtype=dtype)


def _identity(extern: bool):
    x11 = _v("x11")
    f = _inline(relay.Function([x11], x11))
    return _extern(f) if extern else f


def _add_fn():
    x1, y1 = _v("x1"), _v("y1")
    return x1, y1


def _sub_fn():
    x2, y2 = _v("x2"), _v("y2")
    return relay.Function([x2, y2], x2 - y2)


def _main(mod, g1, g2):
    p = [_v(f"p{i}") for i in range(4)]
    mod["main"] = relay.Function(p, g1(p[0], p[1]) * g2(p[2], p[3]))


def _chain_module(inline_g1: bool, extern_g11: bool = False):
    mod = tvm.IRModule({})
    g11 = relay.GlobalVar("g11")
    mod[g11] = _identity(extern_g11)
    x1, y1 = _add_fn()
    fn1 = relay.Function([x1, y1], x1 + y1 + g11(x1))
    g1 = relay.GlobalVar("g1")
    mod[g1] = _inline(fn1) if inline_g1 else fn1
    g2 = relay.GlobalVar("g2")
    mod[g2] = _sub_fn()
    _main(mod, g1, g2)
    return mod


def _run(mod, args):
    return relay.create_executor("debug", mod=mod).evaluate()(*args).numpy()


def _check(mod, expected):
    rng = np.random.default_rng(0)
    main = relay.transform.InferType()(mod)["main"]
    args = [rng.standard_normal([int(d) for d in p.checked_type.shape]).astype(
        p.checked_type.dtype) for p in main.params]
    ref = _run(mod, args)
    out = relay.transform.Inline()(mod)
    tvm.ir.assert_structural_equal(out, expected, map_free_vars=True)
    np.testing.assert_allclose(_run(out, args), ref, rtol=1e-6)


def test_call_chain_inline_leaf():
    mod = tvm.IRModule({})
    x1, y1 = _add_fn()
    g1 = relay.GlobalVar("g1")
    mod[g1] = relay.Function([x1, y1], x1 + y1 + x1)
    g2 = relay.GlobalVar("g2")
    mod[g2] = _sub_fn()
    _main(mod, g1, g2)
    _check(_chain_module(inline_g1=False), mod)


def test_call_chain_inline_multiple_levels():
    mod = tvm.IRModule({})
    g2 = relay.GlobalVar("g2")
    mod[g2] = _sub_fn()
    p = [_v(f"p{i}") for i in range(4)]
    mod["main"] = relay.Function(p, (p[0] + p[1] + p[0]) * g2(p[2], p[3]))
    _check(_chain_module(inline_g1=True), mod)


def test_call_chain_inline_multiple_levels_extern_compiler():
    mod = tvm.IRModule({})
    g2 = relay.GlobalVar("g2")
    mod[g2] = _sub_fn()
    p = [_v(f"p{i}") for i in range(4)]
    fn11 = _identity(extern=True)
    mod["main"] = relay.Function(p, (p[0] + p[1] + fn11(p[0])) * g2(p[2], p[3]))
    _check(_chain_module(inline_g1=True, extern_g11=True), mod)


def _count_loop(mod, with_global=None):
    sum_up = relay.GlobalVar("sum_up")
    i = _v("i", (), "int32")
    sb = relay.ScopeBuilder()
    with sb.if_scope(relay.equal(i, relay.const(0, "int32"))):
        sb.ret(i)
    with sb.else_scope():
        rec = relay.Call(sum_up, [relay.subtract(i, relay.const(1, "int32"))])
        if with_global is not None:
            rec = rec + with_global(i)
        sb.ret(relay.add(rec, i))
    mod[sum_up] = _inline(relay.Function([i], sb.get(), ret_type=relay.TensorType([], "int32")))
    return sum_up


def test_recursive_function_keeps_its_call_inlines_others():
    mod = tvm.IRModule({})
    x = _v("x", (), "int32")
    gx = relay.GlobalVar("gx")
    mod[gx] = _inline(relay.Function([x], x))
    sum_up = _count_loop(mod, with_global=gx)
    i = _v("i", (), "int32")
    mod["main"] = relay.Function([i], sum_up(i))

    expected = tvm.IRModule({})
    sum_up2 = _count_loop(expected, with_global=lambda i: i)
    i = _v("i", (), "int32")
    expected["main"] = relay.Function([i], sum_up2(i))
    _check(mod, expected)


def test_recursive_called_is_unchanged():
    mod = tvm.IRModule({})
    sum_up = _count_loop(mod)
    i = _v("i", (), "int32")
    mod["main"] = relay.Function([i], sum_up(i))
    out = relay.transform.Inline()(mod)
    tvm.ir.assert_structural_equal(out, mod)


def _not_called(extern: bool, inlined: bool):
    mod = tvm.IRModule({})
    _count_loop(mod)
    x, y, x1 = _v("x", (2, 2)), _v("y", (2, 2)), _v("x1", (2, 2))
    fn1 = _inline(relay.Function([x1], x1))
    if extern:
        fn1 = _extern(fn1)
    if inlined:
        third = fn1(x) if extern else x
    else:
        g1 = relay.GlobalVar("g1")
        mod[g1] = fn1
        third = g1(x)
    mod["main"] = relay.Function([x, y], x + y + third)
    return mod


def test_recursive_not_called():
    _check(_not_called(extern=False, inlined=False), _not_called(extern=False, inlined=True))


def test_recursive_not_called_extern_compiler():
    _check(_not_called(extern=True, inlined=False), _not_called(extern=True, inlined=True))


def test_globalvars_inlined_into_main():
    mod = tvm.IRModule({})
    x1, y1 = _add_fn()
    g1 = relay.GlobalVar("g1")
    mod[g1] = _inline(relay.Function([x1, y1], x1 + y1))
    g2 = relay.GlobalVar("g2")
    mod[g2] = _inline(_sub_fn())
    _main(mod, g1, g2)
    expected = tvm.IRModule({})
    p = [_v(f"p{i}") for i in range(4)]
    expected["main"] = relay.Function(p, (p[0] + p[1]) * (p[2] - p[3]))
    _check(mod, expected)


def test_a_module_without_inline_functions_is_returned_unchanged():
    """Nothing marked Inline: the functions are kept as they are (the pass skips its walks for
    GlobalVar references), a call between globals included."""
    x = _v("x")
    mod = tvm.IRModule()
    g = relay.GlobalVar("g")
    mod[g] = relay.Function([x], relay.negative(x))
    y = _v("y")
    mod["main"] = relay.Function([y], relay.Call(g, [y]))
    out = relay.transform.Inline()(mod)
    assert out is not mod
    assert {gv.name_hint: f for gv, f in out.functions.items()} == \
        {gv.name_hint: f for gv, f in mod.functions.items()}

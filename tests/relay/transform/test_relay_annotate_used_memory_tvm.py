"""AnnotateUsedMemory (TVM v0.19, src/relay/backend/annotate_used_memory.cc): TVM's
test_used_memory_annotator.py scenarios restated — bytes live at each primitive call site
(``used_memory``, one entry per call) and main's IO bytes (``io_used_memory``) — plus an
Expected program, unchanged numerics, errors and a deep chain."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.relay.expr_functor import ExprVisitor


def _prim(expr):
    return relay.Function(relay.analysis.free_vars(expr), expr).with_attr("Primitive", 1)


def _prepare(expr):
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(expr))
    mod = relay.transform.ToANormalForm()(mod)
    return relay.transform.InferType()(mod)


class _Collect(ExprVisitor):
    """The used_memory lists of the primitive functions, in visiting order."""

    def __init__(self):
        super().__init__()
        self.found = []

    def visit_function(self, fn):
        if fn.attrs and "Primitive" in fn.attrs:
            self.found.append([int(v) for v in fn.attrs["used_memory"]])
        super().visit_function(fn)


def _check(expr, expected, expected_io):
    mod = _prepare(expr)
    out = relay.transform.AnnotateUsedMemory()(mod)
    main = out["main"]
    assert int(main.attrs["io_used_memory"]) == expected_io
    assert main.attrs["io_used_memory"].dtype == "uint64"
    c = _Collect()
    c.visit(main.body)
    assert c.found == expected
    return mod, out


def _int8(shape, name="x"):
    return relay.var(name, shape=shape, dtype="int8")


def test_one_function_and_expected_program():
    ifm = _int8((1, 2, 2, 4), "input")
    mod, out = _check(relay.Call(_prim(relay.nn.max_pool2d(_int8((1, 2, 2, 4)))), [ifm]),
                      [[32]], 32)
    # Expected: the ANF program with the two attributes added
    ifm = _int8((1, 2, 2, 4), "input")
    x = _int8((1, 2, 2, 4))
    fn = relay.Function([x], relay.nn.max_pool2d(x)).with_attrs(
        {"Primitive": 1, "used_memory": [tvm.tir.IntImm("uint64", 32)]})
    f = relay.var("f")
    y = relay.var("y")
    body = relay.Let(f, fn, relay.Let(y, relay.Call(f, [ifm]), y))
    expected = tvm.IRModule.from_expr(relay.Function([ifm], body).with_attr(
        "io_used_memory", tvm.tir.IntImm("uint64", 32)))
    tvm.ir.assert_structural_equal(relay.transform.InferType()(out),
                                   relay.transform.InferType()(expected))
    data = np.random.default_rng(0).integers(-5, 5, (1, 2, 2, 4)).astype("int8")
    run = [relay.create_executor("debug", mod=m).evaluate()(data).numpy() for m in (mod, out)]
    np.testing.assert_array_equal(run[0], run[1])


def test_chain_of_pools():
    def pool(shape):
        return _prim(relay.nn.max_pool2d(_int8(shape), pool_size=(2, 2), layout="NHWC"))

    x = relay.Call(pool((1, 8, 8, 2)), [_int8((1, 8, 8, 2), "input")])
    x = relay.Call(pool((1, 7, 7, 2)), [x])
    x = relay.Call(pool((1, 6, 6, 2)), [x])
    _check(x, [[128 + 98], [98 + 72], [72 + 50]], 128 + 50)


def test_mixed_dtypes():
    ifm = relay.var("input", shape=(1, 2, 2, 2), dtype="int16")
    f = _prim(relay.cast(relay.var("x", shape=(1, 2, 2, 2), dtype="int16"), "uint32"))
    _check(relay.Call(f, [ifm]), [[16 + 32]], 16 + 32)


def test_parallel_calls_keep_earlier_results_alive():
    def reshape():
        return _prim(relay.reshape(_int8((1, 4, 5, 6)), newshape=(1, 4, 30)))

    ifm = _int8((1, 4, 5, 6), "input")
    out = relay.concatenate([relay.Call(reshape(), [ifm]), relay.Call(reshape(), [ifm])], 0)
    _check(out, [[120 + 120], [120 + 120 + 120]], 120 + 240)


def test_many_different_parallel_calls():
    ifm = _int8((1, 4, 5, 6), "input")
    f1 = _prim(relay.tanh(_int8((1, 4, 5, 6))))
    f2 = _prim(relay.nn.max_pool2d(_int8((1, 4, 5, 6)), pool_size=(1, 1), layout="NHWC"))
    f3 = _prim(relay.exp(relay.nn.relu(relay.abs(_int8((1, 4, 5, 6))))))
    a, b, c = (_int8((1, 4, 5, 6), n) for n in "abc")
    f4 = _prim(relay.concatenate([a, b, c], axis=3))
    out = relay.Call(f4, [relay.Call(f, [ifm]) for f in (f1, f2, f3)])
    _check(out, [[240], [360], [480], [360 + 360]], 120 + 360)


def test_nested_branches():
    def relu():
        return _prim(relay.nn.relu(_int8((1, 2, 2, 4))))

    ifm = _int8((1, 2, 2, 4), "input")
    a = relay.Call(relu(), [ifm])
    b = relay.Call(relu(), [ifm])
    out = relay.concatenate([a, relay.Call(relu(), [b]), relay.Call(relu(), [b])], axis=3)
    _check(out, [[32], [48], [48], [64]], 16 + 48)


def test_composite_inside_primitive():
    x = _int8((1, 2, 2, 4))
    comp = relay.Function([x], relay.nn.max_pool2d(x, pool_size=(2, 2), layout="NHWC"))
    comp = comp.with_attr("Composite", "my_composite")
    y = _int8((1, 2, 2, 4), "y")
    prim = relay.Function([y], relay.Call(comp, [y])).with_attr("Primitive", 1)
    _check(relay.Call(prim, [_int8((1, 2, 2, 4), "input")]), [[16 + 4]], 16 + 4)


def test_same_function_called_twice_in_sequence_and_in_parallel():
    f = _prim(relay.nn.max_pool2d(_int8((1, 2, 2, 4))))
    ifm = _int8((1, 2, 2, 4), "input")
    _check(relay.Call(f, [relay.Call(f, [ifm])]), [[32, 32]], 32)
    ifm = _int8((1, 2, 2, 4), "input")
    both = relay.concatenate([relay.Call(f, [ifm]), relay.Call(f, [ifm])], axis=0)
    _check(both, [[32, 48]], 48)


def test_many_calls_of_one_function_after_another():
    ifm = _int8((1, 4, 5, 6), "input")
    y = relay.Call(_prim(relay.tanh(_int8((1, 4, 5, 6)))), [ifm])
    g = _prim(relay.nn.max_pool2d(_int8((1, 4, 5, 6)), pool_size=(2, 2)))
    n = 12
    out = relay.concatenate([relay.Call(g, [y]) for _ in range(n)], axis=3)
    _check(out, [[240], [120 + 80 * i for i in range(1, n + 1)]], 120 + 80 * n)


def test_dynamic_shapes_are_rejected():
    f = _prim(relay.nn.max_pool2d(_int8((1, 2, 2, 4))))
    ifm = relay.var("input", shape=(1, 2, 2, relay.Any()), dtype="int8")
    with pytest.raises(ValueError, match="does not support dynamic shapes"):
        relay.transform.AnnotateUsedMemory()(_prepare(relay.Call(f, [ifm])))
    g = _prim(relay.nn.max_pool2d(relay.var("x", shape=(relay.Any(), 2, 2, 4), dtype="int8")))
    with pytest.raises(ValueError, match="does not support dynamic shapes"):
        relay.transform.AnnotateUsedMemory()(_prepare(relay.Call(g, [_int8((1, 2, 2, 4))])))


def test_non_primitive_top_level_function_is_rejected():
    x = _int8((1, 2, 2, 4))
    plain = relay.Function([x], relay.nn.relu(x))
    with pytest.raises(ValueError, match="not primitive"):
        relay.transform.AnnotateUsedMemory()(_prepare(relay.Call(plain, [_int8((1, 2, 2, 4),
                                                                                "in")])))


def test_pass_info():
    p = relay.transform.AnnotateUsedMemory()
    assert p.info.name == "AnnotateUsedMemory" and p.info.opt_level == 0
    assert list(p.info.required) == ["ToANormalForm", "InferType"]


def test_deep_let_chain():
    ifm = relay.var("input", shape=(4,), dtype="float32")
    f = _prim(relay.negative(relay.var("x", shape=(4,))))
    body = ifm
    lets = []
    n = 100_000
    for i in range(n):
        v = relay.var(f"v{i}", shape=(4,))
        lets.append((v, relay.Call(f, [body])))
        body = v
    fv = relay.var("f")
    lets = [(fv, f)] + [(v, relay.Call(fv, list(c.args))) for v, c in lets]
    for v, val in reversed(lets):
        body = relay.Let(v, val, body)
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([ifm], body)))
    out = relay.transform.AnnotateUsedMemory()(mod)
    used = out["main"].body.value.attrs["used_memory"]
    assert len(used) == n and all(int(u) == 32 for u in used)


def test_call_site_inside_a_branch():
    """Liveness follows the if's arms. As in TVM's CFG the if's own variable %r is defined
    before the arms, so inside them it counts as live too: input + %a + %r."""
    inp = relay.var("input", shape=(4,))
    c = relay.var("c", shape=(), dtype="bool")
    p = relay.var("p", shape=(4,))
    f = relay.var("f")
    a = relay.var("a")
    r = relay.var("r")
    prim = relay.Function([p], relay.negative(p)).with_attr("Primitive", 1)
    branch = relay.If(c, relay.Let(a, relay.Call(f, [inp]), a), inp)
    body = relay.Let(f, prim, relay.Let(r, branch, r))
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([inp, c], body)))
    out = relay.transform.AnnotateUsedMemory()(mod)
    main = out["main"]
    assert [int(v) for v in main.body.value.attrs["used_memory"]] == [48]
    assert int(main.attrs["io_used_memory"]) == 16 + 1 + 16

"""AnnotateTarget against TVM v0.19's documented cases (test_pass_annotate_target.py), restated
in our words: Before -> AnnotateTarget(targets, include_non_call_ops) -> TVM's Expected program
(compiler_begin/compiler_end placement), plus interpreter numerics (the annotations are
identities)."""

from __future__ import annotations

import numpy as np
import pytest
from pass_test_util import check_numerics

import minitvm as tvm
from minitvm import relay
from minitvm.relay import transform
from minitvm.relay.op.annotation import compiler_begin as cb
from minitvm.relay.op.annotation import compiler_end as ce
from minitvm.relay.testing.temp_op_attr import TempOpAttr


def _yes(expr):
    return True


def _supported(target, *ops):
    """Context managers registering ``target.<target>`` = always for each op."""
    return [TempOpAttr(op, "target." + target, _yes) for op in ops]


def _annotate(mod, targets, non_call=True, *ops_by_target):
    from contextlib import ExitStack

    with ExitStack() as stack:
        for target, ops in ops_by_target:
            for cm in _supported(target, *ops):
                stack.enter_context(cm)
        return transform.AnnotateTarget(targets, non_call)(mod)


def _same(got, expected_mod):
    tvm.ir.assert_structural_equal(got, transform.InferType()(expected_mod))


def _mod(params, body):
    return tvm.IRModule.from_expr(relay.Function(params, body))


def test_depthwise_convs_for_one_target():
    # TVM's test_extern_dnnl: conv -> conv -> add, everything supported
    x = relay.var("data", shape=(1, 4, 6, 6))
    w = relay.var("weight1", shape=(4, 1, 3, 3))

    def conv(a, b):
        return relay.nn.conv2d(a, b, kernel_size=(3, 3), padding=(1, 1), groups=4)

    c1 = conv(x, w)
    before = _mod([x, w], relay.add(c1, conv(c1, w)))
    t = "t2dnnl"
    got = _annotate(before, t, True, (t, ("nn.conv2d", "add")))
    e1 = conv(cb(x, t), cb(w, t))
    e2 = conv(cb(ce(e1, t), t), cb(w, t))
    want = relay.add(cb(ce(e1, t), t), cb(ce(e2, t), t))
    _same(got, _mod([x, w], ce(want, t)))
    check_numerics(before, got)


@pytest.mark.parametrize("non_call", [False, True])
def test_multiple_ends_of_one_supported_op(non_call):
    x = relay.var("x", shape=(10, 10))
    r = relay.nn.relu(x)
    before = _mod([x], relay.add(relay.abs(r), relay.abs(r)))
    got = _annotate(before, "t2test", non_call, ("t2test", ("nn.relu",)))
    er = relay.nn.relu(cb(x, "t2test"))
    a1 = relay.abs(cb(ce(er, "t2test"), "default"))
    a2 = relay.abs(cb(ce(er, "t2test"), "default"))
    out = relay.add(cb(ce(a1, "default"), "default"), cb(ce(a2, "default"), "default"))
    _same(got, _mod([x], ce(out, "default")))
    check_numerics(before, got)


@pytest.mark.parametrize("non_call", [False, True])
def test_checker_sees_types(non_call):
    x = relay.var("x", shape=(10, 10))
    before = _mod([x], relay.nn.relu(relay.nn.relu(x)))
    with TempOpAttr("nn.relu", "target.t2types",
                    lambda expr: expr.args[0].checked_type.dtype == "float32"):
        got = transform.AnnotateTarget("t2types", non_call)(before)
    assert got["main"].body.op.name == "annotation.compiler_end"


def test_ref_create_read_write():
    t = "t2relu"
    for non_call in (True, False):
        ref = relay.RefCreate(relay.const(1.0))
        before = tvm.IRModule.from_expr(relay.RefWrite(ref, relay.nn.relu(relay.RefRead(ref))))
        got = _annotate(before, t, non_call, (t, ("nn.relu",)))
        co = relay.const(1.0)
        co = cb(co, "default") if non_call else co
        r = relay.RefCreate(co)
        r_write, r_read = r, r
        if non_call:
            r_write = cb(ce(r, "default"), "default")
            r_read = cb(ce(r, "default"), "default")
        read = relay.RefRead(r_read)
        read = ce(read, "default") if non_call else read
        end = ce(relay.nn.relu(cb(read, t)), t)
        end = cb(end, "default") if non_call else end
        w = relay.RefWrite(r_write, end)
        w = ce(w, "default") if non_call else w
        _same(got, tvm.IRModule.from_expr(w))


@pytest.mark.parametrize("non_call", [False, True])
def test_tuple_between_supported_ops(non_call):
    t = "t2tuple"
    x, y = relay.var("x", shape=(10, 5)), relay.var("y", shape=(10, 5))
    before = _mod([x, y], relay.concatenate((relay.nn.relu(x), relay.nn.relu(y)), axis=1))
    got = _annotate(before, t, non_call, (t, ("nn.relu", "concatenate")))
    e1 = ce(relay.nn.relu(cb(x, t)), t)
    e2 = ce(relay.nn.relu(cb(y, t)), t)
    tup = ce(relay.Tuple([cb(e1, t), cb(e2, t)]), t) if non_call else relay.Tuple([e1, e2])
    out = ce(relay.concatenate(cb(tup, t), 1), t)
    _same(got, _mod([x, y], out))
    check_numerics(before, got)


def test_composite_function_call_annotated_as_a_whole():
    a, b = relay.var("a", shape=(10, 10)), relay.var("b", shape=(10, 10))

    def add_relu():
        i1, i2 = relay.var("in_1", shape=(10, 10)), relay.var("in_2", shape=(10, 10))
        fn = relay.Function([i1, i2], relay.nn.relu(relay.add(i1, i2)))
        return fn.with_attr("Composite", "t2comp.add_relu")

    before = _mod([a, b], relay.Call(add_relu(), [a, b]))
    got = transform.AnnotateTarget("t2comp")(before)
    want = _mod([a, b], ce(relay.Call(add_relu(), [cb(a, "t2comp"), cb(b, "t2comp")]),
                           "t2comp"))
    _same(got, want)
    check_numerics(before, got)


@pytest.mark.parametrize("non_call", [True, False])
def test_annotating_twice_changes_nothing(non_call):
    x = relay.var("x", shape=(10, 5))
    with TempOpAttr("nn.relu", "target.t2double.A", _yes):
        once = transform.AnnotateTarget("t2double.A", non_call)(
            tvm.IRModule.from_expr(relay.nn.relu(x)))
        twice = transform.AnnotateTarget("t2double.A", non_call)(once)
    tvm.ir.assert_structural_equal(once, twice)


@pytest.mark.parametrize("non_call", [True, False])
def test_one_run_per_target_equals_one_run_for_both(non_call):
    x = relay.var("x", shape=(10, 5))
    a1 = relay.nn.relu(x)
    before = _mod([x], relay.add(relay.abs(a1), relay.nn.relu(a1)))
    simple = tvm.IRModule.from_expr(relay.add(relay.nn.relu(x), relay.nn.relu(x)))
    with TempOpAttr("nn.relu", "target.t2A", _yes), TempOpAttr("add", "target.t2B", _yes):
        for m in (before, simple):
            seq = transform.AnnotateTarget("t2B", non_call)(
                transform.AnnotateTarget("t2A", non_call)(m))
            both = transform.AnnotateTarget(["t2A", "t2B"], non_call)(m)
            tvm.ir.assert_structural_equal(seq, both)


@pytest.mark.parametrize("get_item", [True, False])
@pytest.mark.parametrize("non_call", [False, True])
def test_ends_with_tuple(get_item, non_call):
    t = "t2clip"
    a = relay.var("a", shape=(1, 4, 4, 2), dtype="uint8")
    z = relay.clip(a, 0, 255)
    tup = relay.Tuple((relay.clip(z, 16, 31), relay.clip(z, 0, 15)))
    before = tvm.IRModule.from_expr(relay.TupleGetItem(tup, 1) if get_item else tup)
    got = _annotate(before, t, non_call, (t, ("clip",)))

    ez = relay.clip(cb(a, t), 0, 255)
    eb = ce(relay.clip(cb(ce(ez, t), t), 0, 15), t)
    eb = cb(eb, t) if non_call else eb
    ec = ce(relay.clip(cb(ce(ez, t), t), 16, 31), t)
    ec = cb(ec, t) if non_call else ec
    et = relay.Tuple((ec, eb))
    et = ce(et, t) if non_call else et
    if get_item:
        et = cb(et, t) if non_call else et
        et = relay.TupleGetItem(et, 1)
        et = ce(et, t) if non_call else et
    _same(got, _mod([a], et))
    check_numerics(before, got, [np.arange(32, dtype="uint8").reshape(1, 4, 4, 2)])


@pytest.mark.parametrize("non_call", [True, False])
def test_if_else_between_supported_ops(non_call):
    t = "t2ifelse"
    data = relay.var("data", shape=(1, 8))
    e1, e2 = relay.var("e1", shape=()), relay.var("e2", shape=())
    ife = relay.If(relay.equal(e1, e2), relay.tanh(data), relay.sigmoid(data))
    before = _mod([data, e1, e2], relay.erf(ife))
    got = _annotate(before, t, non_call, (t, ("equal", "tanh", "sigmoid", "erf")))
    cond = ce(relay.equal(cb(e1, t), cb(e2, t)), t)
    want = relay.If(cond, ce(relay.tanh(cb(data, t)), t), ce(relay.sigmoid(cb(data, t)), t))
    _same(got, _mod([data, e1, e2], ce(relay.erf(cb(want, t)), t)))
    rng = np.random.default_rng(3)
    for same in (True, False):
        args = [rng.standard_normal((1, 8)).astype("float32"), np.array(1.0, "float32"),
                np.array(1.0 if same else 2.0, "float32")]
        check_numerics(before, got, args)


@pytest.mark.parametrize("non_call", [False, True])
def test_while_loop_in_a_let(non_call):
    t = "t2while"

    def program(annotated):
        v1 = relay.var("var1", shape=(2,))
        v2 = relay.var("var2", shape=(), dtype="int32")
        v3 = relay.var("var3", shape=(2,))
        loop = relay.var("while_loop")
        ten, one, zero = (relay.const(n, dtype="int32") for n in (10, 1, 0))
        if not annotated:
            body = relay.If(relay.less(v2, ten), loop(v2 + one, v3 + v1), v3)
            start = loop(zero, relay.zeros_like(v1))
            return _mod([v1], relay.Let(loop, relay.Function([v2, v3], body), start))

        def dflt(e, end=False):
            if not non_call:
                return e
            return ce(e, "default") if end else cb(e, "default")

        cond = ce(relay.less(cb(v2, t), cb(ten, t)), t)
        ii = dflt(ce(relay.add(cb(v2, t), cb(one, t)), t))
        ss = dflt(ce(relay.add(cb(v3, t), cb(v1, t)), t))
        body = relay.If(cond, dflt(loop(ii, ss), end=True), v3)
        zl = dflt(ce(relay.zeros_like(cb(v1, t)), t))
        start = dflt(loop(dflt(zero), zl), end=True)
        return _mod([v1], relay.Let(loop, relay.Function([v2, v3], body), start))

    got = _annotate(program(False), t, non_call, (t, ("less", "add", "zeros_like")))
    _same(got, program(True))
    check_numerics(program(False), got, [np.array([0.5, -1.0], "float32")])


@pytest.mark.parametrize("non_call", [True, False])
def test_if_with_an_unsupported_branch(non_call):
    t = "t2iffree"
    data = relay.var("data", shape=(1, 8))
    e1, e2 = relay.var("e1", shape=()), relay.var("e2", shape=())
    ife = relay.If(relay.equal(e1, e2), relay.zeros((1, 8), "float32"), relay.sigmoid(data))
    before = _mod([data, e1, e2], relay.erf(ife))
    got = _annotate(before, t, non_call, (t, ("equal", "sigmoid", "erf")))
    cond = ce(relay.equal(cb(e1, t), cb(e2, t)), t)
    want = relay.If(cond, relay.zeros((1, 8), "float32"), ce(relay.sigmoid(cb(data, t)), t))
    _same(got, _mod([data, e1, e2], ce(relay.erf(cb(want, t)), t)))


@pytest.mark.parametrize("non_call", [True, False])
def test_argument_free_bodies_untouched(non_call):
    for body in (relay.zeros((0,), "float32"), relay.Tuple([])):
        before = _mod([], body)
        got = transform.AnnotateTarget("t2empty", non_call)(before)
        _same(got, _mod([], body))

"""The schedule rule table: which rule ``select_rule`` picks per stage and options, and
``register_rule`` adding a rule that ``lower_te`` then tries first."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import codegen, relay
from minitvm.relay.backend import te_compiler
from minitvm.schedule import (
    RULES,
    LoweringOptions,
    Rule,
    gemm,
    lower_te,
    register_rule,
    select_rule,
)
from minitvm.te.create_prim_func import topo_order
from minitvm.tir import stmt as S

GENERATED = LoweringOptions(blas=False)  # generated conv / dense, no BLAS
PLAIN = LoweringOptions(blas=False, generated_conv=False, generated_dense=False,
                        generated_batch_matmul=False)  # neither: the plain reduction
BLAS_ONLY = LoweringOptions(blas=True, generated_conv=False, generated_dense=False,
                            generated_batch_matmul=False)


def _te(params, body):
    """TE inputs, constants and outputs of a (type-checked) fused relay function."""
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function(params, body)))
    return te_compiler.build_te(mod["main"])


def _stage(outputs, name):
    (t,) = [t for t in topo_order(list(outputs)) if t.name == name]
    return t


def _dense_te(m=16, n=32, k=64):
    x, w = relay.var("x", shape=(m, k)), relay.var("w", shape=(n, k))
    return _te([x, w], relay.nn.relu(relay.nn.dense(x, w)))


def _conv_te():
    x, w = relay.var("x", shape=(1, 8, 10, 10)), relay.var("w", shape=(16, 8, 3, 3))
    return _te([x, w], relay.nn.relu(relay.nn.conv2d(x, w, padding=(1, 1))))


@pytest.mark.parametrize("options,want", [(GENERATED, "gemm"), (PLAIN, None),
                                          (BLAS_ONLY, "gemm")])
def test_dense_rule_depends_on_options(options, want):
    _, _, outs = _dense_te()
    rule = select_rule(_stage(outs, "dense"), options)
    if want is None:
        assert rule is None
    else:
        assert rule is not None and rule.name == want and rule.kind == "gemm"
        assert rule is RULES["dense"][-1]


def test_blas_option_only_counts_when_set():
    # without generated dense, BLAS decides; BLAS=False leaves the reduction schedule
    _, _, outs = _dense_te()
    t = _stage(outs, "dense")
    assert select_rule(t, LoweringOptions(blas=True, generated_dense=False)) is not None
    assert select_rule(t, LoweringOptions(blas=False, generated_dense=False)) is None


def test_narrow_gemv_is_never_a_gemm():
    # a GEMV (one row) with few outputs and a small weight stays the vectorized reduction
    # whatever the options (gemm.GEMV_MIN_COLUMNS, GEMV_MIN_WEIGHT)
    _, _, outs = _dense_te(m=1, n=gemm.GEMV_MIN_COLUMNS - 6)
    t = _stage(outs, "dense")
    for options in (GENERATED, PLAIN, BLAS_ONLY):
        assert select_rule(t, options) is None


def test_gemv_with_enough_outputs_takes_the_packed_kernels():
    # from GEMV_MIN_COLUMNS outputs a one-row dense is a GEMM when generated dense is on
    _, _, outs = _dense_te(m=1, n=gemm.GEMV_MIN_COLUMNS)
    t = _stage(outs, "dense")
    assert select_rule(t, GENERATED).name == "gemm"
    assert select_rule(t, PLAIN) is None


@pytest.mark.parametrize("options,want", [(GENERATED, "gemm"), (PLAIN, None),
                                          (BLAS_ONLY, "gemm")])
def test_conv2d_rule_depends_on_options(options, want):
    _, _, outs = _conv_te()
    rule = select_rule(_stage(outs, "conv2d"), options)
    assert (rule.name if rule is not None else None) == want


def test_pool_rule_and_none_for_elementwise_and_inputs():
    x = relay.var("x", shape=(1, 4, 8, 8))
    ins, _, outs = _te([x], relay.nn.relu(relay.nn.max_pool2d(relay.exp(x), pool_size=(2, 2),
                                                              strides=(2, 2))))
    pool_t = _stage(outs, "max_pool2d")
    for options in (GENERATED, PLAIN, BLAS_ONLY):
        rule = select_rule(pool_t, options)
        assert rule is not None and rule.kind == "window" and rule.name == "pool2d rows"
        for t in topo_order(list(outs)):
            if t is not pool_t:  # exp, relu and the placeholder get no rule
                assert select_rule(t, options) is None, t.name
    assert select_rule(ins[0], GENERATED) is None


def test_lower_te_uses_the_selected_rule():
    # the generated dense writes register-tiled micro-kernels (its weight, a run-time input
    # here, read in place by the transposed-B tiles: gemm.RUNTIME_W_AS_MATMUL); the plain one a
    # reduction loop nest
    ins, _, outs = _dense_te()
    gen = lower_te(ins, outs, "f", options=GENERATED)[0].script()
    plain = lower_te(ins, outs, "f", options=PLAIN)[0].script()
    assert gen != plain
    assert "nt_acc" in gen and "nt_acc" not in plain


# ------------------------------------------------------------------------------ register_rule
MARK = "custom_rule_marker"


def _naive_dense_emit(ctx, t, out, bodies):
    """A plain i, j, k loop nest for a 2-d dense, plus 1 (so its result is recognizable)."""
    a, w = (ctx.buf[id(s)] for s in t.op.attrs["operands"])
    m, n = (int(d) for d in t.shape)
    k = int(a.shape[-1])
    i, j, r = (tvm.tir.Var(f"{MARK}_{c}", "int32") for c in "ijr")
    acc = S.BufferStore(out, out[i, j] + a[i, r] * w[j, r], [i, j])
    body = S.SeqStmt([
        S.BufferStore(out, tvm.tir.FloatImm("float32", 1.0), [i, j]),
        S.For(r, 0, k, S.ForKind.SERIAL, acc),
    ])
    return S.For(i, 0, m, S.ForKind.SERIAL, S.For(j, 0, n, S.ForKind.SERIAL, body))


def test_register_rule_is_tried_first(rng):
    calls = []

    def supported(t, options):
        calls.append(options)
        return True

    rule = Rule("naive dense", "custom", supported, _naive_dense_emit)
    ins, _, outs = _dense_te()
    t = _stage(outs, "dense")
    before = list(RULES["dense"])
    register_rule("dense", rule)
    try:
        assert RULES["dense"] == [rule, *before]
        for options in (GENERATED, PLAIN, BLAS_ONLY):  # taken before the GEMM rule
            assert select_rule(t, options) is rule
        assert calls[-1] == BLAS_ONLY  # the options reach the rule
        prim, _ = lower_te(ins, outs, "f", options=GENERATED)
        text = prim.script()
        assert f"{MARK}_i" in text and "dense_wpack" not in text
        f = codegen.build(prim)["f"]
        a = rng.standard_normal((16, 64), dtype=np.float32)
        w = rng.standard_normal((32, 64), dtype=np.float32)
        c = np.empty((16, 32), np.float32)
        f(a, w, c)
        np.testing.assert_allclose(c, np.maximum(a @ w.T + 1.0, 0), rtol=1e-4, atol=1e-4)
    finally:
        RULES["dense"].remove(rule)
    assert RULES["dense"] == before
    # (the GEMM's rule: the VNNI one before it takes 8-bit products only)
    assert select_rule(t, GENERATED) is next(r for r in before if r.kind == "gemm")
    assert f"{MARK}_i" not in lower_te(ins, outs, "f", options=GENERATED)[0].script()


def test_register_rule_for_a_new_tag():
    x = tvm.te.placeholder((4, 8), "float32", "x")
    # a rule-scheduled stage names its operands (they are materialized for it)
    y = tvm.te.compute((4, 8), lambda i, j: x[i, j] * 2.0, name="y", tag="my_test_tag",
                       attrs={"operands": (x,)})

    def emit(ctx, t, out, bodies):
        i = tvm.tir.Var(f"{MARK}_i", "int32")
        j = tvm.tir.Var(f"{MARK}_j", "int32")
        store = S.BufferStore(out, ctx.buf[id(x)][i, j] * 3.0, [i, j])
        return S.For(i, 0, 4, S.ForKind.SERIAL, S.For(j, 0, 8, S.ForKind.SERIAL, store))

    rule = Rule("times three", "custom", lambda t, options: True, emit)
    assert "my_test_tag" not in RULES and select_rule(y, GENERATED) is None
    register_rule("my_test_tag", rule)
    try:
        assert select_rule(y, GENERATED) is rule
        prim, _ = lower_te([x], [y], "g", options=GENERATED)
        assert f"{MARK}_j" in prim.script()
        xv = np.arange(32, dtype=np.float32).reshape(4, 8)
        out = np.empty((4, 8), np.float32)
        codegen.build(prim)["g"](xv, out)
        np.testing.assert_allclose(out, xv * 3.0)
    finally:
        RULES.pop("my_test_tag", None)
    prim, _ = lower_te([x], [y], "g", options=GENERATED)
    assert MARK not in prim.script()


def test_rule_for_an_untagged_stage_without_operands_attr():
    """A rule may take a stage whose compute declares no ``operands``: its input tensors are
    materialized instead (this was a KeyError that crashed relay.build)."""
    from minitvm.schedule.lower import injective_nest

    rule = Rule("mine", "custom", lambda t, o: t.name == "nn_relu",
                lambda ctx, t, buf, bodies: injective_nest(ctx, t, buf, bodies[id(t)]))
    register_rule("", rule)
    try:
        x = relay.var("x", shape=(4, 8))
        mod = tvm.IRModule.from_expr(relay.Function([x], relay.nn.relu(x * relay.const(2.0))))
        with tvm.transform.PassContext(opt_level=3, config={"relay.backend.use_blas": False}):
            lib = relay.build(mod, target="llvm")
        assert not lib.get_lib().fallback_functions
        from minitvm.contrib import graph_executor

        m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
        a = np.random.default_rng(0).standard_normal((4, 8)).astype("float32")
        m.set_input("x", a)
        m.run()
        np.testing.assert_allclose(m.get_output(0).numpy(), np.maximum(a * 2, 0), rtol=1e-6)
    finally:
        RULES[""].remove(rule)
        if not RULES[""]:
            del RULES[""]


def test_a_rule_taken_out_of_the_table_no_longer_marks_its_tag():
    """``rule_emitted_tags`` reads the table as it is now: after a rule registered for the
    untagged stages ("") is taken out again, a Relay VM function with ``Any`` dims whose stages
    are untagged is still one symbolic kernel. (The tag stayed marked: every later dynamic
    function with an untagged stage was refused and compiled per input shape, which also hid a
    patched shape rule from tests/testing/test_symbolic_sweep.py in the full suite.)"""
    from minitvm.relay.backend.vm.kernels import dynamic_kernel_counts
    from minitvm.runtime.vm import VirtualMachine
    from minitvm.schedule.lower import rule_emitted_tags

    rule = Rule("never", "custom", lambda t, o: False, lambda ctx, t, buf, bodies: None)
    assert "" not in rule_emitted_tags()
    register_rule("", rule)
    try:
        assert "" in rule_emitted_tags()
    finally:
        RULES[""].remove(rule)
        if not RULES[""]:
            del RULES[""]
    assert "" not in rule_emitted_tags()
    x = relay.var("x", shape=(relay.Any(), relay.Any(), relay.Any()))
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.squeeze(
        x * relay.const(5.0), [2])))
    with tvm.transform.PassContext(opt_level=3):
        exe = relay.vm.compile(mod, target="llvm")
    assert dynamic_kernel_counts(exe.kernels) == {"symbolic": 1, "specialized": 0}
    a = np.random.default_rng(3).standard_normal((2, 3, 1)).astype("float32")
    got = VirtualMachine(exe, tvm.cpu()).run(tvm.nd.array(a)).numpy()
    np.testing.assert_allclose(got, a[:, :, 0] * 5.0, rtol=1e-6)

"""Pass statistics (record_stat) and IR-property contracts of the built-in Relay passes."""

import re

import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.transform import PassContext, check_property
from minitvm.transform.registry import get_pass


def _small_model():
    """conv2d + bias_add + batch_norm + relu + dropout + softmax: most of relay.build has work."""
    x = relay.var("x", shape=(1, 3, 8, 8), dtype="float32")
    w = relay.var("w", shape=(4, 3, 3, 3), dtype="float32")
    b = relay.var("b", shape=(4,), dtype="float32")
    g, be, m, v = (relay.var(n, shape=(4,), dtype="float32") for n in "gbmv")
    y = relay.nn.conv2d(x, w, padding=(1, 1))
    y = relay.nn.bias_add(y, b)
    y = relay.nn.batch_norm(y, g, be, m, v)[0]
    y = relay.nn.relu(y)
    y = relay.nn.dropout(y)
    y = relay.nn.softmax(relay.nn.batch_flatten(y))
    return tvm.IRModule.from_expr(relay.Function([x, w, b, g, be, m, v], y))


def _stats(report: str, name: str) -> dict:
    """The statistics printed on the per-pass totals line of pass ``name``."""
    for line in report.split("Per-pass totals")[1].splitlines():
        if line.strip().startswith(f"{name}:"):
            found = re.search(r"\{(.*)\}", line)
            if not found:
                return {}
            return {k.strip(): int(v) for k, v in
                    (kv.rsplit(":", 1) for kv in found.group(1).split(", "))}
    raise AssertionError(f"pass {name} not in the report:\n{report}")


@pytest.fixture(scope="module")
def optimize_report():
    with PassContext(opt_level=4, instruments=[tvm.instrument.PassTimingInstrument()]):
        relay.optimize(_small_model())
        return tvm.instrument.PassTimingInstrument.render()


@pytest.mark.parametrize("pass_name, stat, count", [
    ("SimplifyInference", "expanded batch_norms", 1),
    ("SimplifyInference", "removed dropouts", 1),
    ("CanonicalizeOps", "expanded bias_adds", 1),
    ("FastMath", "fast ops substituted", 1),
    # nothing to legalize for llvm, no lets, no unused or inlinable globals in this model
    ("Legalize", "legalized calls", 0),
    ("ToBasicBlockNormalForm", "let-bound expressions", 0),
    ("RemoveUnusedFunctions", "removed functions", 0),
    ("InlineGlobals", "inlined uses", 0),
    # multiply(divide(1, sqrt(var + eps)), gamma) of the batch_norm expansion -> rsqrt
    ("SimplifyExpr", "simplified expressions", 2),
    # main and the 6 fused groups (see test_fuse_and_label_counts_agree): with unbound
    # parameters FoldScaleAxis leaves TVM's squeeze/expand_dims of the batch_norm scale
    ("LabelOps", "labelled functions", 7),
])
def test_optimize_report_shows_pass_statistics(optimize_report, pass_name, stat, count):
    stats = _stats(optimize_report, pass_name)
    assert stat in stats, f"{pass_name} reported {stats}"
    assert stats[stat] == count, f"{pass_name} reported {stats}"


def test_fuse_and_label_counts_agree(optimize_report):
    fused = _stats(optimize_report, "FuseOps")["fused groups"]
    assert fused >= 2
    # LabelOps labels main and every primitive function
    assert _stats(optimize_report, "LabelOps")["labelled functions"] == fused + 1


def _run_with_stats(p, mod):
    with PassContext(opt_level=4, instruments=[tvm.instrument.PassTimingInstrument()]):
        out = p(mod)
        report = tvm.instrument.PassTimingInstrument.render()
    return out, _stats(report, p.info.name)


def test_a_normal_form_counts_bindings_and_graph_form_removes_them():
    x = relay.var("x", shape=(2,), dtype="float32")
    y = relay.add(x, x)
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.multiply(y, relay.exp(y))))
    anf, stats = _run_with_stats(relay.transform.ToANormalForm(), mod)
    assert stats == {"let-bound expressions": 3}
    _, stats = _run_with_stats(relay.transform.ToGraphNormalForm(), anf)
    assert stats["removed let bindings"] == 3


def test_dead_code_elimination_counts_removed_bindings():
    x = relay.var("x", shape=(2,), dtype="float32")
    a, b = relay.var("a"), relay.var("b")
    body = relay.Let(a, relay.add(x, x), relay.Let(b, relay.exp(x), relay.multiply(x, x)))
    mod = tvm.IRModule.from_expr(relay.Function([x], body))
    _, stats = _run_with_stats(relay.transform.DeadCodeElimination(), mod)
    assert stats == {"removed bindings": 2}


def test_remove_unused_functions_and_lambda_lift_counts():
    x = relay.var("x", shape=(2,), dtype="float32")
    mod = tvm.IRModule.from_expr(relay.Function([x], x))
    mod[relay.GlobalVar("unused")] = relay.Function([x], relay.add(x, x))
    _, stats = _run_with_stats(relay.transform.RemoveUnusedFunctions(), mod)
    assert stats == {"removed functions": 1}
    y = relay.var("y", shape=(2,), dtype="float32")
    f = relay.Function([y], relay.add(y, x))
    lifted = tvm.IRModule.from_expr(relay.Function([x], relay.Call(f, [x])))
    _, stats = _run_with_stats(relay.transform.LambdaLift(), lifted)
    assert stats == {"lifted functions": 1}


def test_statistics_cost_nothing_without_a_listener():
    mod = _small_model()
    out = relay.transform.InferType()(mod)
    assert relay.transform.SimplifyInference()(out)["main"] is not out["main"]


@pytest.mark.parametrize("name, needs, establishes, breaks", [
    ("InferType", set(), {"typed"}, set()),
    ("ToANormalForm", set(), {"anf"}, {"gnf"}),
    ("ToGraphNormalForm", set(), set(), {"anf"}),
    ("ToBasicBlockNormalForm", set(), set(), {"gnf"}),
    ("FuseOps", {"typed"}, {"fused"}, set()),
    ("DefuseOps", {"typed"}, set(), {"fused"}),
    ("SimplifyInference", {"typed"}, set(), set()),
    ("DeadCodeElimination", {"typed"}, set(), set()),
    ("AlterOpLayout", {"typed"}, set(), set()),
])
def test_contracts_declared(name, needs, establishes, breaks):
    info = get_pass(name).info
    assert (set(info.needs), set(info.establishes), set(info.breaks)) == \
        (needs, establishes, breaks)


def test_every_pass_requiring_infer_type_needs_typed():
    from minitvm.transform.registry import list_passes

    for entry in list_passes():
        try:
            p = get_pass(entry.name)
        except TypeError:  # a factory with mandatory arguments
            continue
        if p.kind != "sequential" and "InferType" in p.info.required:
            assert "typed" in p.info.needs, entry.name


def test_infer_type_is_registered_by_its_module():
    from minitvm.transform.registry import get_pass_entry

    entry = get_pass_entry("InferType")
    assert entry.module == "minitvm.relay.transform.infer_type"
    assert entry.factory is relay.transform.InferType
    assert get_pass("InferType").info.keeps == frozenset({"anf", "gnf", "fused"})


def test_contracts_hold_under_verify_each():
    mod = _small_model()
    with PassContext(opt_level=3, config={"transform.verify_each": True}):
        anf = relay.transform.ToANormalForm()(mod)
        assert check_property("anf", anf) is None
        fused = tvm.transform.Sequential([relay.transform.SimplifyInference(),
                                          relay.transform.FuseOps()])(mod)
        assert check_property("fused", fused) is None
        assert check_property("fused", relay.transform.DefuseOps()(fused)) is not None


def test_infer_type_counts_checked_functions_and_reuses_types():
    mod = _small_model()
    typed, stats = _run_with_stats(relay.transform.InferType(), mod)
    assert stats == {"type-checked functions": 1}
    _, stats = _run_with_stats(relay.transform.InferType(), typed)
    assert stats == {"type-checked functions": 0}  # nothing stale: types reused

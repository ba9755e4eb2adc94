"""explain(): whether each pass of a pipeline would run, and why."""

import minitvm as tvm
from minitvm.transform import PassContext, Sequential, explain, register_pass, unregister_pass


def noop(name, opt_level=0, required=None):
    @tvm.transform.module_pass(opt_level=opt_level, name=name, required=required)
    def run(mod, ctx):
        return mod

    return run


def seed_seq():
    return Sequential([noop("FoldConstant", 2), noop("EliminateCommonSubexpr", 3),
                       noop("FuseOps", 0)])


def test_seed002_question_default_level():
    ex = explain(seed_seq())
    assert [e.runs for e in ex] == [True, False, True]
    assert "opt_level 3 > context opt_level 2" in ex.entry("EliminateCommonSubexpr").reason
    assert "[skip] EliminateCommonSubexpr" in str(ex)


def test_level3_and_disabled():
    assert explain(seed_seq(), PassContext(opt_level=3)).would_run("EliminateCommonSubexpr")
    ex = explain(seed_seq(), PassContext(opt_level=3, disabled_pass=["EliminateCommonSubexpr"]))
    assert ex.entry("EliminateCommonSubexpr").reason == "disabled by disabled_pass"


def test_required_and_disabled_beats_required():
    ex = explain(seed_seq(), PassContext(required_pass=["EliminateCommonSubexpr"]))
    assert "forced by required_pass" in ex.entry("EliminateCommonSubexpr").reason
    ex = explain(seed_seq(), PassContext(required_pass=["EliminateCommonSubexpr"],
                                         disabled_pass=["EliminateCommonSubexpr"]))
    assert not ex.would_run("EliminateCommonSubexpr")
    assert "disabled_pass beats required_pass" in ex.entry("EliminateCommonSubexpr").reason


def test_uses_current_context():
    with PassContext(opt_level=3):
        assert explain(seed_seq()).would_run("EliminateCommonSubexpr")


def test_required_pass_runs_even_when_disabled_trap():
    register_pass("Prep", lambda: noop("Prep", 4), override=True)
    try:
        seq = Sequential([noop("Main", 1, required=["Prep"])])
        ex = explain(seq, PassContext(disabled_pass=["Prep"]))
        prep = ex.entry("Prep")
        assert prep.runs and "runs even though disabled" in prep.reason
        ex = explain(seq)
        assert "runs even though its opt_level 4 > 2" in ex.entry("Prep").reason
    finally:
        unregister_pass("Prep")


def test_nested_sequential_opt_level_trap():
    inner = Sequential([noop("A"), noop("B")], opt_level=3, name="Group")
    ex = explain(Sequential([inner, noop("C")]))
    g = ex.entry("Group")
    assert not g.runs and "whole group of 2 passes is skipped" in g.reason
    assert "TVM trap" in g.reason
    assert [e.name for e in ex] == ["Group", "C"]


def test_nested_running_group_lists_children_indented():
    inner = Sequential([noop("A"), noop("B", 3)], name="Group")
    ex = explain(Sequential([inner]))
    assert [(e.name, e.depth, e.runs) for e in ex] == [("Group", 1, True), ("A", 2, True),
                                                      ("B", 2, False)]
    assert "    [skip] B" in str(ex)


def test_top_level_opt_level_note_and_direct_call():
    ex = explain(Sequential([noop("A")], opt_level=4))
    assert any("ignored when it is called directly" in n for n in ex.notes)
    ex = explain(noop("Heavy", 4))
    assert ex.entry("Heavy").runs
    assert "a pass called directly always runs" in ex.entry("Heavy").reason


def test_instrument_veto_with_module():
    from minitvm import relay

    @tvm.instrument.pass_instrument
    class Veto:
        def should_run(self, mod, info):
            return info.name != "FuseOps"

    x = relay.var("x", shape=(1,))
    mod = tvm.IRModule.from_expr(relay.Function([x], x))
    ex = explain(seed_seq(), PassContext(instruments=[Veto()]), mod=mod)
    assert "vetoed by instrument should_run: Veto" in ex.entry("FuseOps").reason


def test_function_pass_infer_type_listed():
    from minitvm import relay

    @relay.transform.function_pass(opt_level=1, name="F")
    def f(func, mod, ctx):
        return func

    ex = explain(Sequential([f]))
    assert [e.name for e in ex] == ["F", "InferType"]


def test_explain_pipeline_text():
    ex = explain("InferType")
    assert ex.would_run("InferType")


def test_bisect_limit_in_explain():
    ctx = PassContext(config={"transform.bisect_limit": 1})
    ex = explain(seed_seq(), ctx)
    assert [e.runs for e in ex] == [True, False, False]
    assert "beyond transform.bisect_limit=1" in ex.entry("FuseOps").reason

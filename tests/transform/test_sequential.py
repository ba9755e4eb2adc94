"""TVM's rules for running passes: direct calls, Sequential filtering, required passes."""

import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.transform import PassContext, Sequential


def small_module():
    x = relay.var("x", shape=(2, 3), dtype="float32")
    return tvm.IRModule.from_expr(relay.Function([x], relay.add(x, x)))


def logging_pass(name, opt_level, log, required=None):
    @tvm.transform.module_pass(opt_level=opt_level, name=name, required=required)
    def run(mod, ctx):
        log.append(name)
        return mod

    return run


@pytest.fixture
def registered(request):
    """Register logging passes by name for the duration of one test."""
    names = []

    def register(name, opt_level, log):
        tvm.transform.register_pass(name, lambda: logging_pass(name, opt_level, log),
                                    override=True)
        names.append(name)

    yield register
    for n in names:
        tvm.transform.unregister_pass(n)


def seed_like(log):
    return Sequential([logging_pass("FoldConstant", 2, log),
                       logging_pass("EliminateCommonSubexpr", 3, log),
                       logging_pass("FuseOps", 0, log)])


def test_default_opt_level_skips_level3_pass():
    log = []
    seed_like(log)(small_module())
    assert log == ["FoldConstant", "FuseOps"]


def test_opt_level3_runs_it():
    log = []
    with PassContext(opt_level=3):
        seed_like(log)(small_module())
    assert log == ["FoldConstant", "EliminateCommonSubexpr", "FuseOps"]


def test_disabled_pass_disables_it():
    log = []
    with PassContext(opt_level=3, disabled_pass=["EliminateCommonSubexpr"]):
        seed_like(log)(small_module())
    assert log == ["FoldConstant", "FuseOps"]


def test_direct_call_ignores_opt_level_and_disabled():
    log = []
    p = logging_pass("Heavy", 4, log)
    with PassContext(opt_level=0, disabled_pass=["Heavy"]):
        p(small_module())
    assert log == ["Heavy"]


def test_required_pass_overrides_opt_level():
    log = []
    with PassContext(opt_level=2, required_pass=["EliminateCommonSubexpr"]):
        seed_like(log)(small_module())
    assert "EliminateCommonSubexpr" in log


def test_disabled_beats_required():
    log = []
    with PassContext(opt_level=3, required_pass=["EliminateCommonSubexpr"],
                     disabled_pass=["EliminateCommonSubexpr"]):
        seed_like(log)(small_module())
    assert "EliminateCommonSubexpr" not in log


def test_info_required_built_from_registry_and_run_first(registered):
    log = []
    registered("Prep", 3, log)
    seq = Sequential([logging_pass("Main", 1, log, required=["Prep"])])
    seq(small_module())
    assert log == ["Prep", "Main"]


def test_required_runs_even_when_disabled_and_above_level(registered):
    # TVM's trap: required passes are not filtered by disabled_pass or opt_level.
    log = []
    registered("Prep", 4, log)
    seq = Sequential([logging_pass("Main", 1, log, required=["Prep"])])
    with PassContext(opt_level=1, disabled_pass=["Prep"]):
        seq(small_module())
    assert log == ["Prep", "Main"]


def test_required_not_deduplicated(registered):
    log = []
    registered("Prep", 0, log)
    seq = Sequential([logging_pass("A", 0, log, required=["Prep"]),
                      logging_pass("B", 0, log, required=["Prep"])])
    seq(small_module())
    assert log == ["Prep", "A", "Prep", "B"]


def test_required_of_direct_call_not_resolved(registered):
    log = []
    registered("Prep", 0, log)
    logging_pass("Main", 0, log, required=["Prep"])(small_module())
    assert log == ["Main"]


def test_unknown_required_name_is_clear_error():
    seq = Sequential([logging_pass("Main", 0, [], required=["NoSuchPass"])])
    with pytest.raises(ValueError, match="Cannot use NoSuchPass to create the pass"):
        seq(small_module())


def test_nested_sequential_own_opt_level_skips_group():
    log = []
    inner = Sequential([logging_pass("A", 0, log)], opt_level=3, name="Group")
    Sequential([inner, logging_pass("B", 0, log)])(small_module())
    assert log == ["B"]


def test_top_level_sequential_opt_level_ignored():
    log = []
    Sequential([logging_pass("A", 0, log)], opt_level=4)(small_module())
    assert log == ["A"]


def test_disabling_nested_sequential_by_name():
    log = []
    inner = Sequential([logging_pass("A", 0, log)], name="Group")
    with PassContext(disabled_pass=["Group"]):
        Sequential([inner, logging_pass("B", 0, log)])(small_module())
    assert log == ["B"]


def test_inner_passes_filtered_by_same_ctx():
    log = []
    inner = Sequential([logging_pass("A", 3, log), logging_pass("C", 0, log)], name="Group")
    Sequential([inner])(small_module())
    assert log == ["C"]


def test_explicit_ctx_argument_is_used():
    log = []
    seed_like(log)(small_module(), PassContext(opt_level=3))
    assert "EliminateCommonSubexpr" in log


def test_passes_must_be_a_list():
    with pytest.raises(TypeError, match="passes must be a list of Pass objects"):
        Sequential(logging_pass("A", 0, []))
    with pytest.raises(TypeError, match="is not a Pass"):
        Sequential([lambda m: m])
    with pytest.raises(TypeError, match="list/tuple"):
        Sequential([], required="InferType")


def test_sequential_does_not_mutate_input():
    mod = small_module()
    before = dict(mod.functions)

    @tvm.transform.module_pass(opt_level=0)
    def replace(m, ctx):
        x = relay.var("y", shape=(1,))
        m["main"] = relay.Function([x], x)
        return m

    out = Sequential([replace])(mod)
    assert mod.functions == before
    assert out["main"] is not mod["main"]


def test_module_pass_result_type_checked():
    @tvm.transform.module_pass(opt_level=0)
    def bad(m, ctx):
        return None

    with pytest.raises(TypeError, match="returned NoneType, expected an IRModule"):
        bad(small_module())


def test_infer_type_required_runs_and_types():
    @tvm.transform.module_pass(opt_level=0, required=["InferType"])
    def needs_types(m, ctx):
        assert m["main"].body.checked_type is not None
        return m

    out = Sequential([needs_types])(small_module())
    assert out["main"].body.checked_type.shape == (2, 3)


def test_pass_str_and_describe():
    p = logging_pass("A", 1, [])
    assert p.describe() == "Run Module pass: A at the optimization level 1"
    assert str(p) == p.describe()
    seq = Sequential([p, p], opt_level=2, name="S")
    assert seq.describe() == ("Run Sequential pass: S at the optimization level 2. The passes "
                              "will be executed are: [A A ]")
    assert str(seq) == "S(opt_level=2)[A,A]"


def test_apply_pass_to_function_only_touches_matching_functions():
    @relay.transform.function_pass(opt_level=0, name="ToMul")
    def to_mul(func, mod, ctx):
        return relay.Function(func.params, relay.multiply(*func.body.args))

    mod = small_module()
    mod["other"] = mod["main"]
    out = tvm.transform.ApplyPassToFunction(to_mul, "oth.*")(mod)
    assert out["other"].body.op.name == "multiply"
    assert out["main"].body.op.name == "add"
    with pytest.raises(ValueError, match="no function matches"):
        tvm.transform.ApplyPassToFunction(to_mul, "zzz", True)(mod)

"""The pass registry and textual pipelines."""

import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.transform import (
    PipelineSyntaxError,
    Sequential,
    get_pass,
    list_passes,
    parse_pipeline,
    register_pass,
    unregister_pass,
)


def noop(name, opt_level=0):
    @tvm.transform.module_pass(opt_level=opt_level, name=name)
    def run(mod, ctx):
        return mod

    return run


@pytest.fixture
def fake_passes():
    """A few registered stand-ins: one with arguments, as FuseOps(fuse_opt_level=...)."""

    @register_pass("TFold", override=True)
    def TFold():
        """Fold test constants."""
        return noop("TFold", 2)

    @register_pass("TCse", override=True)
    def TCse():
        return noop("TCse", 3)

    @register_pass("TFuse", override=True)
    def TFuse(fuse_opt_level=-1, name_hint="x"):
        p = noop("TFuse", 0)
        p.level = fuse_opt_level
        return p

    yield TFold, TCse, TFuse
    for n in ("TFold", "TCse", "TFuse"):
        unregister_pass(n)


def test_every_registered_pass_key_equals_its_info_name():
    for entry in list_passes():
        try:
            p = entry.factory()
        except TypeError:  # factories with mandatory arguments
            continue
        # a dialect may qualify a name another dialect already uses (relax.transform.FoldConstant)
        assert p.info.name == entry.name or entry.name.endswith("." + p.info.name), entry.name


def test_list_passes_fields(fake_passes):
    entry = {e.name: e for e in list_passes()}["TFold"]
    assert (entry.opt_level, entry.kind, entry.required) == (2, "module", [])
    assert entry.description == "Fold test constants."


def test_infer_type_resolvable_by_name():
    assert get_pass("InferType").info.name == "InferType"


def test_get_pass_with_arguments(fake_passes):
    p = get_pass("TFuse", fuse_opt_level=2)
    assert p.level == 2
    with pytest.raises(TypeError, match="cannot build pass 'TFuse'"):
        get_pass("TFuse", bogus=1)
    with pytest.raises(ValueError, match="Cannot use Nope to create the pass"):
        get_pass("Nope")


def test_duplicate_registration_is_error(fake_passes):
    with pytest.raises(ValueError, match="already registered"):
        register_pass("TFold", lambda: noop("TFold"))


def test_register_instance_and_class():
    @tvm.transform.module_pass(opt_level=1, name="TClass")
    class TClass:
        def __init__(self, k=1):
            self.k = k

        def transform_module(self, mod, ctx):
            return mod

    register_pass(TClass)
    register_pass(noop("TInst", 1))
    try:
        assert get_pass("TClass", k=4).k == 4
        assert get_pass("TInst").info.name == "TInst"
        assert str(Sequential([TClass(k=4)])) == "TClass(k=4)"
    finally:
        unregister_pass("TClass")
        unregister_pass("TInst")


def test_factory_records_non_default_args(fake_passes):
    _, _, TFuse = fake_passes
    assert str(Sequential([TFuse()])) == "TFuse"
    assert str(Sequential([TFuse(fuse_opt_level=2)])) == "TFuse(fuse_opt_level=2)"
    assert str(Sequential([TFuse(2, "y")])) == "TFuse(fuse_opt_level=2, name_hint='y')"


def test_parse_and_print_round_trip(fake_passes):
    text = "TFold,TCse,TFuse(fuse_opt_level=2)"
    seq = parse_pipeline(text)
    assert isinstance(seq, Sequential)
    assert [p.info.name for p in seq.passes] == ["TFold", "TCse", "TFuse"]
    assert seq.passes[2].level == 2
    assert str(seq) == text


def test_nested_sequentials_round_trip(fake_passes):
    text = "TFold,Group(opt_level=3)[TCse,sequential[TFuse]],TFold"
    seq = parse_pipeline(text)
    group = seq.passes[1]
    assert group.info.name == "Group" and group.info.opt_level == 3
    assert group.passes[1].info.name == "sequential"
    assert str(seq) == text
    assert str(parse_pipeline(str(seq))) == text


def test_named_top_level_sequential_round_trip(fake_passes):
    seq = Sequential([get_pass("TFold")], opt_level=1, name="Mine", required=["InferType"])
    text = str(seq)
    assert text == "Mine(opt_level=1, required=['InferType'])[TFold]"
    again = parse_pipeline(text)
    assert again.info.name == "Mine" and again.info.required == ["InferType"]


def test_odd_names_are_quoted():
    seq = Sequential([noop(" FoldExplicitPadding"), noop("qnn.Legalize")])
    assert str(seq) == "' FoldExplicitPadding',qnn.Legalize"


def test_parse_errors_are_clear(fake_passes):
    with pytest.raises(PipelineSyntaxError, match="Cannot use Missing to create the pass"):
        parse_pipeline("TFold,Missing")
    with pytest.raises(PipelineSyntaxError, match="cannot parse pipeline text"):
        parse_pipeline("TFold,,")
    with pytest.raises(PipelineSyntaxError, match="must be given by keyword"):
        parse_pipeline("TFuse(2)")
    with pytest.raises(PipelineSyntaxError, match="not a literal"):
        parse_pipeline("TFuse(fuse_opt_level=x)")
    with pytest.raises(PipelineSyntaxError, match="takes opt_level and required"):
        parse_pipeline("G(level=3)[TFold]")


def test_empty_pipeline():
    assert parse_pipeline("").passes == []


def test_parsed_pipeline_runs_with_infer_type():
    x = relay.var("x", shape=(2,), dtype="float32")
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.add(x, x)))
    out = parse_pipeline("InferType")(mod)
    assert out["main"].body.checked_type == relay.TensorType((2,), "float32")

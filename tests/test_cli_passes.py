"""The `minitvm passes`, `minitvm reproduce` and `minitvm bisect` commands."""

import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.cli import main
from minitvm.transform import Sequential, register_pass, unregister_pass


def noop(name, opt_level):
    @tvm.transform.module_pass(opt_level=opt_level, name=name)
    def run(mod, ctx):
        return mod

    return run


def test_passes_all_lists_registry(capsys):
    assert main(["passes", "--all"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split() == ["name", "opt", "kind", "required", "description"]
    assert any(line.split()[:3] == ["InferType", "0", "module"] for line in out.splitlines())


@pytest.mark.parametrize("level,mark", [(2, "[skip]"), (3, "[run ]")])
def test_passes_explains_build_pipeline(monkeypatch, capsys, level, mark):
    seq = Sequential([noop("FoldConstant", 2), noop("EliminateCommonSubexpr", 3),
                      noop("FuseOps", 0)])
    monkeypatch.setattr("minitvm.cli_passes.default_pipeline", lambda lvl: seq)
    assert main(["passes", "--opt-level", str(level)]) == 0
    out = capsys.readouterr().out
    assert f"{mark} EliminateCommonSubexpr" in out
    assert "[run ] FuseOps" in out
    assert f"opt_level={level}" in out


def test_passes_without_build_hook_lists_levels(monkeypatch, capsys):
    monkeypatch.setattr("minitvm.cli_passes.default_pipeline", lambda lvl: None)
    assert main(["passes", "--opt-level", "0"]) == 0
    out = capsys.readouterr().out
    assert "not available" in out
    assert any(line.split()[:2] == ["InferType", "0"] and line.rstrip().endswith("run")
               for line in out.splitlines())


@register_pass("CliWrongDouble")
def CliWrongDouble():
    """x + x -> x * 3 (deliberately wrong)."""

    @relay.transform.function_pass(opt_level=0, name="CliWrongDouble")
    def run(func, mod, ctx):
        class M(relay.ExprMutator):
            def visit_call(self, call):
                c = super().visit_call(call)
                if c.op.name == "add" and c.args[0] is c.args[1]:
                    return relay.multiply(c.args[0], relay.const(3.0))
                return c

        return M().visit(func)

    return run


def test_bisect_command_finds_wrong_pass(tmp_path, capsys):
    x = relay.var("x", shape=(3,), dtype="float32")
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.add(x, x)))
    f = tmp_path / "m.relay"
    f.write_text(mod.astext())
    assert main(["bisect", str(f), "--pipeline", "InferType,CliWrongDouble"]) == 1
    out = capsys.readouterr().out
    assert "first pass whose outputs differ: #2 CliWrongDouble" in out
    assert main(["bisect", str(f), "--pipeline", "InferType"]) == 0


def test_reproduce_command(tmp_path, capsys):
    @tvm.transform.module_pass(opt_level=0, name="CliBoom")
    def boom(mod, ctx):
        raise TypeError("boom at the second call")

    register_pass(boom)
    try:
        x = relay.var("x", shape=(3,), dtype="float32")
        mod = tvm.IRModule.from_expr(relay.Function([x], x))
        cfg = {"transform.reproducer_dir": str(tmp_path)}
        with tvm.transform.PassContext(config=cfg):
            with pytest.raises(TypeError) as info:
                Sequential([boom])(mod)
        assert main(["reproduce", info.value.reproducer]) == 1
        out = capsys.readouterr().out
        assert "reproduced: TypeError: boom at the second call" in out
    finally:
        unregister_pass("CliBoom")


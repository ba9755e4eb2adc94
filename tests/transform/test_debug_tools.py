"""Pipeline debugging: verify-each, crash reproducers, IR dumps, bisect limit, immutability."""

import os
import subprocess
import sys

import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.transform import PassContext, Sequential


def small_module():
    x = relay.var("x", shape=(2, 3), dtype="float32")
    return tvm.IRModule.from_expr(relay.Function([x], relay.add(x, x)))


def noop(name, opt_level=0):
    @tvm.transform.module_pass(opt_level=opt_level, name=name)
    def run(mod, ctx):
        return mod

    return run


# Module-level passes so that a reproducer can find them again by importing this file.
@tvm.transform.module_pass(opt_level=0, name="ExplodingPass")
def exploding_pass(mod, ctx):
    raise ValueError("exploding pass hit a node it cannot handle")


@tvm.transform.module_pass(opt_level=0, name="DoubleBind")
def double_bind(mod, ctx):
    """Deliberately broken: binds the same variable as a parameter and in a let."""
    f = mod["main"]
    p = f.params[0]
    mod["main"] = relay.Function(f.params, relay.Let(p, f.body, p))
    return mod


@tvm.transform.module_pass(opt_level=0, name="WrongTypes")
def wrong_types(mod, ctx):
    """Deliberately broken: caches a wrong type on an expression."""
    f = mod["main"]
    body = relay.add(f.params[0], f.params[0])
    body._checked_type = relay.TensorType((7,), "float32")
    f.params[0]._checked_type = relay.TensorType((2, 3), "float32")
    mod["main"] = relay.Function(f.params, body)
    return mod


# ------------------------------------------------------------------------------- verify-each
def test_verify_each_names_pass_with_unbound_variable():
    unbind = tvm.transform.ModulePass(lambda m, c: _unbind(m), tvm.transform.PassInfo(0, "Unbind"))
    seq = Sequential([noop("Fine"), unbind])
    with PassContext(config={"transform.verify_each": True}):
        with pytest.raises(tvm.transform.WellFormedError,
                           match="(?s)pass 'Unbind' produced ill-formed IR.*%stray is used but "
                                 "never bound"):
            seq(small_module())


def _unbind(mod):
    """Deliberately broken: uses a variable that nothing binds."""
    f = mod["main"]
    stray = relay.var("stray", shape=(2, 3), dtype="float32")
    mod["main"] = relay.Function(f.params, relay.add(f.body, stray))
    return mod


def test_verify_each_duplicate_binding():
    with PassContext(config={"transform.verify_each": True}):
        with pytest.raises(tvm.transform.WellFormedError,
                           match="(?s)DoubleBind.*%x is bound more than once"):
            Sequential([double_bind])(small_module())


def test_verify_each_inconsistent_types():
    with PassContext(config={"transform.verify_each": True}):
        with pytest.raises(tvm.transform.WellFormedError,
                           match="(?s)WrongTypes.*add is typed Tensor\\[\\(7\\), float32\\] but its "
                                 "operands give"):
            wrong_types(relay.transform.InferType()(small_module()))


def test_without_verify_each_broken_pass_goes_unnoticed():
    out = Sequential([double_bind])(small_module())
    assert isinstance(out["main"].body, relay.Let)


def test_verify_each_handles_deep_chain():
    x = relay.var("x", shape=(1,), dtype="float32")
    y = x
    for _ in range(100_000):
        y = relay.add(y, x)
    mod = tvm.IRModule.from_expr(relay.Function([x], y))
    problems = tvm.transform.debug.well_formed_problems(mod)
    assert problems == []
    assert tvm.transform.check_property("gnf", mod) is None


def test_checks_handle_deep_let_chain():
    x = relay.var("x", shape=(1,), dtype="float32")
    body = x
    vs = [relay.var(f"v{i}") for i in range(100_000)]
    body = vs[-1]
    for i in range(len(vs) - 1, -1, -1):
        body = relay.Let(vs[i], relay.add(x, x) if i == 0 else vs[i - 1], body)
    mod = tvm.IRModule.from_expr(relay.Function([x], body))
    assert tvm.transform.debug.well_formed_problems(mod) == []
    assert tvm.transform.check_property("anf", mod) is None
    assert "let binding" in tvm.transform.check_property("gnf", mod)


# ------------------------------------------------------------------------------- reproducer
def test_crash_reproducer_written_and_reproduces(tmp_path):
    mod = relay.transform.InferType()(small_module())
    ctx = PassContext(opt_level=3, disabled_pass=["Nothing"],
                      config={"transform.reproducer_dir": str(tmp_path)})
    with ctx:
        with pytest.raises(ValueError, match="exploding pass hit a node") as info:
            Sequential([noop("Before"), exploding_pass])(mod)
    err = info.value
    path = err.reproducer
    assert os.path.dirname(path) == str(tmp_path)
    notes = "\n".join(getattr(err, "__notes__", []))
    assert f"minitvm reproduce {path}" in notes
    assert "passes run before it: Before" in notes
    text = open(path).read()
    assert "//! pipeline: ExplodingPass" in text
    assert '"opt_level": 3' in text and '"disabled_pass": ["Nothing"]' in text
    assert "add(%x, %x)" in text
    # re-run in process
    with pytest.raises(ValueError, match="exploding pass hit a node"):
        tvm.transform.reproduce(path)
    # and from the command line
    proc = subprocess.run([sys.executable, "-m", "minitvm", "reproduce", path],
                          capture_output=True, text=True, cwd=_repo_root())
    assert proc.returncode == 1, proc.stderr
    assert "reproduced: ValueError: exploding pass hit a node" in proc.stdout


def _repo_root():
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_reproducer_can_be_switched_off(tmp_path):
    with PassContext(config={"transform.crash_reproducer": False,
                             "transform.reproducer_dir": str(tmp_path)}):
        with pytest.raises(ValueError) as info:
            exploding_pass(small_module())
    assert not hasattr(info.value, "reproducer")
    assert os.listdir(tmp_path) == []


def test_not_a_reproducer(tmp_path):
    p = tmp_path / "x.relay"
    p.write_text("def @main() { 1 }")
    with pytest.raises(ValueError, match="is not a minitvm reproducer"):
        tvm.transform.reproduce(str(p))


# ------------------------------------------------------------------------------- IR dumps
def test_dump_ir_dir_writes_numbered_files(tmp_path):
    d = tmp_path / "dumps"
    with PassContext(config={"transform.dump_ir_dir": str(d)}):
        Sequential([relay.transform.InferType(), noop("Second")])(small_module())
    assert sorted(os.listdir(d)) == ["001_InferType.relay", "002_Second.relay"]
    assert "/* ty=Tensor[(2, 3), float32] */" in (d / "001_InferType.relay").read_text()


def test_dump_ir_dir_prints_input_of_failing_pass(tmp_path, capsys):
    d = tmp_path / "dumps"
    cfg = {"transform.dump_ir_dir": str(d), "transform.reproducer_dir": str(tmp_path)}
    with PassContext(config=cfg):
        with pytest.raises(ValueError):
            Sequential([noop("First"), exploding_pass])(small_module())
    err = capsys.readouterr().err
    assert "IR received by the failing pass 'ExplodingPass'" in err
    assert "add(%x, %x)" in err
    assert "001_ExplodingPass.input.relay" in os.listdir(d)


# ------------------------------------------------------------------------------- bisect limit
def test_bisect_limit_runs_only_first_n(capsys):
    log = []

    def logging(name):
        @tvm.transform.module_pass(opt_level=0, name=name)
        def run(mod, ctx):
            log.append(name)
            return mod

        return run

    seq = Sequential([logging("A"), Sequential([logging("B"), logging("C")]), logging("D")])
    with PassContext(config={"transform.bisect_limit": 2}):
        seq(small_module())
    assert log == ["A", "B"]
    err = capsys.readouterr().err
    assert "BISECT: running pass (1) A" in err and "BISECT: running pass (2) B" in err
    assert "BISECT: NOT running pass (3) C" in err and "BISECT: NOT running pass (4) D" in err


def test_bisect_limit_count_restarts_per_pipeline():
    log = []

    @tvm.transform.module_pass(opt_level=0, name="A")
    def a(mod, ctx):
        log.append("A")
        return mod

    with PassContext(config={"transform.bisect_limit": 1}):
        a(small_module())
        a(small_module())
    assert log == ["A", "A"]


# ------------------------------------------------------------------------------- immutability
def test_immutable_module_check():
    @tvm.transform.module_pass(opt_level=0, name="Sneaky")
    def sneaky(mod, ctx):
        return mod

    inp = small_module()

    class Mutating(tvm.transform.ModulePass):
        def _run(self, mod, ctx):
            x = relay.var("z", shape=(1,))
            mod["main"] = relay.Function([x], x)  # mutates its input in place
            return mod

    with PassContext(config={"testing.immutable_module": True}):
        sneaky(inp)  # fine
        with pytest.raises(RuntimeError, match="Immutable module has been modified in pass: M"):
            Mutating(None, tvm.transform.PassInfo(0, "M"))(inp)

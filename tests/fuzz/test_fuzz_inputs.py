"""Parser mutation fuzzing and damaged library files: a clear error or a correct result,
never another exception, a hang or a dead process; the check-pass command."""

import io

from minitvm.cli import main
from minitvm.testing.fuzz.library_fuzz import fuzz_library
from minitvm.testing.fuzz.parser_fuzz import check_text, fuzz_parser


def test_parser_mutations_give_parse_errors_only():
    report = fuzz_parser(1500, seed=5, programs=20)
    assert report.total == 1500 and report.parse_errors > 500
    assert not report.failures, report.failures[:3]
    assert report.slowest < 5


def test_known_hostile_texts():
    head = '#[version = "0.0.5"]\n'
    for text in [head + "def @main() { " + "(" * 20000 + "1" + ")" * 20000 + " }",
                 head + "def @main(%x: " + "(" * 5000 + "float32" + ",)" * 5000 + ") { %x }",
                 head + "def @main() { 1" + "0" * 5000 + " }",
                 head + "def @main() { meta[relay.Constant][0] }\n#[metadata]\n" + "{" * 9999]:
        assert check_text(text)[0] in ("parsed", "parse_error", "type_error")


def test_damaged_libraries_give_value_errors(tmp_path):
    report = fuzz_library(40, str(tmp_path), seed=1)
    assert report.total == 40 and not report.failures, report.failures[:3]


def test_check_pass_command(tmp_path, capsys):
    assert main(["check-pass", "FoldConstant", "--programs", "4"]) == 0
    assert "4 passed every check" in capsys.readouterr().out
    user = tmp_path / "my_pass.py"
    user.write_text(
        "from minitvm import relay\n"
        "from minitvm.relay.expr_functor import ExprMutator\n"
        "from minitvm.relay.transform import function_pass\n"
        "from minitvm.transform.registry import register_pass\n\n"
        "class _Swap(ExprMutator):\n"
        "    def visit_call(self, call):\n"
        "        new = super().visit_call(call)\n"
        "        if getattr(new.op, 'name', '') == 'subtract':\n"
        "            return relay.subtract(new.args[1], new.args[0])\n"
        "        return new\n\n"
        "@register_pass('MyBrokenSwap')\n"
        "def MyBrokenSwap():\n"
        "    return function_pass(lambda f, m, c: _Swap().visit(f), opt_level=0,\n"
        "                         name='MyBrokenSwap')\n")
    rc = main(["check-pass", "MyBrokenSwap", "--import", str(user), "--programs", "40"])
    out = capsys.readouterr().out
    assert rc == 1 and "mismatch" in out and "re-run one" in out
    assert main(["check-pass", "NoSuchPass", "--programs", "1"]) == 2
    assert "no registered pass named 'NoSuchPass'" in capsys.readouterr().out
    buf = io.StringIO()
    from minitvm.testing.fuzz.check_pass import run_check_pass

    assert run_check_pass(f"{user}:MyBrokenSwap", programs=40, out=buf) == 1


def test_executor_api_abuse_gives_clear_errors_or_correct_outputs():
    from minitvm.testing.fuzz.executor_fuzz import fuzz_executor

    report = fuzz_executor(600, seed=11)
    assert report.ok > 100 and report.clear_errors > 100
    assert not report.failures, report.failures[:3]

"""The README's commands are the CI's commands, and its quick start runs."""

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_readme_commands_match_ci():
    readme = (ROOT / "README.md").read_text()
    first_block = re.search(r"```sh\n(.*?)```", readme, re.S).group(1)
    commands = [line.split("#")[0].strip() for line in first_block.splitlines()]
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert commands[0] == "pip install -e '.[dev]'" and commands[0] in ci
    assert commands[1] == "python -m pytest -n 2 tests" and commands[1] in ci
    assert commands[2] == "minitvm"


def test_readme_quick_start_runs(capsys):
    readme = (ROOT / "README.md").read_text()
    snippet = re.findall(r"```python\n(.*?)```", readme, re.S)[1]
    exec(compile(snippet, "README.md", "exec"), {})
    assert "(1, 8, 32, 32)" in capsys.readouterr().out

"""`minitvm passes` flags: --pipeline, --disabled-pass, --required-pass, and relay.build's
post-pipeline passes."""

import pytest

from minitvm.cli import main
from minitvm.cli_passes import POST_PIPELINE_REASON


def _lines(capsys) -> list[str]:
    return [line.strip() for line in capsys.readouterr().out.splitlines()]


@pytest.mark.parametrize("level", [0, 3])
def test_build_explanation_lists_post_pipeline_passes(capsys, level):
    assert main(["passes", "--opt-level", str(level)]) == 0
    lines = _lines(capsys)
    start = lines.index("then, directly after the Sequential, at every opt_level:")
    post = [line for line in lines[start + 1:] if POST_PIPELINE_REASON in line]
    assert [line.split()[2].rstrip(":") for line in post] == \
        ["InferType", "InlineGlobals", "InferType", "LabelOps"]
    assert all(line.startswith("[run ]") for line in post)
    assert f"[run ] LabelOps: {POST_PIPELINE_REASON}" in lines


def test_disabled_pass_flag_is_repeatable(capsys):
    assert main(["passes", "--opt-level", "3", "--disabled-pass", "FoldConstant",
                 "--disabled-pass", "EliminateCommonSubexpr"]) == 0
    lines = _lines(capsys)
    assert "disabled_pass=['FoldConstant', 'EliminateCommonSubexpr']" in lines[1]
    assert "[skip] FoldConstant: disabled by disabled_pass" in lines
    assert "[skip] EliminateCommonSubexpr: disabled by disabled_pass" in lines
    assert not any(line.startswith("[run ] FoldConstant") for line in lines)


def test_required_pass_flag_forces_a_pass_above_the_level(capsys):
    assert main(["passes", "--opt-level", "3"]) == 0
    assert "[skip] FastMath: opt_level 4 > context opt_level 3" in _lines(capsys)
    assert main(["passes", "--opt-level", "3", "--required-pass", "FastMath"]) == 0
    lines = _lines(capsys)
    assert any(line.startswith("[run ] FastMath: forced by required_pass") for line in lines)


def test_pipeline_flag_explains_the_given_text(capsys):
    assert main(["passes", "--opt-level", "1", "--pipeline", "InferType,FoldConstant"]) == 0
    lines = _lines(capsys)
    assert lines[0] == "pipeline: InferType,FoldConstant"
    assert "[run ] InferType: opt_level 0 <= context opt_level 1" in lines
    assert "[skip] FoldConstant: opt_level 2 > context opt_level 1" in lines
    assert not any(POST_PIPELINE_REASON in line for line in lines)  # not relay.build's


def test_unknown_pass_name_is_warned_about(capsys):
    assert main(["passes", "--pipeline", "InferType", "--disabled-pass", "NoSuchPass"]) == 0
    err = capsys.readouterr().err
    assert "no pass named 'NoSuchPass' is registered or in the pipeline" in err


def test_bad_pipeline_text_is_a_clear_error():
    from minitvm.transform import PipelineSyntaxError

    with pytest.raises(PipelineSyntaxError, match="NoSuchPass"):
        main(["passes", "--pipeline", "InferType,NoSuchPass"])

"""Seed 003 run verbatim (one changed import: minitvm installed as ``tvm``): ``origin_mod.show()``
and the ReluToGelu module print line for line what the seed shows."""

import pathlib
import runpy

import pytest

from minitvm import compat

HERE = pathlib.Path(__file__).parent

ORIGIN = (HERE / "seed003_origin.txt").read_text()  # origin_mod.show() as the seed prints it
RELU = 'relu: R.Tensor((n, 128), dtype="float32") = R.nn.relu(add)'
assert RELU in ORIGIN


def _module(act: str) -> str:
    """The seed's module with the relu binding calling ``act`` (the ReluToGelu print)."""
    return ORIGIN.replace(RELU, RELU.replace("R.nn.relu", f"R.nn.{act}"))


def _significant(text: str) -> list[str]:
    """Lines without blank ones (the seed's header spacing is not significant)."""
    return [line.rstrip() for line in text.splitlines() if line.strip()]


@pytest.fixture
def as_tvm():
    compat.install_as_tvm()
    yield
    compat.uninstall_as_tvm()


def test_seed003_prints_as_shown(as_tvm, capsys):
    ns = runpy.run_path(str(HERE / "seed003_program.py"))
    out = capsys.readouterr().out
    first, second = out.split("# from tvm.script import ir as I")[1:]
    assert _significant("# from tvm.script import ir as I" + first) == _significant(_module("relu"))
    assert _significant("# from tvm.script import ir as I" + second) == \
        _significant(_module("gelu"))
    # the pass built a new module; the original is unchanged
    assert "R.nn.relu(add)" in ns["origin_mod"].script()
    names = [name for name, _ in ns["params"]]
    assert names == ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]  # as TVM returns them


LEGALIZED = (HERE / "seed003_legalized.txt").read_text()  # the module after LegalizeOps


def test_seed003_legalized_prints_as_shown(as_tvm, capsys):
    import tvm
    from tvm import relax

    ns = runpy.run_path(str(HERE / "seed003_program.py"))
    capsys.readouterr()
    origin = ns["origin_mod"]
    before = origin.script()
    mod = relax.transform.LegalizeOps()(origin)
    mod.show()
    out = capsys.readouterr().out
    assert _significant(out) == _significant(LEGALIZED)
    assert origin.script() == before  # the pass built a new module
    tvm.ir.assert_structural_equal(tvm.script.from_source(mod.script()), mod)


FUSED = (HERE / "seed003_fused.txt").read_text()  # after AnnotateTIROpPattern+FuseOps+FuseTIR


def test_seed003_fused_prints_as_shown(as_tvm, capsys):
    import tvm
    from tvm import relax

    ns = runpy.run_path(str(HERE / "seed003_program.py"))
    capsys.readouterr()
    before = relax.transform.LegalizeOps()(ns["origin_mod"])
    legalized = before.script()
    mod = tvm.ir.transform.Sequential(
        [
            tvm.relax.transform.AnnotateTIROpPattern(),
            tvm.relax.transform.FuseOps(),
            tvm.relax.transform.FuseTIR(),
        ]
    )(before)
    mod.show()
    out = capsys.readouterr().out
    assert _significant(out) == _significant(FUSED)
    tvm.ir.assert_structural_equal(tvm.script.from_source(mod.script()), mod)
    assert before.script() == legalized  # the passes built new modules

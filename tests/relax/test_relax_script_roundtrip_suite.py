"""TVMScript round trip over the modules the Relax test suite builds: every TVMScript module
written in the Relax test files, every module the op / TVMScript-pass / frontend tests build
(recorded by ``script_roundtrip_hook`` in a child pytest run), and the regressions the full-suite
run (``MINITVM_RELAX_ROUNDTRIP=1 pytest tests/relax``) found."""

import ast
import os
import pathlib

import pytest
from script_roundtrip_hook import (
    ROUNDTRIP_EXCLUDED,
    ROUNDTRIP_PATHS,
    check_all,
    recording,
    roundtrip_checked,
    roundtrip_failure,
)

import minitvm as tvm
from minitvm import relax, te
from minitvm.ir.module import IRModule
from minitvm.relax.frontend import nn

HERE = pathlib.Path(__file__).parent


def _tvmscript_sources():
    """(file:line, text) of every TVMScript module written in the Relax test files: module-level
    IRModules and the ``@I.ir_module`` source strings the tests parse."""
    out = []
    for path in sorted(HERE.rglob("*.py")):
        if path.name == pathlib.Path(__file__).name:
            continue
        text = path.read_text()
        if "@I.ir_module" not in text:
            continue  # (this runs at collection: parse only the files that can hold one)
        tree = ast.parse(text)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                    "@I.ir_module" in node.value and "class " in node.value:
                out.append((f"{path.relative_to(HERE)}:{node.lineno}", node.value))
    return out


_SOURCES = _tvmscript_sources()


def test_found_tvmscript_sources():
    assert len(_SOURCES) >= 30, [n for n, _ in _SOURCES]


@pytest.mark.parametrize("name,text", _SOURCES, ids=[n for n, _ in _SOURCES])
def test_tvmscript_of_the_tests_round_trips(name, text):
    try:
        mod = tvm.script.from_source(text)
    except Exception:  # noqa: BLE001 - sources of error tests are meant not to parse
        pytest.skip("a fragment, template or error-test input, not a complete module")
    if not isinstance(mod, IRModule):
        pytest.skip("not a module")
    assert check_all([mod]) == []


def test_recorded_modules_of_test_files_round_trip():
    """The fast Relax test files that ``tests/relax/conftest.py`` checks in place: each of their
    tests fails if a well-formed Relax module it built does not round-trip (the whole suite is
    checked the same way with ``MINITVM_RELAX_ROUNDTRIP=1 pytest tests/relax``). The listed
    files exist (a renamed file would silently drop out) and their tests are checked."""
    for rel in ROUNDTRIP_PATHS:
        path = HERE / rel
        assert path.exists(), rel
        files = sorted(path.rglob("test_*.py")) if path.is_dir() else [path]
        assert files, rel
        assert all(roundtrip_checked(f, "test_any") for f in files), rel
    for entry in ROUNDTRIP_EXCLUDED:
        rel, name = entry.split("::")
        assert not roundtrip_checked(HERE / rel, name)
    assert not roundtrip_checked(pathlib.Path(__file__), "test_any") or \
        os.environ.get("MINITVM_RELAX_ROUNDTRIP") == "1"


def test_recording_hook_sees_modules_built_by_passes():
    x = relax.Var("x", relax.TensorStructInfo([2, 3], "float32"))
    with recording() as made:
        bb = relax.BlockBuilder()
        with bb.function("main", [x]):
            with bb.dataflow():
                y = bb.emit_output(bb.emit(relax.op.add(x, x)))
            bb.emit_func_output(y)
        relax.transform.LegalizeOps()(bb.get())
    assert len([m for m in made if m.functions]) >= 2
    assert check_all(made) == []


# ------------------------------------------------------------------ regressions it found
def test_zero_dim_buffers_print_as_empty_tuple_index():
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo([], "float32"))
    with bb.function("main", [x]):
        y = bb.emit_te(lambda a: te.compute((), lambda: a[()] + 1.0, name="inc"), x)
        bb.emit_func_output(y)
    mod = bb.get()
    text = mod.script()
    assert "T.reads(x[()])" in text and "inc[()] = x[()] + T.float32(1.0)" in text
    assert roundtrip_failure(mod) is None


def test_int32_constant_dims_become_int64():
    from minitvm.ir.prim_expr import IntImm

    s = relax.ShapeExpr([IntImm("int32", 24)])
    assert s.values[0].dtype == "int64"
    assert relax.TensorStructInfo([IntImm("int32", 3)], "float32").shape.values[0].dtype == \
        "int64"


def test_names_that_are_not_identifiers_are_printed_legally():
    class Net(nn.Module):
        def __init__(self):
            self.layers = nn.ModuleList([nn.Linear(3, 3)])

        def forward(self, x):
            return self.layers[0](x)

    mod, _ = Net().export_tvm({"forward": {"x": nn.spec.Tensor([1, 3], "float32")}})
    x = relax.Var("0_weight", relax.TensorStructInfo([2], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        bb.emit_func_output(bb.emit(relax.op.exp(x)))
    odd = bb.get()
    text = odd.script()
    assert "v_0_weight: R.Tensor((2,), dtype=\"float32\")" in text
    assert roundtrip_failure(odd) is None
    assert roundtrip_failure(mod) is None


def test_call_packed_and_bare_object_sinfo_parse():
    src = '''
@I.ir_module
class Mod:
    @R.function(pure=False)
    def main(x: R.Tensor((2,), "float32")) -> R.Object:
        y = R.call_packed("my.func", x, sinfo_args=R.Object)
        z = R.call_pure_packed("my.other", x, sinfo_args=(R.Object,))
        return y
'''
    mod = tvm.script.from_source(src)
    text = mod.script()
    assert 'R.call_packed("my.func", x, sinfo_args=(R.Object,))' in text
    assert roundtrip_failure(mod) is None

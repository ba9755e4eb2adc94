"""Seed 003 run verbatim (one changed import: minitvm installed as ``tvm``): ``origin_mod.show()``
and the ReluToGelu module print line for line what the seed shows."""

import pathlib
import runpy

import pytest

from minitvm import compat

HERE = pathlib.Path(__file__).parent

_SIG = ('    def forward(x: R.Tensor(("n", 784), dtype="float32"), fc1_weight: R.Tensor((128, 784), '
        'dtype="float32"), fc1_bias: R.Tensor((128,), dtype="float32"), fc2_weight: '
        'R.Tensor((10, 128), dtype="float32"), fc2_bias: R.Tensor((10,), dtype="float32")) -> '
        'R.Tensor(("n", 10), dtype="float32"):')


def _module(act: str) -> str:
    return "\n".join([
        "# from tvm.script import ir as I",
        "# from tvm.script import tir as T",
        "# from tvm.script import relax as R",
        "",
        "@I.ir_module",
        "class Module:",
        "    @R.function",
        _SIG,
        "        n = T.int64()",
        '        R.func_attr({"num_input": 1})',
        "        with R.dataflow():",
        '            permute_dims: R.Tensor((784, 128), dtype="float32") = '
        "R.permute_dims(fc1_weight, axes=None)",
        '            matmul: R.Tensor((n, 128), dtype="float32") = '
        'R.matmul(x, permute_dims, out_dtype="void")',
        '            add: R.Tensor((n, 128), dtype="float32") = R.add(matmul, fc1_bias)',
        f'            relu: R.Tensor((n, 128), dtype="float32") = R.nn.{act}(add)',
        '            permute_dims1: R.Tensor((128, 10), dtype="float32") = '
        "R.permute_dims(fc2_weight, axes=None)",
        '            matmul1: R.Tensor((n, 10), dtype="float32") = '
        'R.matmul(relu, permute_dims1, out_dtype="void")',
        '            add1: R.Tensor((n, 10), dtype="float32") = R.add(matmul1, fc2_bias)',
        '            gv: R.Tensor((n, 10), dtype="float32") = add1',
        "            R.output(gv)",
        "        return gv",
    ])


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

"""TVM's "Getting Started using TVMC Python" tutorial with ``import minitvm as tvm``
(``from minitvm.driver import tvmc``): ``tvmc.load`` an ONNX model (with ``shape_dict``),
``model.summary()`` / ``model.save``, ``tvmc.tune`` (records reused through
``tuning_records``), ``tvmc.compile`` with ``package_path`` and ``TVMCPackage``, ``tvmc.run``
and its printed result; outputs checked against ONNX Runtime."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the tutorial loads an ONNX model")
ort = pytest.importorskip("onnxruntime", reason="the reference is ONNX Runtime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from minitvm.autotvm import TVMDifferenceError  # noqa: E402
from minitvm.driver import tvmc  # noqa: E402
from minitvm.tune import MeasureResult  # noqa: E402
from minitvm.tune.workload import measure_workload  # noqa: E402


def write_model(path, batch=1):
    """A small CNN (conv, relu, global average pool, flatten, gemm) as an ONNX file."""
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((8, 3, 3, 3)).astype("float32"), "w")
    fc = numpy_helper.from_array(rng.standard_normal((5, 8)).astype("float32"), "fc")
    nodes = [helper.make_node("Conv", ["data", "w"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("GlobalAveragePool", ["r"], ["p"]),
             helper.make_node("Flatten", ["p"], ["f"]),
             helper.make_node("Gemm", ["f", "fc"], ["logits"], transB=1)]
    graph = helper.make_graph(
        nodes, "small_cnn",
        [helper.make_tensor_value_info("data", TensorProto.FLOAT, ["N", 3, 8, 8])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 5])], [w, fc])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.save(model, str(path))
    return str(path)


class InProcessRunner:  # one short timing per candidate, in this process: a fast test
    def run(self, task, candidates):
        return [MeasureResult(measure_workload(task, k, repeat=1, min_repeat_ms=1.0), None, 0.0)
                for k in candidates]


def reference(path, data):
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return sess.run(None, {"data": data})[0]


def test_load_compile_run(tmp_path, capsys):
    model_path = write_model(tmp_path / "my_model.onnx")
    shape_dict = {"data": [2, 3, 8, 8]}
    model = tvmc.load(model_path, shape_dict=shape_dict)  # Step 1: Load + shape_dict
    model.summary()
    summary = capsys.readouterr().out
    assert "def @main(%data: Tensor[(2, 3, 8, 8), float32]" in summary
    assert "nn.conv2d" in summary

    model.save(str(tmp_path / "model.tar"))
    reloaded = tvmc.load(str(tmp_path / "model.tar"))
    assert sorted(reloaded.params) == sorted(model.params)

    package_path = str(tmp_path / "whatever.tar")
    tvmc.compile(reloaded, target="llvm", package_path=package_path)  # Step 2: Compile
    new_package = tvmc.TVMCPackage(package_path=package_path)
    data = np.random.default_rng(1).random((2, 3, 8, 8)).astype("float32")
    result = tvmc.run(new_package, device="cpu", inputs={"data": data}, repeat=2, number=2)
    printed = str(result)
    assert printed.startswith("Execution time summary:")
    assert "Output Names:\n ['output_0']" in printed
    np.testing.assert_allclose(result.get_output("output_0"), reference(model_path, data),
                               rtol=1e-4, atol=1e-4)
    random_run = tvmc.run(new_package, repeat=1, number=1)  # inputs filled at random
    assert random_run.outputs["output_0"].shape == (2, 5)
    result.save(str(tmp_path / "outputs.npz"))
    assert list(np.load(tmp_path / "outputs.npz")) == ["output_0"]


def test_tune_then_compile_with_records(tmp_path):
    model_path = write_model(tmp_path / "my_model.onnx")
    model = tvmc.load(model_path, shape_dict={"data": [1, 3, 8, 8]})
    log_file = str(tmp_path / "hello.json")
    records = tvmc.tune(model, target="llvm", tuning_records=log_file, trials=1,
                        runner=InProcessRunner())  # Step 1.5: Optional Tune
    assert records == log_file
    with open(log_file) as f:
        assert f.read().strip(), "the conv2d workload was tuned"
    package = tvmc.compile(model, target="llvm", tuning_records=records)
    data = np.random.default_rng(2).random((1, 3, 8, 8)).astype("float32")
    result = tvmc.run(package, inputs={"data": data}, repeat=1, number=1)
    np.testing.assert_allclose(result.outputs["output_0"], reference(model_path, data),
                               rtol=1e-4, atol=1e-4)


def test_differences_and_errors(tmp_path):
    model_path = write_model(tmp_path / "my_model.onnx")
    package = tvmc.compile(tvmc.load(model_path, shape_dict={"data": [1, 3, 8, 8]}), "llvm")
    with pytest.raises(TVMDifferenceError, match="host CPU only"):
        tvmc.run(package, device="cuda")
    with pytest.raises(tvmc.TVMCException, match="unknown input"):
        tvmc.run(package, inputs={"image": np.zeros((1, 3, 8, 8), "float32")})
    with pytest.raises(tvmc.TVMCException, match="no such file"):
        tvmc.load(str(tmp_path / "missing.onnx"))


def test_default_outputs_live_in_the_models_temporary_directory(tmp_path):
    """Without ``tuning_records`` / ``package_path`` the records and the package go to the
    model's own temporary directory, which goes away with the model (TVM's TVMCModel keeps
    its defaults the same way): nothing is left behind in the system's temp directory."""
    import gc
    import os

    model = tvmc.load(write_model(tmp_path / "m.onnx"), shape_dict={"data": [1, 3, 8, 8]})
    records = tvmc.tune(model, target="llvm", trials=1, runner=InProcessRunner())
    package = tvmc.compile(model, target="llvm")
    scratch = os.path.dirname(package.package_path)
    assert os.path.dirname(records) == scratch
    assert package.package_path == model.default_package_path()
    data = np.random.default_rng(1).standard_normal((1, 3, 8, 8)).astype("float32")
    expected = reference(str(tmp_path / "m.onnx"), data)
    del model
    gc.collect()
    assert not os.path.exists(scratch)
    result = tvmc.run(package, inputs={"data": data}, repeat=1, number=1)  # loaded already
    np.testing.assert_allclose(result.get_output("output_0"), expected, rtol=1e-5, atol=1e-5)

"""``minitvm compile / run / bench / viz`` on model files (ONNX, TFLite, torch.export, Relay
text), including the error paths a new user hits."""

from __future__ import annotations

import numpy as np
import pytest

from minitvm.cli import main


def _onnx_model(path, op_type="Relu"):
    onnx = pytest.importorskip("onnx", reason="ONNX model files need the `onnx` package")
    from onnx import TensorProto, helper, numpy_helper

    w = np.random.default_rng(0).standard_normal((4, 3, 3, 3)).astype("float32")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node(op_type, ["c"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                     ["N", 3, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(w, "w")])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, str(path))
    return w


def test_compile_then_run_onnx(tmp_path, capsys):
    src = tmp_path / "net.onnx"
    w = _onnx_model(src)
    lib = tmp_path / "net.tar"
    assert main(["compile", str(src), "-O3", "--target", "llvm", "-o", str(lib), "-q"]) == 0
    out = capsys.readouterr()
    assert "symbolic dimensions" in out.err  # N defaulted to 1, said so
    assert "input  x: Tensor[(1, 3, 8, 8), float32]" in out.out
    x = np.random.default_rng(1).standard_normal((1, 3, 8, 8)).astype("float32")
    np.save(tmp_path / "x.npy", x)
    res = tmp_path / "out.npz"
    assert main(["run", str(lib), "--input", f"x={tmp_path / 'x.npy'}", "-o", str(res)]) == 0
    text = capsys.readouterr().out
    assert "output 0: shape (1, 4, 8, 8) float32" in text and "mean" in text
    got = np.load(res)["arr_0"]
    torch = pytest.importorskip("torch", reason="the reference convolution uses torch")

    ref = torch.relu(torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w),
                                                padding=1)).numpy()
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)


def test_run_random_inputs_and_input_shape(tmp_path, capsys):
    src = tmp_path / "net.onnx"
    _onnx_model(src)
    lib = tmp_path / "b2.tar"
    assert main(["compile", str(src), "--input-shape", "x=2,3,8,8", "-o", str(lib), "-q"]) == 0
    assert main(["run", str(lib), "--repeat", "2"]) == 0
    text = capsys.readouterr().out
    assert "input  x: shape (2, 3, 8, 8) float32 (random)" in text
    assert "output 0: shape (2, 4, 8, 8)" in text


def test_run_errors(tmp_path, capsys):
    src = tmp_path / "net.onnx"
    _onnx_model(src)
    lib = tmp_path / "net.tar"
    main(["compile", str(src), "-o", str(lib), "-q"])
    np.save(tmp_path / "bad.npy", np.zeros((5, 5), "float32"))
    assert main(["run", str(lib), "--input", f"x={tmp_path / 'bad.npy'}"]) == 2
    assert "has shape (5, 5), the model expects (1, 3, 8, 8)" in capsys.readouterr().err
    assert main(["run", str(lib), "--input", f"nope={tmp_path / 'bad.npy'}"]) == 2
    assert "the model's inputs are x" in capsys.readouterr().err
    assert main(["run", str(tmp_path / "missing.tar")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_compile_errors(tmp_path, capsys):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"garbage \xff\xfe")
    pytest.importorskip("onnx")
    assert main(["compile", str(bad)]) == 2
    assert "not a readable ONNX model" in capsys.readouterr().err
    unsupported = tmp_path / "u.onnx"
    _onnx_model(unsupported, op_type="NonZero")
    assert main(["compile", str(unsupported), "-q"]) == 2
    assert "NonZero" in capsys.readouterr().err
    other = tmp_path / "model.xyz"
    other.write_text("x")
    assert main(["compile", str(other)]) == 2
    assert "unknown model type '.xyz'" in capsys.readouterr().err


def test_compile_tflite(tmp_path, capsys):
    pytest.importorskip("tflite", reason="TFLite files need the `tflite` package")
    from minitvm.relay.frontend.tflite.builder import ModelBuilder

    b = ModelBuilder()
    x = b.input("x", (1, 6, 6, 2))
    w = b.constant("w", np.ones((3, 3, 3, 2), "float32"))
    y = b.tensor("y", (1, 6, 6, 3))
    b.operator("CONV_2D", [x, w, -1], [y], "Conv2DOptions", Padding=0, StrideH=1, StrideW=1,
               DilationHFactor=1, DilationWFactor=1, FusedActivationFunction=0)
    b.output(y)
    src = tmp_path / "m.tflite"
    src.write_bytes(b.finish())
    lib = tmp_path / "m.tar"
    assert main(["compile", str(src), "-o", str(lib), "-q"]) == 0
    assert main(["run", str(lib)]) == 0
    assert "output 0: shape (1, 6, 6, 3)" in capsys.readouterr().out


def test_compile_pt2(tmp_path, capsys):
    torch = pytest.importorskip("torch", reason=".pt2 files need torch")
    model = torch.nn.Sequential(torch.nn.Linear(5, 3), torch.nn.Tanh()).eval()
    src = tmp_path / "m.pt2"
    torch.export.save(torch.export.export(model, (torch.randn(2, 5),)), str(src))
    lib = tmp_path / "m.tar"
    assert main(["compile", str(src), "-o", str(lib), "-q"]) == 0
    assert main(["run", str(lib)]) == 0
    assert "output 0: shape (2, 3)" in capsys.readouterr().out
    assert main(["bench", str(src), "--repeat", "3"]) == 0
    assert "pytorch (eager)" in capsys.readouterr().out


def test_bench_onnx_table(tmp_path, capsys):
    pytest.importorskip("onnxruntime", reason="the side-by-side bench needs onnxruntime")
    src = tmp_path / "net.onnx"
    _onnx_model(src)
    assert main(["bench", str(src), "--repeat", "3"]) == 0
    out = capsys.readouterr().out
    assert "minitvm" in out and "onnxruntime" in out and "max |diff|" in out


def test_viz_html_svg_and_term(tmp_path, capsys):
    src = tmp_path / "net.onnx"
    _onnx_model(src)
    page = tmp_path / "g.html"
    assert main(["viz", str(src), "--pass", "FuseOps", "-o", str(page)]) == 0
    text = page.read_text()
    assert text.startswith("<!DOCTYPE html>") and text.count("<svg") == 2
    assert "after FuseOps" in text and "nn.conv2d" in text
    assert "<script" not in text and "http://" not in text.replace(
        'xmlns="http://www.w3.org/2000/svg"', "")  # self-contained
    svg = tmp_path / "g.svg"
    assert main(["viz", str(src), "--format", "svg", "-o", str(svg)]) == 0
    assert svg.read_text().startswith("<svg")
    capsys.readouterr()
    assert main(["viz", str(src), "--format", "term"]) == 0
    assert "`--Call nn.relu" in capsys.readouterr().out


def test_viz_relay_text_and_bad_pass(tmp_path, capsys):
    src = tmp_path / "prog.relay"
    src.write_text('#[version = "0.0.5"]\ndef @main(%x: Tensor[(2, 2), float32]) {\n'
                   "  %0 = add(%x, %x);\n  multiply(%0, %0)\n}\n")
    out = tmp_path / "p.html"
    assert main(["viz", str(src), "-o", str(out)]) == 0
    assert "multiply" in out.read_text()
    assert main(["viz", str(src), "--pass", "NoSuchPass"]) == 2
    assert "NoSuchPass" in capsys.readouterr().err


def test_compile_dynamic_runs_every_batch(tmp_path, capsys):
    """``--dynamic`` keeps the ONNX model's symbolic batch: one library, run at sizes 1, 3, 5,
    each equal to the static build of that size."""
    src = tmp_path / "net.onnx"
    _onnx_model(src)
    lib = tmp_path / "dyn.tar"
    assert main(["compile", str(src), "--dynamic", "-o", str(lib), "-q"]) == 0
    out = capsys.readouterr()
    assert "symbolic dimensions" not in out.err
    assert "input  x: Tensor[(?, 3, 8, 8), float32]" in out.out and "Relay VM" in out.out
    for n in (1, 3, 5):
        x = np.random.default_rng(n).standard_normal((n, 3, 8, 8)).astype("float32")
        np.save(tmp_path / "x.npy", x)
        static = tmp_path / f"s{n}.tar"
        assert main(["compile", str(src), "--input-shape", f"x={n},3,8,8", "-o", str(static),
                     "-q"]) == 0
        for path, res in ((lib, "d.npz"), (static, "s.npz")):
            assert main(["run", str(path), "--input", f"x={tmp_path / 'x.npy'}",
                         "-o", str(tmp_path / res)]) == 0
        assert f"output 0: shape ({n}, 4, 8, 8) float32" in capsys.readouterr().out
        np.testing.assert_allclose(np.load(tmp_path / "d.npz")["arr_0"],
                                   np.load(tmp_path / "s.npz")["arr_0"], rtol=1e-5, atol=1e-5)
    assert main(["run", str(lib), "--input-shape", "x=7,3,8,8"]) == 0  # random, sized
    assert "input  x: shape (7, 3, 8, 8) float32 (random)" in capsys.readouterr().out
    assert main(["run", str(lib)]) == 0  # symbolic sizes default to 1, with a note
    out = capsys.readouterr()
    assert "shape (1, 3, 8, 8)" in out.out and "(?, 3, 8, 8); using 1" in out.err


def test_dynamic_library_errors(tmp_path, capsys):
    src = tmp_path / "net.onnx"
    _onnx_model(src)
    lib = tmp_path / "dyn.tar"
    assert main(["compile", str(src), "--dynamic", "-o", str(lib), "-q"]) == 0
    capsys.readouterr()
    np.save(tmp_path / "bad.npy", np.zeros((2, 4, 8, 8), "float32"))
    assert main(["run", str(lib), "--input", f"x={tmp_path / 'bad.npy'}"]) == 2
    assert "has shape (2, 4, 8, 8), the model expects (?, 3, 8, 8)" in capsys.readouterr().err
    assert main(["run", str(lib), "--input-shape", "x=2,3,8"]) == 2
    assert "--input-shape x=2,3,8: the model expects (?, 3, 8, 8)" in capsys.readouterr().err
    assert main(["run", str(lib), "--input-shape", "y=2,3,8,8"]) == 2
    assert "the model's inputs are x" in capsys.readouterr().err
    damaged = tmp_path / "damaged.tar"
    import zipfile

    with zipfile.ZipFile(damaged, "w") as z:
        z.writestr("minitvm_vm.json", "{}")
    assert main(["run", str(damaged)]) == 2
    assert "a damaged Relay VM library" in capsys.readouterr().err
    relay_text = tmp_path / "m.relay"
    relay_text.write_text('#[version = "0.0.5"]\ndef @main(%x: Tensor[(2), float32]) { %x }\n')
    assert main(["compile", str(relay_text), "--dynamic"]) == 2
    assert "--dynamic keeps an ONNX model's symbolic input dimensions" in capsys.readouterr().err

"""An unreadable ONNX model is refused naming the whole file path (however long) or the
size of the bytes given, in both importers."""

import os

import pytest

pytest.importorskip("onnx", reason="the importers read ONNX models")

from minitvm import relax, relay  # noqa: E402


@pytest.mark.parametrize("importer", ["relay", "relax"])
def test_a_long_path_is_named_in_full(tmp_path, importer):
    deep = tmp_path.joinpath(*(["a_directory_with_a_long_name"] * 4))
    deep.mkdir(parents=True)
    path = deep / "the_model_file.onnx"
    path.write_bytes(b"\x0a\xff\xff\xff\xff this is not protobuf")
    from_onnx = relay.frontend.from_onnx if importer == "relay" else \
        relax.frontend.onnx.from_onnx
    with pytest.raises(Exception, match="cannot read ONNX model") as info:
        from_onnx(str(path))
    assert repr(os.fspath(path)) in str(info.value)
    with pytest.raises(Exception, match="cannot read ONNX model from 18 bytes"):
        from_onnx(b"\x0a\xff\xff\xff\xff not protobuf")

"""``tvm.relay.frontend``: model importers (ONNX, PyTorch, TFLite).

Each importer needs its framework's package only when called, so importing minitvm never
requires onnx, torch or tflite.
"""

from ...contrib import relay_viz as _relay_viz
from ...contrib import torch_backend as _torch_backend
from .common import ImportError_, OpNotImplemented  # noqa: F401
from .viz_parser import RelayVizParser as _RelayVizParser


def _compile_graph(gm, example_inputs, opt_level, fallback):
    """torch.compile(backend="minitvm") compiles here (the PyTorch importer loads on first use)."""
    from .pytorch.dynamo import compile_graph

    return compile_graph(gm, example_inputs, opt_level, fallback)


_torch_backend.set_compiler(_compile_graph)
_relay_viz.set_default_parser(_RelayVizParser)  # tvm.contrib.relay_viz draws Relay with it


def from_onnx(model, shape=None, dtype="float32", opset=None, freeze_params=True, **kwargs):
    """Import an ONNX model (see :func:`minitvm.relay.frontend.onnx.from_onnx`)."""
    from .onnx import from_onnx as _impl

    return _impl(model, shape=shape, dtype=dtype, opset=opset, freeze_params=freeze_params,
                 **kwargs)


def from_pytorch(script_module, input_infos, custom_convert_map=None, default_dtype="float32",
                 **kwargs):
    """Import a TorchScript module (see :func:`minitvm.relay.frontend.pytorch.from_pytorch`)."""
    from .pytorch import from_pytorch as _impl

    return _impl(script_module, input_infos, custom_convert_map=custom_convert_map,
                 default_dtype=default_dtype, **kwargs)


def from_tflite(model, shape_dict=None, dtype_dict=None, op_converter=None):
    """Import a TFLite model (see :func:`minitvm.relay.frontend.tflite.from_tflite`)."""
    from .tflite import from_tflite as _impl

    return _impl(model, shape_dict=shape_dict, dtype_dict=dtype_dict)

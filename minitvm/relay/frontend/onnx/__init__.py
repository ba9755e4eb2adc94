"""ONNX -> Relay: ``relay.frontend.from_onnx`` (converters grouped by op family)."""

from __future__ import annotations

from ....frontend_common.onnx_model import default_opset, load_model
from ..common import ImportError_, OpNotImplemented
from . import (  # noqa: F401  (register the converters)
    ops_attention,
    ops_audio,
    ops_control,
    ops_detection,
    ops_elemwise,
    ops_extra,
    ops_loss,
    ops_grid,
    ops_misc2,
    ops_nn,
    ops_qlinear,
    ops_recurrent,
    ops_reduce,
    ops_resize,
    ops_roi,
    ops_scatter,
    ops_search,
    ops_sequence,
    ops_signal,
    ops_tensor,
    ops_unique,
)
from .graph import GraphProto
from .registry import CONVERTERS, NeedsConstantInput

__all__ = ["from_onnx", "supported_ops", "OpNotImplemented", "NeedsConstantInput"]


def supported_ops() -> list[str]:
    """The ONNX op types this importer converts."""
    return sorted(CONVERTERS)


def from_onnx(model, shape: dict | None = None, dtype="float32", opset: int | None = None,
              freeze_params: bool = True, convert_config=None, export_node_renamed_model_path=None,
              const_inputs: dict | None = None):
    """Convert an ONNX model into a Relay module.

    Parameters
    ----------
    model : onnx.ModelProto or str
        The model, or the path of an ``.onnx`` file.
    shape : dict of str to tuple, optional
        Input shapes. A dimension symbolic in the model and not given here (or given as
        ``relay.Any()``) is ``relay.Any()``: one per dim_param name, compiled with
        ``relay.vm.compile`` for any size. A
        sequence-typed input takes a list of element shapes (it becomes one parameter per
        element, ``NAME_0``, ``NAME_1``, ...); an optional-typed one its element's shape, or
        None when it is empty.
    dtype : str or dict of str to str
        Input dtypes (default float32 where the model does not say).
    opset : int, optional
        Override the default-domain opset the model declares.
    freeze_params : bool
        Embed initializers as constants (True) or keep them as parameters (False).
    convert_config : dict, optional
        ``{"qdq_as_qnn": True}`` (minitvm): QuantizeLinear / DequantizeLinear become
        ``qnn.quantize`` / ``qnn.dequantize``, as TVM imports them, for
        ``relay.transform.FakeQuantizationToInteger`` to turn a QDQ model's convs, adds and
        pools into integer ops. By default each pair is float arithmetic with ONNX Runtime's
        numerics (convs of 8-bit tensors already read them as integers on VNNI).
    const_inputs : dict of str to numpy.ndarray, optional
        Graph inputs to bind to known values (minitvm extension): a shape or axes tensor fed
        as an input becomes a constant, so the shapes it computes are static.

    Returns
    -------
    mod : tvm.IRModule
    params : dict of str to tvm.nd.NDArray
    """
    model = load_model(model, ImportError_)
    g = GraphProto(shape, dtype, freeze_params, default_opset(model, opset), const_inputs)
    g.qdq_as_qnn = bool((convert_config or {}).get("qdq_as_qnn", False))
    return g.from_onnx(model.graph)

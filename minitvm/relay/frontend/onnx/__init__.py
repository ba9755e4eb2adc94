"""ONNX -> Relay: ``relay.frontend.from_onnx`` (converters grouped by op family)."""

from __future__ import annotations

from ..common import ImportError_, OpNotImplemented
from . import ops_elemwise, ops_nn, ops_reduce, ops_resize, ops_tensor  # noqa: F401
from .graph import GraphProto
from .registry import CONVERTERS, NeedsConstantInput

__all__ = ["from_onnx", "supported_ops", "OpNotImplemented", "NeedsConstantInput"]


def supported_ops() -> list[str]:
    """The ONNX op types this importer converts."""
    return sorted(CONVERTERS)


def _load(model):
    try:
        import onnx
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("from_onnx needs the `onnx` package: pip install 'minitvm[onnx]'") from e
    if isinstance(model, str | bytes) or hasattr(model, "__fspath__"):
        path = model
        try:
            model = onnx.load(path) if not isinstance(path, bytes) else onnx.load_from_string(path)
        except Exception as e:  # noqa: BLE001 - protobuf's DecodeError and friends
            raise ImportError_(f"cannot read ONNX model {path!r:.80}: {type(e).__name__}: {e}") \
                from e
    if not isinstance(model, onnx.ModelProto):
        raise TypeError(f"from_onnx expects an onnx.ModelProto or a file path, got "
                        f"{type(model).__name__}")
    if not model.HasField("graph"):
        raise ImportError_("the ONNX model has no graph (empty or malformed file)")
    return model


def from_onnx(model, shape: dict | None = None, dtype="float32", opset: int | None = None,
              freeze_params: bool = True, convert_config=None, export_node_renamed_model_path=None,
              const_inputs: dict | None = None):
    """Convert an ONNX model into a Relay module.

    Parameters
    ----------
    model : onnx.ModelProto or str
        The model, or the path of an ``.onnx`` file.
    shape : dict of str to tuple, optional
        Input shapes; required for inputs whose dimensions are symbolic in the model.
    dtype : str or dict of str to str
        Input dtypes (default float32 where the model does not say).
    opset : int, optional
        Override the default-domain opset the model declares.
    freeze_params : bool
        Embed initializers as constants (True) or keep them as parameters (False).
    const_inputs : dict of str to numpy.ndarray, optional
        Graph inputs to bind to known values (minitvm extension): a shape or axes tensor fed
        as an input becomes a constant, so the shapes it computes are static.

    Returns
    -------
    mod : tvm.IRModule
    params : dict of str to tvm.nd.NDArray
    """
    model = _load(model)
    if opset is None:
        opset = max((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")),
                    default=1)
    g = GraphProto(shape, dtype, freeze_params, int(opset), const_inputs)
    return g.from_onnx(model.graph)

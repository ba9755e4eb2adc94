"""ONNX -> Relax: ``relax.frontend.onnx.from_onnx`` (converters grouped by op family).

Dynamic axes (``dim_param``) become symbolic ``tir`` int64 variables named after the ONNX
dim, so one build serves every batch size."""

from __future__ import annotations

from . import ops_math, ops_nn, ops_tensor  # noqa: F401  (register the converters)
from .context import CONVERTERS, ONNXImportError, OpNotImplemented
from .importer import ONNXGraphImporter

__all__ = ["from_onnx", "supported_ops", "ONNXImportError", "OpNotImplemented"]


def supported_ops() -> list[str]:
    """The ONNX op types this importer converts."""
    return sorted(CONVERTERS)


def _load(model):
    try:
        import onnx
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("from_onnx needs the `onnx` package: pip install 'minitvm[onnx]'") \
            from e
    if isinstance(model, str | bytes) or hasattr(model, "__fspath__"):
        src = model
        try:
            model = onnx.load_from_string(src) if isinstance(src, bytes) else onnx.load(src)
        except Exception as e:  # noqa: BLE001 - protobuf's DecodeError and friends
            raise ONNXImportError(f"cannot read ONNX model {src!r:.80}: "
                                  f"{type(e).__name__}: {e}") from e
    if not isinstance(model, onnx.ModelProto):
        raise TypeError(f"from_onnx expects an onnx.ModelProto or a file path, got "
                        f"{type(model).__name__}")
    if not model.HasField("graph"):
        raise ONNXImportError("the ONNX model has no graph (empty or malformed file)")
    return model


def from_onnx(model, shape_dict: dict | None = None, dtype_dict="float32",
              opset: int | None = None, keep_params_in_input: bool = False,
              sanitize_input_names: bool = True):
    """Convert an ONNX model into a Relax IRModule with one function, ``main``.

    Parameters
    ----------
    model : onnx.ModelProto, str or bytes
        The model, the path of an ``.onnx`` file, or its serialized bytes.
    shape_dict : dict of str to sequence, optional
        Input shapes overriding the model's; a string entry is a symbolic dim of that name.
    dtype_dict : str or dict of str to str
        Input dtypes where the model does not say (default float32).
    opset : int, optional
        Override the default-domain opset the model declares.
    keep_params_in_input : bool
        Keep the initializers as trailing parameters of ``main`` (their values in the
        function's ``"params"`` attribute, see ``relax.frontend.detach_params``) instead of
        embedding them as constants.
    sanitize_input_names : bool
        Turn input names into valid identifiers.

    Returns
    -------
    mod : tvm.IRModule
    """
    model = _load(model)
    if opset is None:
        opset = max((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")),
                    default=1)
    importer = ONNXGraphImporter(shape_dict, dtype_dict, int(opset), keep_params_in_input,
                                 sanitize_input_names)
    return importer.from_onnx(model.graph)

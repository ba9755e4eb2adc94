"""ONNX -> Relax: ``relax.frontend.onnx.from_onnx`` (converters grouped by op family).

Dynamic axes (``dim_param``) become symbolic ``tir`` int64 variables named after the ONNX
dim, so one build serves every batch size."""

from __future__ import annotations

from ....frontend_common.onnx_model import default_opset, load_model
from . import (  # noqa: F401  (register the converters)
    ops_attention,
    ops_audio,
    ops_control,
    ops_detection,
    ops_extra,
    ops_loss,
    ops_image,
    ops_math,
    ops_misc2,
    ops_nn,
    ops_quant,
    ops_recurrent,
    ops_roi,
    ops_sequence,
    ops_signal,
    ops_tensor,
    ops_unique,
)
from .context import CONVERTERS, NeedsConstantInput, ONNXImportError, OpNotImplemented
from .importer import ONNXGraphImporter

__all__ = ["from_onnx", "supported_ops", "ONNXImportError", "OpNotImplemented",
           "NeedsConstantInput"]


def supported_ops() -> list[str]:
    """The ONNX op types this importer converts."""
    return sorted(CONVERTERS)


def from_onnx(model, shape_dict: dict | None = None, dtype_dict="float32",
              opset: int | None = None, keep_params_in_input: bool = False,
              sanitize_input_names: bool = True, const_inputs: dict | None = None):
    """Convert an ONNX model into a Relax IRModule: ``main``, plus a private function per
    ``If`` / ``Loop`` whose condition or trip count is only known at run time.

    Parameters
    ----------
    model : onnx.ModelProto, str or bytes
        The model, the path of an ``.onnx`` file, or its serialized bytes.
    shape_dict : dict of str to sequence, optional
        Input shapes overriding the model's; a string entry is a symbolic dim of that name.
        A sequence-typed input takes a list of element shapes (one parameter per element,
        ``NAME_0``, ``NAME_1``, ...); an optional-typed one its element's shape, or None when
        it is empty.
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
    const_inputs : dict of str to numpy.ndarray, optional
        Graph inputs to bind to known values (minitvm extension): a shape or axes tensor fed
        as an input becomes a known value, so the shapes it computes are static.

    Returns
    -------
    mod : tvm.IRModule
    """
    model = load_model(model, ONNXImportError)
    importer = ONNXGraphImporter(shape_dict, dtype_dict, default_opset(model, opset),
                                 keep_params_in_input,
                                 sanitize_input_names, const_inputs)
    return importer.from_onnx(model.graph)

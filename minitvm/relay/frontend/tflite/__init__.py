"""TFLite -> Relay: ``relay.frontend.from_tflite(model, shape_dict, dtype_dict)``; the
``tflite`` package parses the flatbuffer. ``builder`` writes small models (tests, examples)."""

from __future__ import annotations

__all__ = ["from_tflite"]


def from_tflite(model, shape_dict=None, dtype_dict=None, op_converter=None):
    """Convert a TFLite model into a Relay module (NHWC, as in the file). Float32 models,
    float16 / dynamic-range int8 weights, and fully-quantized models (int8 / uint8
    activations, and int16 with int8 weights; quantized inputs and outputs keep their dtype)
    are read, and the SSD detection head (the custom op ``TFLite_Detection_PostProcess``).

    Parameters
    ----------
    model : tflite.Model, bytes or str
        The parsed model (``tflite.Model.GetRootAsModel(buf, 0)``), its bytes, or a path.
    shape_dict : dict of str to tuple, optional
        Input shapes (default: the shapes stored in the model).
    dtype_dict : dict of str to str, optional
        Input dtypes (default: the types stored in the model).

    Returns
    -------
    mod : tvm.IRModule
    params : dict of str to tvm.nd.NDArray (empty: weights are embedded as constants)
    """
    try:
        import tflite  # noqa: F401
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("from_tflite needs the `tflite` package: pip install "
                          "'minitvm[tflite]'") from e
    from .importer import TFLiteImporter, load_model

    return TFLiteImporter(load_model(model), shape_dict, dtype_dict).run()

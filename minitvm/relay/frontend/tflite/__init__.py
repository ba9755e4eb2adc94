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
        Input shapes (default: the shapes stored in the model). A dimension given as -1, None
        or ``relay.Any()`` is dynamic: ``{"x": (relay.Any(), 224, 224, 3)}`` imports the model
        for any batch, and ``relay.vm.compile`` builds it once for all of them. A file whose
        converter left the batch dynamic stores it as -1 in the tensor's ``shape_signature``
        (and 1 in its shape); without a ``shape_dict`` such a model still imports at its
        stored shape (batch 1): ask for the dynamic batch as above. Operators that depend on
        the batch's size are then converted for any batch: a RESHAPE target with -1 keeps it,
        and a stored target that starts with the stored batch (``[1, ...]`` of a model saved
        at batch 1) and holds the rest of the input carries the batch through; a target that
        folds the batch into other dims is a clear error. STRIDED_SLICE may count from the
        batch's end or walk it backwards, SPLIT / SPLIT_V may cut it (a size that does not fit
        fails when the model runs). Other dims may be run-time sizes too (a sequence length,
        ``{"ids": (1, -1)}``; an image's H and W, ``(1, -1, -1, 3)``): SAME convs and pools
        whose stride is over such a size are padded when they run, RESIZE and TRANSPOSE_CONV
        to a size computed by SHAPE ops produce it at run time, RESHAPE keeps one -1 open,
        BATCH_MATMUL and FULLY_CONNECTED carry run-time matrix / leading dims, the integer
        MEAN / SUM / average pool compute LiteRT's count-dependent multipliers when they run;
        a static RESHAPE target over a run-time dim and UNPACK along one (its output count)
        are clear errors.
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

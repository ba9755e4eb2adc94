"""Parameter dictionaries as bytes (``tvm.runtime.save_param_dict`` / ``load_param_dict``).

The bytes are an ``.npz`` archive (names -> arrays): what ``GraphModule.load_params`` reads.
"""

from __future__ import annotations

import io

import numpy as np

from .ndarray import NDArray, array

__all__ = ["load_param_dict", "load_param_dict_from_file", "save_param_dict",
           "save_param_dict_to_file"]


def save_param_dict(params: dict) -> bytearray:
    """Serialize ``{name: NDArray or numpy array}`` to bytes."""
    arrays = {}
    for k, v in params.items():
        if not isinstance(k, str):
            raise TypeError(f"save_param_dict: parameter names must be str, got {k!r}")
        arrays[k] = v.numpy() if isinstance(v, NDArray) else np.asarray(v)
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return bytearray(buf.getvalue())


def load_param_dict(param_bytes) -> dict:
    """The ``{name: NDArray}`` that ``save_param_dict`` wrote."""
    from .graph_executor import _load_param_bytes

    return {k: array(v) for k, v in _load_param_bytes(bytes(param_bytes)).items()}


def save_param_dict_to_file(params: dict, path: str) -> None:
    """Write ``save_param_dict(params)`` to ``path``."""
    with open(path, "wb") as f:
        f.write(save_param_dict(params))


def load_param_dict_from_file(path: str) -> dict:
    """Read a file written by ``save_param_dict_to_file``."""
    with open(path, "rb") as f:
        return load_param_dict(f.read())

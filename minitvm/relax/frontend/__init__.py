"""tvm.relax.frontend: front ends that build Relax programs (``relax.frontend.nn``).

The model importers ``onnx`` and ``torch`` load on first use (``relax.frontend.onnx``, or
``from minitvm.relax.frontend.onnx import from_onnx``): they were a fifth of ``import minitvm``.
"""

import importlib as _importlib

from . import nn
from .common import detach_params  # noqa: F401

_IMPORTERS = ("onnx", "torch")


def __getattr__(name: str):
    if name in _IMPORTERS:
        return _importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_IMPORTERS))

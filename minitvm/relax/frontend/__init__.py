"""tvm.relax.frontend: front ends that build Relax programs (``relax.frontend.nn``)."""

from . import nn
from . import onnx, torch  # noqa: F401  (importers; onnx/torch load lazily)
from .common import detach_params  # noqa: F401

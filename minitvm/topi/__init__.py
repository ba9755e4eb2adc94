"""``tvm.topi``: the operator library shared by every dialect — tensor-expression computes.

Each compute is ``fcompute(attrs, inputs: list[te.Tensor], out_type) -> list[te.Tensor]``,
registered under the operator's name (``get_compute("nn.conv2d")``). Relay attaches them to its
operators as ``FTECompute``; Relax's legalization calls them to build PrimFuncs. The schedules in
``minitvm.schedule`` turn the resulting tensor expressions into loops.
"""

from . import utils, tensor, reduce, transform, nn  # noqa: F401
from .utils import get_compute, registered_computes  # noqa: F401

"""tvm.relax.frontend.nn: a PyTorch-like module API that exports to Relax.

.. code-block:: python

    from minitvm.relax.frontend import nn

    class MLP(nn.Module):
        def __init__(self):
            self.fc1 = nn.Linear(784, 128)
            self.relu1 = nn.ReLU()
            self.fc2 = nn.Linear(128, 10)

        def forward(self, x):
            return self.fc2(self.relu1(self.fc1(x)))

    mod, params = MLP().export_tvm({"forward": {"x": nn.spec.Tensor(("n", 784), "float32")}})
"""

from . import op, spec
from .core import (
    Effect, Module, ModuleDict, ModuleList, Object, Parameter, Tensor, get_default_dtype,
    set_default_dtype, wrap_nested,
)
from .exporter import Exporter
from .modules import (
    GELU, Conv1D, Conv2D, ConvTranspose1D, Embedding, GroupNorm, Identity, IOEffect, LayerNorm,
    Linear, ReLU, RMSNorm, SiLU,
)
from . import modules
from .kv_cache import KVCache
from .op import *

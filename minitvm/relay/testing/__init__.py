"""tvm.relay.testing: workloads (ResNet, MobileNet, MLP, BERT) and helpers for pass tests."""

from __future__ import annotations

import numpy as np

from . import bert, init, layers, mlp, mobilenet, resnet, temp_op_attr
from . import dcgan, densenet, dqn, inception_v3, lstm, squeezenet, synthetic, vgg
from .init import create_workload
from .check_grad import check_grad
from . import nat  # noqa: E402
from .nat import count, make_nat_expr, make_nat_value  # noqa: F401

__all__ = ["create_workload", "check_grad", "run_opt_pass", "run_infer_type", "rand", "resnet", "mobilenet",
           "mlp", "bert", "layers", "init", "vgg", "squeezenet", "dqn", "dcgan", "synthetic",
           "densenet", "inception_v3", "lstm"]


def run_opt_pass(expr, opt_pass, import_prelude: bool = False):
    """Type-check ``expr`` in a module, apply ``opt_pass`` and return the new main function
    (or its body when ``expr`` was not a function), as TVM's test helper does."""
    from ...ir.module import IRModule
    from ..expr import Function
    from ..transform import InferType

    mod = IRModule.from_expr(expr)
    if import_prelude:
        from ..prelude import Prelude

        Prelude(mod)
    mod = InferType()(mod)
    mod = opt_pass(mod)
    entry = mod["main"]
    return entry if isinstance(expr, Function) else entry.body


def run_infer_type(expr):
    """``expr`` type-checked (its main function, or body for a non-function)."""
    from ..transform import InferType

    return run_opt_pass(expr, InferType())


def rand(dtype: str, *shape):
    """A ``tvm.nd.NDArray`` of uniform random numbers in [0, 1)."""
    from ...runtime.ndarray import array

    return array(np.random.rand(*shape).astype(dtype))

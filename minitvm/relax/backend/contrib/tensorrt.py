"""TensorRT's pattern table (TVM's ``relax.backend.contrib.tensorrt``), registered on import:
one ``"tensorrt.<op>"`` composite per operator TensorRT converts, and
``partition_for_tensorrt`` grouping the matched operators into functions for its codegen.

Partitioning is minitvm's own and runs anywhere; the ``tensorrt`` codegen and runtime are
NVIDIA's, absent here (minitvm compiles for the CPU): ``RunCodegen`` on the partitioned module
raises ``TVMDifferenceError`` naming the CPU alternative."""

from __future__ import annotations

from ....ir.module import IRModule
from ....ir.op import Op
from ...dpl import is_op, wildcard
from ...transform.fuse_ops_by_pattern import FuseOpsByPattern, FusionPattern
from ...transform.merge_composite_functions import MergeCompositeFunctions
from ..pattern_registry import get_patterns_with_prefix, register_patterns

__all__ = ["partition_for_tensorrt"]

# composite name (after "tensorrt.") -> (Relax operator, number of arguments)
_TABLE: dict[str, tuple[str, tuple[int, ...]]] = {}
for _name in ("relu", "silu", "softmax", "batch_flatten", "max_pool2d", "avg_pool2d",
              "max_pool3d", "avg_pool3d", "adaptive_avg_pool2d"):
    _TABLE[f"nn.{_name}"] = (f"relax.nn.{_name}", (1,))
for _name in ("sigmoid", "tanh", "exp", "log", "sqrt", "abs", "negative", "sin", "cos", "atan",
              "ceil", "floor", "erf", "expand_dims", "squeeze", "layout_transform", "sum", "prod",
              "max", "min", "mean", "split"):
    _TABLE[_name] = (f"relax.{_name}", (1,))
_TABLE.update({"transpose": ("relax.permute_dims", (1,)), "concatenate": ("relax.concat", (1,))})
for _name in ("add", "subtract", "multiply", "divide", "power", "maximum", "minimum", "reshape"):
    _TABLE[_name] = (f"relax.{_name}", (2,))
for _name in ("conv1d", "conv2d", "conv3d", "conv2d_transpose", "conv3d_transpose"):
    _TABLE[f"nn.{_name}"] = (f"relax.nn.{_name}", (2,))
_TABLE.update({"nn.batch_matmul": ("relax.matmul", (2,)),
               "nn.layer_norm": ("relax.nn.layer_norm", (3,)), "clip": ("relax.clip", (3,)),
               "strided_slice": ("relax.strided_slice", (4, 5))})


def _patterns() -> list[FusionPattern]:
    """One single-operator pattern per table entry whose operator minitvm registers."""
    out = []
    for name, (op, arities) in _TABLE.items():
        if op not in Op._registry:
            continue
        for n in arities:
            out.append(FusionPattern(f"tensorrt.{name}", is_op(op)(*[wildcard() for _ in range(n)]),
                                     {}))
    return out


register_patterns(_patterns())


def partition_for_tensorrt(mod: IRModule) -> IRModule:
    """``mod`` with what TensorRT converts grouped into composite functions and merged into
    functions annotated for the ``tensorrt`` codegen; weights bound before it become constants
    inside them (TensorRT builds them into its engine)."""
    mod = FuseOpsByPattern(get_patterns_with_prefix("tensorrt"), bind_constants=True,
                           annotate_codegen=False)(mod)
    return MergeCompositeFunctions()(mod)

"""cuBLAS dispatch patterns (TVM's ``relax.backend.cuda.cublas``), registered on import:
``cublas.matmul[_transposed][_bias[_relu|_gelu]]``, plus ``partition_for_cublas``.

The matching is minitvm's own and target independent; offloading the matched functions needs
the ``relax.ext.cublas`` codegen, which minitvm does not have (it compiles for the CPU):
``relax.transform.RunCodegen`` then says so and names the CPU alternative."""

from __future__ import annotations

from ...transform.fuse_ops_by_pattern import FuseOpsByPattern, FusionPattern
from ..pattern_registry import get_patterns_with_prefix, register_patterns
from ..patterns import make_matmul_pattern

__all__ = ["partition_for_cublas"]

_DTYPES = {("float16", "float16"), ("float32", "float32"), ("int8", "int8"),
           ("float16", "float32"), ("bfloat16", "bfloat16")}
_ACTIVATIONS = {"relu": "relax.nn.relu", "gelu": "relax.nn.gelu"}


def _check_matmul(context) -> bool:
    """cuBLAS takes the operand dtypes it has kernels for, and static-rank operands."""
    lhs = context.annotated_expr.get("lhs")
    rhs = context.annotated_expr.get("rhs")
    if lhs is None or rhs is None:
        return False
    lsi, rsi = lhs.struct_info, rhs.struct_info
    dtypes = (getattr(lsi, "dtype", None), getattr(rsi, "dtype", None))
    return dtypes in _DTYPES and getattr(lsi, "ndim", -1) >= 2 and getattr(rsi, "ndim", -1) >= 2


def _matmul_patterns() -> list[FusionPattern]:
    out = []
    for transposed in (False, True):
        for bias, act in ((False, None), (True, None), (True, "relu"), (True, "gelu")):
            name = "cublas.matmul" + ("_transposed" if transposed else "") + \
                ("_bias" if bias else "") + (f"_{act}" if act else "")
            pattern, annotations = make_matmul_pattern(
                with_bias=bias, activation=_ACTIVATIONS.get(act), transposed_rhs=transposed)
            out.append(FusionPattern(name, pattern, annotations, _check_matmul))
    return out


# the most specific patterns are tried first: register the general ones first
register_patterns(_matmul_patterns())


def partition_for_cublas(mod, bind_constants: bool = False):
    """Group what cuBLAS can run into composite functions for its codegen
    (``FuseOpsByPattern(..., annotate_codegen=True)``)."""
    return FuseOpsByPattern(get_patterns_with_prefix("cublas"), bind_constants=bind_constants,
                            annotate_codegen=True)(mod)

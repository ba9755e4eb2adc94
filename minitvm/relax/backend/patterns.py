"""Pattern builders for library dispatch (TVM's ``relax.backend.patterns``): each returns the
root pattern and the named sub-patterns (``"lhs"``, ``"rhs"``, ``"bias"``, ``"root"``) a
``check`` function inspects."""

from __future__ import annotations

from ..dpl import DFPattern, is_op, wildcard

__all__ = ["make_matmul_pattern", "make_fused_bias_activation_pattern"]


def _bias_activation(out: DFPattern, annotations: dict, with_bias: bool,
                     activation: str | None) -> tuple[DFPattern, dict[str, DFPattern]]:
    """``activation(out + bias)``, bias and activation optional; the bias is annotated."""
    if with_bias:
        bias = wildcard()
        annotations["bias"] = bias
        out = out + bias
    if activation:
        out = is_op(activation)(out)
    return out, annotations


def make_fused_bias_activation_pattern(op_name: str, with_bias: bool = False,
                                       activation: str | None = None
                                       ) -> tuple[DFPattern, dict[str, DFPattern]]:
    """``activation(op(lhs, rhs) + bias)``, bias and activation optional (``op_name`` is a
    two-operand Relax operator such as ``relax.nn.conv2d``)."""
    lhs, rhs = wildcard(), wildcard()
    out = is_op(op_name)(lhs, rhs)
    return _bias_activation(out, {"lhs": lhs, "rhs": rhs, "root": out}, with_bias, activation)


def make_matmul_pattern(with_bias: bool = False, activation: str | None = None,
                        transposed_rhs: bool = False
                        ) -> tuple[DFPattern, dict[str, DFPattern]]:
    """``activation(matmul(lhs, rhs) + bias)``; with ``transposed_rhs`` the right operand is
    ``permute_dims(rhs)`` (how ``nn.Linear`` exports)."""
    lhs, rhs = wildcard(), wildcard()
    right = is_op("relax.permute_dims")(rhs) if transposed_rhs else rhs
    out = is_op("relax.matmul")(lhs, right)
    return _bias_activation(out, {"lhs": lhs, "rhs": rhs, "root": out}, with_bias, activation)

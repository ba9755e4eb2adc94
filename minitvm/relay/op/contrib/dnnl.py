"""DNNL (oneDNN) support for BYOC: which ops go to the "dnnl" compiler, its pattern table and
``partition_for_dnnl``.

The ``target.dnnl`` predicate of each op asks the dnnl codegen whether it can run that call
(``relay.backend.contrib.dnnl.supported``). Composite patterns fuse a convolution, dense or
batch_matmul with its bias and the ops after it into one oneDNN primitive with post-ops.
"""

from __future__ import annotations

from ....ir.op import Op, register_op_attr
from ...backend.contrib.dnnl import (
    ANCHOR_OPS,
    BINARY_OPS,
    ELTWISE_OPS,
    RESHAPE_OPS,
    _bias_broadcasts,
    _shape,
    supported,
)
from ...dataflow_pattern import is_constant, is_op, wildcard
from ...expr import Constant
from .register import register_pattern_table

__all__ = ["pattern_table", "partition_for_dnnl", "dnnl_available"]

_OPS = sorted(ANCHOR_OPS | set(ELTWISE_OPS) | set(BINARY_OPS) | RESHAPE_OPS | {
    "nn.bias_add", "nn.softmax", "nn.layer_norm", "nn.max_pool2d", "nn.avg_pool2d",
    "nn.global_avg_pool2d", "nn.global_max_pool2d", "transpose"})


def _predicate(expr) -> bool:
    try:
        return supported(expr)
    except (ValueError, AttributeError, TypeError):
        return False  # untyped or unusual call: leave it to our own code generator


for _name in _OPS:
    _op = Op.get(_name)
    if not _op.has_attr("target.dnnl"):
        register_op_attr(_name, "target.dnnl", _predicate)


def _bias(anchor):
    """anchor + per-channel bias: bias_add, add of a constant, or a folded batch norm
    (multiply by a constant scale, add a constant shift)."""
    scaled = is_op("add")(is_op("multiply")(anchor, is_constant()), is_constant())
    return is_op("nn.bias_add")(anchor, wildcard()) | is_op("add")(anchor, is_constant()) | \
        scaled


def _gelu(x):
    erf = is_op("erf")(is_op("multiply")(x, is_constant()))
    return is_op("multiply")(is_op("multiply")(x, is_constant()),
                             is_op("add")(is_constant(), erf))


def _layer_norm():
    """SimplifyInference's expansion of layer_norm over the last axis (TVM's dnnl.layernorm)."""
    data, gamma, beta = wildcard(), wildcard(), wildcard()
    mu = is_op("mean")(data)
    diff = is_op("subtract")(data, mu)
    var = is_op("variance")(data, mu)
    deno = is_op("sqrt")(is_op("add")(var, is_constant()))
    return is_op("add")(is_op("multiply")(is_op("divide")(diff, deno), gamma), beta)


def _check_layer_norm(expr) -> bool:
    """Normalizing over the last axis with per-feature gamma and beta."""
    try:
        mul = expr.args[0]
        div = mul.args[0]
        mean = div.args[0].args[1]
        out = _shape(expr)
        axes = [int(a) for a in (mean.attrs.axis or [])]
        if len(axes) != 1 or axes[0] % len(out) != len(out) - 1:
            return False
        return (_shape(mul.args[1]) == [out[-1]] and _shape(expr.args[1]) == [out[-1]]
                and expr.checked_type.dtype == "float32")
    except (ValueError, AttributeError, TypeError, IndexError):
        return False


def _anchor_of(expr):
    """The conv2d/dense/batch_matmul call at the bottom of a matched chain."""
    stack = [expr]
    while stack:
        e = stack.pop()
        if getattr(getattr(e, "op", None), "name", None) in ANCHOR_OPS:
            return e
        stack.extend(a for a in getattr(e, "args", ()) if hasattr(a, "op"))
    return None


def _check(expr) -> bool:
    """Accept a match when its anchor is supported and every non-scalar constant it is
    combined with (bias, scale, shift) is per output channel."""
    anchor = _anchor_of(expr)
    try:
        if anchor is None or not supported(anchor):
            return False
        out = _shape(anchor)
        stack = [expr]
        while stack:
            e = stack.pop()
            if e is anchor:
                continue
            name = getattr(getattr(e, "op", None), "name", None)
            if name in ("add", "multiply"):
                for a in e.args:
                    if isinstance(a, Constant) and a.data.numpy().size > 1 and \
                            not _bias_broadcasts(_shape(a), out, anchor.op.name):
                        return False  # scalars (gelu's 0.5, 1) are fine
            stack.extend(a for a in getattr(e, "args", ()) if hasattr(a, "op"))
        return expr.checked_type.dtype == "float32"
    except (ValueError, AttributeError, TypeError):
        return False


def pattern_table() -> list[tuple]:
    """(name, pattern, check) of the dnnl composites, most specific first."""
    conv = is_op("nn.conv2d")(wildcard(), wildcard())
    dense = is_op("nn.dense")(wildcard(), wildcard())
    conv_b, dense_b = _bias(conv), _bias(dense)
    relu = is_op("nn.relu")
    return [
        ("dnnl.conv2d_bias_sum_relu", relu(is_op("add")(conv_b, wildcard())), _check),
        ("dnnl.conv2d_bias_sum", is_op("add")(conv_b, wildcard()), _check),
        ("dnnl.conv2d_bias_relu", relu(conv_b), _check),
        ("dnnl.conv2d_bias", conv_b, _check),
        ("dnnl.conv2d_relu", relu(conv), _check),
        ("dnnl.dense_bias_gelu", _gelu(dense_b), _check),
        ("dnnl.dense_bias_relu", relu(dense_b), _check),
        ("dnnl.dense_bias", dense_b, _check),
        ("dnnl.dense_relu", relu(dense), _check),
        ("dnnl.layernorm", _layer_norm(), _check_layer_norm),
    ]


register_pattern_table("dnnl", pattern_table)


def dnnl_available() -> bool:
    """Whether the oneDNN library (the ``dnnl`` extra) can be loaded."""
    from ....backend.contrib.dnnl import available

    return available()


def partition_for_dnnl(mod, params=None):
    """Partition ``mod`` for the "dnnl" external codegen (oneDNN).

    Binds ``params``, folds batch norms and constants into the convolutions, merges the dnnl
    composite patterns, then annotates, merges and partitions the dnnl regions.

    Parameters
    ----------
    mod : IRModule
        The module to partition.
    params : dict of str to NDArray, optional
        Constant values of ``main``'s parameters (weights).

    Returns
    -------
    IRModule
        The partitioned module; ``relay.build`` runs its dnnl functions through oneDNN.
    """
    from ....backend.contrib.dnnl import DnnlUnavailable
    from ....backend.contrib.dnnl import lib as _lib
    from ...build_module import bind_params_by_name
    from ...transform import (
        AnnotateTarget,
        FoldConstant,
        FoldScaleAxis,
        InferType,
        MergeCompilerRegions,
        MergeComposite,
        PartitionGraph,
        SimplifyInference,
    )

    try:
        _lib.lib()
    except DnnlUnavailable as err:
        raise DnnlUnavailable(f"partition_for_dnnl: {err}") from None
    if params:
        mod = mod.shallow_copy()
        mod["main"] = bind_params_by_name(mod["main"], params)
    # called one by one: a pass called directly always runs, whatever the context's opt_level
    for p in (InferType(), SimplifyInference(), FoldConstant(), FoldScaleAxis(), FoldConstant(),
              MergeComposite(pattern_table()), AnnotateTarget(["dnnl"]),
              MergeCompilerRegions(), PartitionGraph()):
        mod = p(mod)
    return mod

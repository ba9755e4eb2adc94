"""Operator registration API: defining an op once, and TVM's ``relay.op.register_*`` hooks.

Attribute keys used across minitvm:
  FTypeRelation  ``rel(arg_types, attrs) -> Type``: output type from fully known input types;
                 raises TypeError/ValueError with a message naming what is wrong.
  FNumpy         ``impl(attrs, args: list[np.ndarray], out_type) -> ndarray | tuple``: reference.
                 Defined in the shared operator library (``minitvm.topi.reference``, registered
                 by op name); ``define_op`` attaches ``topi.get_reference(name)`` unless given one.
  TOpPattern     an OpPattern value, read by FuseOps.
  TOpIsStateful  True for ops with side effects or randomness (never folded or CSE'd).
  FTVMAlterOpLayout / FTVMConvertOpLayout / FTVMLegalize / FInferCorrectLayout: pass hooks.
  FTECompute     the op's tensor-expression definition, used by lowering to TIR.
"""

from __future__ import annotations

from ... import topi
from ...ir.op import Op, OpPattern, register_op, register_op_attr

__all__ = [
    "Op", "OpPattern", "define_op", "get", "register", "register_compute", "register_pattern",
    "register_alter_op_layout", "register_convert_op_layout", "register_legalize",
    "register_infer_correct_layout",
    "register_injective_schedule", "register_broadcast_schedule", "register_reduce_schedule",
    "register_strategy", "register_shape_func", "register_gradient", "register_stateful",
    "register_type_rel", "register_numpy", "register_fake_quantization_to_integer",
    "register_optional_fake_quantization_to_integer",
]


def get(op_name: str) -> Op:
    return Op.get(op_name)


def register(op_name: str, describe: str = "", value=None, level: int = 10) -> Op:
    """Create an op entry; ``register(op, attr_key, value)`` (TVM's older form, seed 004's
    ``reg.register("nn.conv2d", "target.dnnl", fn)``) sets an attribute instead."""
    if value is not None:
        return register_op_attr(op_name, describe, value, level)
    op = register_op(op_name)
    if describe:
        op.description = describe
    return op


def define_op(name: str, type_rel, np_impl=None, pattern: int = OpPattern.OPAQUE,
              attrs_type=None, num_inputs: int = -1, describe: str = "",
              stateful: bool = False) -> Op:
    """Register an op with every rule the compiler needs, in one place.

    ``np_impl`` (the ``FNumpy`` reference) defaults to the one topi registers under ``name``
    (``topi.get_reference(name)``); passing one is for ops outside the shared library.
    """
    if np_impl is None:
        np_impl = topi.get_reference(name)
        if np_impl is None:
            raise ValueError(f"define_op({name!r}): no numpy reference was given and "
                             "minitvm.topi registers none under that name")
    op = register(name, describe)
    op.attrs_type = attrs_type
    op.num_inputs = num_inputs
    op.set_attr("FTypeRelation", type_rel)
    op.set_attr("FNumpy", np_impl)
    op.set_attr("TOpPattern", pattern)
    if stateful:
        op.set_attr("TOpIsStateful", True)
    return op


def _reg(key):
    def register_fn(op_name: str, value=None, level: int = 10):
        return register_op_attr(op_name, key, value, level)

    register_fn.__name__ = f"register_{key}"
    return register_fn


register_compute = _reg("FTECompute")
register_type_rel = _reg("FTypeRelation")
register_numpy = _reg("FNumpy")
register_alter_op_layout = _reg("FTVMAlterOpLayout")
register_convert_op_layout = _reg("FTVMConvertOpLayout")
register_infer_correct_layout = _reg("FInferCorrectLayout")
register_legalize = _reg("FTVMLegalize")
register_shape_func = _reg("FShapeFunc")
register_gradient = _reg("FPrimalGradient")
register_strategy = _reg("FTVMStrategy")
register_fake_quantization_to_integer = _reg("FTVMFakeQuantizationToInteger")
register_optional_fake_quantization_to_integer = _reg("FTVMOptionalFakeQuantizationToInteger")


def register_numpy_only(op_name: str, reason: str, level: int = 10):
    """Mark an op as run by its numpy reference on purpose (``reason``: why it has no compute),
    so that a kernel calling it is an intended numpy kernel, not a failed native lowering."""
    if not reason:
        raise ValueError(f"register_numpy_only({op_name!r}): give the reason it has no compute")
    return register_op_attr(op_name, "TNumpyOnly", reason, level)


def register_pattern(op_name: str, pattern: int, level: int = 10):
    return register_op_attr(op_name, "TOpPattern", pattern, level)


def register_stateful(op_name: str, stateful: bool = True, level: int = 10):
    return register_op_attr(op_name, "TOpIsStateful", stateful, level)


def _schedule(op_name: str, level: int = 10):
    """Schedules are chosen by the back end from the op pattern; kept for API compatibility."""
    return None


register_injective_schedule = _schedule
register_broadcast_schedule = _schedule
register_reduce_schedule = _schedule


from .op_strategy import OpImplementation, OpSpecialization, OpStrategy  # noqa: E402,F401

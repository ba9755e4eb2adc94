"""``topi.arm_cpu``: the Arm CPU rules of the operator library — which target features an Arm
target names and how Legalize pads int8 conv2d channels for its vector instructions, as TVM's
``topi.arm_cpu`` decides it when no tuning record exists."""

from . import arm_utils, conv2d_alter_op  # noqa: F401
from .arm_utils import is_aarch64_arm, is_arm_cpu_target, is_dotprod_available  # noqa: F401

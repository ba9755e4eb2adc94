"""``topi.x86``: the x86 CPU rules of the operator library — which SIMD width a target has and
how AlterOpLayout re-blocks conv2d (NCHW{c}c) and dense (NC{n}n) for it, as TVM's fallback
configurations choose them when no tuning record exists."""

from . import utils, conv2d_alter_op, dense_alter_op  # noqa: F401
from .utils import get_simd_32bit_lanes, is_x86_target  # noqa: F401

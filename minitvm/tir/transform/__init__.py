"""Transformations of PrimFuncs (plain functions; the pass wrappers live with the pass infra)."""

from .parallelize_outer_loops import parallelize_outer_loops
from .lower_intrin import LowerIntrin, lower_intrin  # noqa: F401

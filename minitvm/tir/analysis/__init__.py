"""tvm.tir.analysis: checks and queries over PrimFuncs."""

from .verify_well_formed import verify_well_formed, undefined_vars

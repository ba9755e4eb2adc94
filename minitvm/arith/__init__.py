"""tvm.arith: integer arithmetic analysis (simplification, proofs, bounds) of symbolic shapes."""

from .analyzer import Analyzer
from .bound import ConstIntBound
from .int_set import IntervalSet, neg_inf, pos_inf
from .modular import ModularSet

__all__ = ["Analyzer", "ConstIntBound", "IntervalSet", "ModularSet", "neg_inf", "pos_inf"]

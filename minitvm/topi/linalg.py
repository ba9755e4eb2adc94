"""Dense factorizations of batches of square matrices as loop kernels (tag ``linalg_loops``):
Cholesky, LU with partial pivoting (LAPACK ``potrf`` / ``getrf``) and the triangular solves
behind them (``potrs`` / ``getrs``), for matrices of any order (static or a symbolic size: a batch of points' kernel matrix).

Each stage's te body only names its inputs and its shape; ``schedule/linalg.py`` writes its
loops (O(n^3) work, O(1) code in ``n``), for Relay's computes of ``linalg.cholesky_factor`` /
``linalg.lu_factor`` / ``linalg.factored_solve`` and for the Relax torch importer's call_tir.
Layouts (``B`` matrices of order ``n``, row-major):

- ``cholesky_stage(a)``: ``(B, n, n)`` lower ``L`` with ``L L^T = A`` from ``A``'s lower
  triangle, zeros above. Where a leading minor is not positive definite (a pivot ``<= 0`` or
  NaN) the diagonal entry is NaN, and so is every column after it.
- ``lu_stage(a)``: ``(B, n, n + 1)``: the packed LU (unit-lower ``L`` below the diagonal, ``U``
  on and above) in the first ``n`` columns and, in the last, the row exchanged with row ``k`` at
  step ``k`` (0-based, as a float: exact below 2^24). A zero pivot column skips its elimination
  (LAPACK's ``info > 0`` case), so ``U`` keeps a zero on the diagonal.
- ``factored_solve_stage(factor, rhs, kind)``: ``X`` ``(B, n, m)`` with ``A X = rhs``, from a
  ``lu_stage`` output (``kind`` "lu") or a ``cholesky_stage`` one (``kind`` "cholesky"); or,
  with ``A`` itself triangular ``(B, n, n)``, one substitution that reads only its lower
  (``kind`` "lower") or upper ("upper") triangle, the diagonal taken as ones for "unit_lower" /
  "unit_upper" (LAPACK's ``trtrs``, ``torch.linalg.solve_triangular``).
"""

from __future__ import annotations

from .. import te
from ..arith import Analyzer
from ..tir import expr as E
from . import shape_conditions
from .utils import compute

__all__ = ["LINALG_TAG", "SOLVE_KINDS", "cholesky_stage", "factored_solve_stage", "is_linalg", "lu_stage"]

LINALG_TAG = "linalg_loops"
SOLVE_KINDS = ("lu", "cholesky", "lower", "upper", "unit_lower", "unit_upper")


def _stage(shape, operands, kind: str, name: str):
    """A stage whose body reads each operand once (so they are its inputs) and stands for the
    rule's loops: only ``schedule.linalg`` computes it."""
    def body(*i):
        value = None
        for x in operands:
            load = x[tuple(E.IntImm("int64", 0) for _ in x.shape)]
            value = load if value is None else value + load
        return value

    return te.compute(shape, body, name=name, tag=LINALG_TAG,
                      attrs={"operands": tuple(operands), "kind": kind})


def _same(a, b) -> bool:
    """Are two extents equal: equal constants, or the same symbolic size? Where a symbolic
    kernel's builder collects shape conditions (Relay's VM: ``shape_conditions.collecting``),
    two sizes it cannot prove equal (a run-time order's rows and columns typed as two sizes)
    are taken equal and the equality stated, for the kernel to check at each call."""
    if isinstance(a, E.IntImm) and isinstance(b, E.IntImm):
        return a.value == b.value
    if not (isinstance(a, E.IntImm) or isinstance(b, E.IntImm)) and \
            Analyzer().can_prove_equal(a, b):
        return True
    if shape_conditions.collecting():
        shape_conditions.assume_equal(a, b)
        return True
    return False


def _square(a, what: str):
    if len(a.shape) != 3:
        raise ValueError(f"{what}: expected a (batch, n, n) tensor, got {list(a.shape)}")
    if not _same(a.shape[1], a.shape[2]):
        raise ValueError(f"{what}: expected square matrices, got {list(a.shape)}")
    return a.shape[0], a.shape[1]


def cholesky_stage(a):
    """The Cholesky factor stage of ``a`` ``(B, n, n)`` (see the module)."""
    _square(a, "cholesky_stage")
    return _stage(a.shape, [a], "cholesky", "T_cholesky")


def lu_stage(a):
    """The packed LU and row-exchange stage of ``a`` ``(B, n, n)`` (see the module)."""
    b, n = _square(a, "lu_stage")
    return _stage([b, n, E.IntImm(n.dtype, n.value + 1) if isinstance(n, E.IntImm) else n + 1],
                  [a], "lu", "T_lu")


def factored_solve_stage(factor, rhs, kind: str):
    """``X`` with ``A X = rhs`` from ``A``'s factor (see the module)."""
    if kind not in SOLVE_KINDS:
        raise ValueError(f"factored_solve_stage: kind must be one of {SOLVE_KINDS}, got {kind!r}")
    if len(rhs.shape) != 3 or len(factor.shape) != 3:
        raise ValueError(f"factored_solve_stage: expected 3-d operands, got "
                         f"{list(factor.shape)} and {list(rhs.shape)}")
    b, n, cols = factor.shape
    wide = n + 1 if kind == "lu" else n
    if isinstance(n, E.IntImm) and kind == "lu":
        wide = E.IntImm(n.dtype, n.value + 1)
    if not (_same(cols, wide) and _same(rhs.shape[0], b) and _same(rhs.shape[1], n)):
        raise ValueError(f"factored_solve_stage: a {kind} factor {list(factor.shape)} does not "
                         f"fit right-hand sides {list(rhs.shape)}")
    return _stage(rhs.shape, [factor, rhs], "solve_" + kind, "T_factored_solve")


def is_linalg(t) -> bool:
    """Is te tensor ``t`` one of these stages (which only their rule computes)?"""
    return getattr(t.op, "tag", "") == LINALG_TAG


@compute("linalg.cholesky_factor")
def _cholesky_compute(attrs, inputs, out_type):
    return [cholesky_stage(inputs[0])]


@compute("linalg.lu_factor")
def _lu_compute(attrs, inputs, out_type):
    return [lu_stage(inputs[0])]


@compute("linalg.factored_solve")
def _solve_compute(attrs, inputs, out_type):
    return [factored_solve_stage(inputs[0], inputs[1], str(attrs.kind))]

"""``einsum`` on Relay ops, shared by the ONNX and PyTorch importers: operands are combined
pairwise, each pair as one batch_matmul after transposes and reshapes.

A letter of run-time size (a ``relay.Any()`` axis, the batch of a dynamic-batch import) is
carried by the reshapes' codes: copied (0) when it alone is the leading group of a reshape and
stays in front, inferred (-1) otherwise; one such group per reshape. It never broadcasts from 1:
against another run-time size or a static size other than 1 it must equal that."""

from __future__ import annotations

import string

import numpy as np

from ...ir.prim_expr import Any
from ...ir.type import TensorType
from .. import op as _op
from ..op import nn as _nn
from .common import ImportError_, infer_dtype, infer_shape, infer_type

__all__ = ["einsum"]


def _parse(equation: str, ranks: list[int]):
    eq = equation.replace(" ", "")
    lhs, arrow, out = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        raise ImportError_(f"einsum {equation!r}: {len(terms)} terms for {len(ranks)} operands")
    free = [c for c in string.ascii_uppercase + string.ascii_lowercase if c not in eq]
    ell = max((r - (len(t) - 3) for t, r in zip(terms, ranks) if "..." in t), default=0)
    ell_letters = "".join(free[:ell])
    terms = [t.replace("...", ell_letters[ell - (r - (len(t) - 3)):]) if "..." in t else t
             for t, r in zip(terms, ranks)]
    if arrow:
        out = out.replace("...", ell_letters)
    else:  # implicit output: the ellipsis, then letters seen once, in order
        counts = {c: "".join(terms).count(c) for c in "".join(terms)}
        out = ell_letters + "".join(sorted(c for c, n in counts.items()
                                           if n == 1 and c not in ell_letters))
    return terms, out


def _diagonals(x, term: str):
    """Take the diagonal for each index repeated within one operand (``ii->i``)."""
    from .. import expr as _expr

    while len(set(term)) != len(term):
        c = next(c for c in term if term.count(c) > 1)
        i = term.index(c)
        j = term.index(c, i + 1)
        shape = infer_shape(x)
        if shape[i] != shape[j]:
            raise ImportError_(f"einsum: index {c!r} has sizes {shape[i]} and {shape[j]}")
        mask_shape = [1] * len(shape)
        mask_shape[i] = mask_shape[j] = shape[i]
        dtype = str(infer_dtype(x))
        mask = np.eye(shape[i], dtype=dtype).reshape(mask_shape)
        x = _op.sum(_op.multiply(x, _expr.const(mask, dtype)), [j])
        term = term[:j] + term[j + 1:]
    return x, term


def _reduce_to(x, term: str, keep: set):
    """Sum away the letters of ``term`` not in ``keep``."""
    axes = [i for i, c in enumerate(term) if c not in keep]
    if not axes:
        return x, term
    return _op.sum(x, axes), "".join(c for c in term if c in keep)


def _dims(x) -> tuple:
    """``x``'s shape: ints, and the ``relay.Any()`` of each run-time size."""
    t = infer_type(x)
    if isinstance(t, TensorType) and all(isinstance(d, int | Any) for d in t.shape):
        return tuple(d if isinstance(d, Any) else int(d) for d in t.shape)
    return infer_shape(x)


def _joint(c: str, u, v):
    """The size of letter ``c`` shared by two operands of sizes ``u`` and ``v``: two run-time
    sizes are taken to be the same (batch_matmul checks it at run time), and a run-time size
    against a static one other than 1 is that one."""
    if not isinstance(u, Any) and not isinstance(v, Any):
        return max(u, v)
    if isinstance(u, Any) and isinstance(v, Any):
        return u
    static = v if isinstance(u, Any) else u
    if static == 1:
        raise ImportError_(f"einsum: index {c!r} has a run-time size in one operand and 1 in "
                           "the other (a broadcast of unknown size); pass static sizes in the "
                           "importer's shape=")
    return static


def _same(h, w) -> bool:
    """Sizes that need no broadcast: equal, or both of run-time size (see ``_joint``)."""
    if isinstance(h, Any) or isinstance(w, Any):
        return isinstance(h, Any) and isinstance(w, Any)
    return h == w


def _codes(groups: list, lead_copied: bool) -> tuple:
    """The reshape codes of ``groups`` (the sizes merged into each axis): a product, or for
    the one group holding run-time sizes 0 (``lead_copied``: the group leads, alone, an axis
    that stays in front) or -1."""
    out, dynamic = [], 0
    for i, vals in enumerate(groups):
        if any(isinstance(v, Any) for v in vals):
            dynamic += 1
            out.append(0 if i == 0 and lead_copied and len(vals) == 1 else -1)
        else:
            out.append(int(np.prod(vals)) if vals else 1)
    if dynamic > 1:
        raise ImportError_(f"einsum: run-time sizes in more than one merged axis of {groups}; "
                           "pass static sizes in the importer's shape=")
    return tuple(out)


def _pair(a, ta: str, b, tb: str, keep: str):
    sa = dict(zip(ta, _dims(a)))
    sb = dict(zip(tb, _dims(b)))
    batch = [c for c in ta if c in tb and c in keep]
    contract = [c for c in ta if c in tb and c not in keep]
    a_only = [c for c in ta if c not in tb]
    b_only = [c for c in tb if c not in ta]
    size = {c: _joint(c, sa[c], sb[c]) if c in sa and c in sb else sa.get(c, sb.get(c))
            for c in set(ta) | set(tb)}

    def arrange(x, term, order, sizes):
        x = _op.transpose(x, [term.index(c) for c in order]) if list(term) != order else x
        have = [sizes[c] for c in order]
        want = [size[c] if c in batch else sizes[c] for c in order]
        if not all(_same(h, w) for h, w in zip(have, want)):
            if any(isinstance(w, Any) for w in want):
                raise ImportError_("einsum: a broadcast to a run-time size; pass static "
                                   "sizes in the importer's shape=")
            x = _op.broadcast_to(x, tuple(want))
        return x

    a3 = _op.reshape(arrange(a, ta, batch + a_only + contract, sa),
                     _codes([[size[c] for c in batch], [sa[c] for c in a_only],
                             [sa[c] for c in contract]], True))
    b3 = _op.reshape(arrange(b, tb, batch + contract + b_only, sb),
                     _codes([[size[c] for c in batch], [sb[c] for c in contract],
                             [sb[c] for c in b_only]], True))
    out = _nn.batch_matmul(a3, b3, transpose_b=False)
    term = "".join(batch + a_only + b_only)
    # (the output's axis 0 is the batch letter's when it is the only one)
    return _op.reshape(out, _codes([[size[c]] for c in term], len(batch) == 1)), term


def einsum(equation: str, operands: list):
    """The Relay expression of ``numpy.einsum(equation, *operands)``."""
    terms, out = _parse(equation, [len(_dims(x)) for x in operands])
    xs = list(operands)
    for i, x in enumerate(xs):
        xs[i], terms[i] = _diagonals(x, terms[i])
    # letters still needed after each operand: by the output or by a later operand
    x, term = xs[0], terms[0]
    for i in range(1, len(xs)):
        later = set(out).union(*[set(t) for t in terms[i + 1:]])
        x, term = _reduce_to(x, term, later | set(terms[i]))
        y, ty = _reduce_to(xs[i], terms[i], later | set(term))
        x, term = _pair(x, term, y, ty, "".join(later))
    x, term = _reduce_to(x, term, set(out))
    if term != out:
        x = _op.transpose(x, [term.index(c) for c in out])
    return x

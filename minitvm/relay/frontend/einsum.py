"""``einsum`` on Relay ops, shared by the ONNX and PyTorch importers: operands are combined
pairwise, each pair as one batch_matmul after transposes and reshapes (static shapes)."""

from __future__ import annotations

import string

import numpy as np

from .. import op as _op
from ..op import nn as _nn
from .common import ImportError_, infer_dtype, infer_shape

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


def _pair(a, ta: str, b, tb: str, keep: str):
    sa = dict(zip(ta, infer_shape(a)))
    sb = dict(zip(tb, infer_shape(b)))
    batch = [c for c in ta if c in tb and c in keep]
    contract = [c for c in ta if c in tb and c not in keep]
    a_only = [c for c in ta if c not in tb]
    b_only = [c for c in tb if c not in ta]
    size = {c: max(sa.get(c, 1), sb.get(c, 1)) for c in set(ta) | set(tb)}

    def arrange(x, term, order, sizes):
        x = _op.transpose(x, [term.index(c) for c in order]) if list(term) != order else x
        want = tuple(size[c] if c in batch else sizes[c] for c in order)
        if tuple(sizes[c] for c in order) != want:
            x = _op.broadcast_to(x, want)
        return x

    nb = int(np.prod([size[c] for c in batch])) if batch else 1
    m = int(np.prod([sa[c] for c in a_only])) if a_only else 1
    k = int(np.prod([sa[c] for c in contract])) if contract else 1
    n = int(np.prod([sb[c] for c in b_only])) if b_only else 1
    a3 = _op.reshape(arrange(a, ta, batch + a_only + contract, sa), (nb, m, k))
    b3 = _op.reshape(arrange(b, tb, batch + contract + b_only, sb), (nb, k, n))
    out = _nn.batch_matmul(a3, b3, transpose_b=False)
    term = "".join(batch + a_only + b_only)
    return _op.reshape(out, tuple(size[c] for c in term)), term


def einsum(equation: str, operands: list):
    """The Relay expression of ``numpy.einsum(equation, *operands)``."""
    terms, out = _parse(equation, [len(infer_shape(x)) for x in operands])
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

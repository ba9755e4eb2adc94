"""TVM's ``topi.einsum`` on te tensors, and the subscripts parser the Relax op shares: one
stage ``T_einsum`` whose spatial axes are the output labels (ellipsis dims broadcast, numpy
style) and whose reduction axes are the other labels."""

from __future__ import annotations

from .. import te
from ..tir import expr as E
from .broadcast import ax_names, broadcast_shape, is_one
from .utils import compute, out_dims, out_tensor_types

__all__ = ["einsum", "parse_einsum", "EinsumSpec"]


class EinsumSpec:
    """The parsed subscripts: per operand a list of labels (``"..."`` for the ellipsis) and
    the output's labels."""

    __slots__ = ("inputs", "output")

    def __init__(self, inputs: list[list[str]], output: list[str]):
        self.inputs = inputs
        self.output = output

    def reduced(self) -> list[str]:
        """Labels that appear in some input but not in the output, in first-seen order."""
        out, seen = [], set(self.output)
        for labels in self.inputs:
            for c in labels:
                if c != "..." and c not in seen:
                    seen.add(c)
                    out.append(c)
        return out


def _labels(term: str, what: str) -> list[str]:
    out: list[str] = []
    k = 0
    while k < len(term):
        if term.startswith("...", k):
            if "..." in out:
                raise ValueError(f"einsum: {what} {term!r} has more than one ellipsis")
            out.append("...")
            k += 3
        elif term[k].isalpha():
            out.append(term[k])
            k += 1
        else:
            raise ValueError(f"einsum: invalid character {term[k]!r} in {what} {term!r} "
                             "(labels are letters, plus one '...')")
    return out


def parse_einsum(subscripts: str, num_operands: int) -> EinsumSpec:
    """Parse ``subscripts`` for ``num_operands`` operands (a ValueError naming the problem)."""
    s = subscripts.replace(" ", "")
    if s.count("->") > 1:
        raise ValueError(f"einsum: subscripts {subscripts!r} have more than one '->'")
    lhs, arrow, rhs = s.partition("->")
    terms = lhs.split(",")
    if len(terms) != num_operands:
        raise ValueError(f"einsum: subscripts {subscripts!r} name {len(terms)} operands, but "
                         f"{num_operands} are given")
    inputs = [_labels(t, "operand subscripts") for t in terms]
    if arrow:
        output = _labels(rhs, "output subscripts")
        known = {c for labels in inputs for c in labels}
        for c in output:
            if c not in known:
                raise ValueError(f"einsum: output label {c!r} of {subscripts!r} appears in no "
                                 "operand")
        if len(set(output)) != len(output):
            raise ValueError(f"einsum: output subscripts of {subscripts!r} repeat a label")
    else:
        counts: dict[str, int] = {}
        for labels in inputs:
            for c in labels:
                counts[c] = counts.get(c, 0) + 1
        ell = ["..."] if any("..." in labels for labels in inputs) else []
        output = ell + sorted(c for c, n in counts.items() if n == 1 and c != "...")
    return EinsumSpec(inputs, output)


def einsum(subscripts: str, *operands, out_shape=None):
    """Einstein summation of ``operands`` by ``subscripts`` (numpy's notation, implicit output
    order included)."""
    spec = parse_einsum(subscripts, len(operands))
    label_dim: dict = {}
    ell_of: list[list] = []
    for x, labels in zip(operands, spec.inputs, strict=True):
        dims = list(x.shape)
        n_ell = len(dims) - (len(labels) - 1) if "..." in labels else 0
        pos, ell = 0, []
        for c in labels:
            if c == "...":
                ell = dims[pos:pos + n_ell]
                pos += n_ell
                continue
            if c not in label_dim or is_one(label_dim[c]):
                label_dim[c] = dims[pos]
            pos += 1
        ell_of.append(ell)
    ell_shape = broadcast_shape(*ell_of) if any(ell_of) else []
    shape = []
    for c in spec.output:
        shape.extend(ell_shape if c == "..." else [label_dim[c]])
    if out_shape is not None:
        shape = list(out_shape)
    reduced = spec.reduced()
    raxes = {c: te.reduce_axis((E.IntImm(label_dim[c].dtype, 0), label_dim[c]), name=c)
             for c in reduced}

    def body(*i):
        at: dict = {}
        pos = 0
        ell_idx: list = []
        for c in spec.output:
            if c == "...":
                ell_idx = list(i[pos:pos + len(ell_shape)])
                pos += len(ell_shape)
            else:
                at[c] = i[pos]
                pos += 1
        for c, r in raxes.items():
            at[c] = r
        prod = None
        for x, labels, ell in zip(operands, spec.inputs, ell_of, strict=True):
            idx = []
            for c in labels:
                if c == "...":
                    lead = len(ell_shape) - len(ell)
                    for j, d in enumerate(ell):
                        full = ell_shape[lead + j]
                        idx.append(E.IntImm(d.dtype, 0) if is_one(d) and not is_one(full)
                                   else ell_idx[lead + j])
                else:
                    d = x.shape[len(idx)]
                    idx.append(E.IntImm(d.dtype, 0) if is_one(d) and not is_one(label_dim[c])
                               else at[c])
            v = x[tuple(idx)] if idx else x[()]
            prod = v if prod is None else prod * v
        return te.sum(prod, axis=list(raxes.values())) if raxes else prod

    if not shape:
        return te.compute((), lambda: body(), name="T_einsum")
    return te.compute(shape, body, name="T_einsum", varargs_names=ax_names(len(shape)))


@compute("einsum")
def _einsum_compute(attrs, inputs, out_type):
    """Relay's ``einsum`` (its operands a tuple): one ``T_einsum`` stage."""
    shape = out_dims(out_tensor_types(out_type)[0])
    out = einsum(str(attrs.equation), *inputs, out_shape=shape or None)
    return [out]

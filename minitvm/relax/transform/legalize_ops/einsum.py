"""Legalization of ``einsum``. A two-operand contraction whose labels each appear once per
operand becomes ``permute_dims`` + ``reshape`` + one ``matmul`` (+ ``reshape`` +
``permute_dims``), each legalized in turn, so it runs on the GEMM kernels, symbolic batch
included (as Relay's importers lower einsum); anything else is one ``topi.einsum`` stage
(``T_einsum``, a plain reduction loop nest: an einsum attention at batch 4 took 8.5 ms so,
0.85 ms in ONNX Runtime)."""

from __future__ import annotations

from ....ir import structural_equal
from ....ir.prim_expr import IntImm
from ....tir import expr as E
from ....topi import einsum as topi_einsum
from ...op import linear_algebra as _linalg
from ...op import manipulate as _manip
from ...op import statistical as _stat
from .common import call_topi, get_legalize, out_shape, register_legalize

__all__: list[str] = []


@register_legalize("relax.einsum")
def _einsum(bb, call):
    subscripts = str(call.attrs.subscripts)
    operands = _fields(bb, call.args[0])
    lowered = _as_matmul(bb, subscripts, operands, call.struct_info.dtype)
    if lowered is not None:
        return lowered
    shape = out_shape(call)
    return call_topi(bb, lambda *xs: topi_einsum.einsum(subscripts, *xs, out_shape=shape),
                     *operands, name="einsum")


def _fields(bb, operands):
    from ...expr import Tuple, TupleGetItem

    if isinstance(operands, Tuple):
        return list(operands.fields)
    n = len(operands.struct_info.fields)
    return [bb.emit(TupleGetItem(operands, k)) for k in range(n)]


def _emit(bb, call):
    """``call`` (a Relax op call) bound through its own legalization."""
    call = bb.normalize(call)
    return bb.emit(get_legalize(call.op)(bb, call))


def _product(dims):
    out = IntImm("int64", 1)
    for d in dims:
        if isinstance(out, IntImm) and isinstance(d, IntImm):
            out = IntImm("int64", out.value * d.value)
        else:
            out = E.Mul(out, d) if not (isinstance(out, IntImm) and out.value == 1) else d
    return out


def _same_dim(a, b) -> bool:
    """Two dims known equal here: the same constant or the same symbolic expression."""
    if isinstance(a, IntImm) and isinstance(b, IntImm):
        return a.value == b.value
    return a is b or structural_equal(a, b)


def _as_matmul(bb, subscripts, operands, dtype):
    """The einsum as one matmul, or None where that does not apply (one or three operands,
    an ellipsis, a label repeated within an operand, a label's sizes that differ)."""
    if len(operands) != 2 or "..." in subscripts:
        return None
    spec = topi_einsum.parse_einsum(subscripts, 2)
    (la, lb), out = spec.inputs, spec.output
    if len(set(la)) != len(la) or len(set(lb)) != len(lb):
        return None
    shapes = [list(x.struct_info.shape.values) for x in operands]
    if any(len(s) != len(labels) for s, labels in zip(shapes, (la, lb), strict=True)):
        return None
    size = dict(zip(la, shapes[0], strict=True))
    for c, d in zip(lb, shapes[1], strict=True):
        if c in size and not _same_dim(size[c], d):
            return None  # broadcasting a size-1 label, or sizes only known to be equal at run
        size.setdefault(c, d)
    x, y = operands
    # labels of one operand only that the output drops are summed away first
    x, la = _sum_out(bb, x, la, set(lb) | set(out))
    y, lb = _sum_out(bb, y, lb, set(la) | set(out))
    batch = [c for c in out if c in la and c in lb]
    free_a = [c for c in out if c in la and c not in lb]
    free_b = [c for c in out if c in lb and c not in la]
    contract = [c for c in la if c in lb and c not in out]
    dims = [size[c] for c in batch]
    m, k, n = (_product(size[c] for c in g) for g in (free_a, contract, free_b))
    x = _arrange(bb, x, la, batch + free_a + contract, [*dims, m, k])
    y = _arrange(bb, y, lb, batch + contract + free_b, [*dims, k, n])
    z = _emit(bb, _linalg.matmul(x, y, out_dtype=dtype))
    got = batch + free_a + free_b
    z = _emit(bb, _manip.reshape(z, [*dims, *(size[c] for c in free_a + free_b)]))
    if got != out:
        z = _emit(bb, _manip.permute_dims(z, [got.index(c) for c in out]))
    return z


def _sum_out(bb, x, labels, keep):
    drop = [i for i, c in enumerate(labels) if c not in keep]
    if not drop:
        return x, labels
    x = _emit(bb, _stat.sum(x, drop))
    return x, [c for c in labels if c in keep]


def _arrange(bb, x, labels, order, shape):
    """``x`` transposed into ``order`` and reshaped to ``shape`` (steps that change nothing
    are left out)."""
    if labels != order:
        x = _emit(bb, _manip.permute_dims(x, [labels.index(c) for c in order]))
    current = list(x.struct_info.shape.values)
    if len(current) != len(shape) or not all(_same_dim(a, b) for a, b in
                                             zip(current, shape, strict=True)):
        x = _emit(bb, _manip.reshape(x, shape))
    return x

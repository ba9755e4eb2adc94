"""Complex tensors in the PyTorch importers, which Relay and Relax share: neither IR has a
complex dtype, so a complex value between ``torch.fft`` calls lives in the importer as a
:class:`ComplexValue`, a pair of float tensors of one shape. This module holds what does
not depend on the dialect: the pair, the marker of converters that accept it, the check
that refuses it elsewhere, the wrappers that route a complex operand of a real converter
(layout ops apply per part), and complex add / subtract / multiply / divide / abs written against
:class:`Arith`, the real operations each dialect supplies (Relay builds calls,
Relax also emits them as bindings).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["ComplexValue", "Arith", "handles_complex", "refuse_complex", "complex_aware",
           "per_part", "complex_conjugate", "complex_product", "complex_sum", "complex_quotient", "complex_abs",
           "complex_exp", "complex_multilinear", "operand_pair"]


class ComplexValue:
    """A complex tensor as two float expressions (real, imaginary) of one shape; ``im`` is
    None only for a real operand of complex arithmetic."""

    __slots__ = ("re", "im")

    def __init__(self, re, im):
        self.re, self.im = re, im


@dataclass(frozen=True)
class Arith:
    """The real operations complex arithmetic needs, each building one dialect's expression."""

    add: Callable[[Any, Any], Any]
    subtract: Callable[[Any, Any], Any]
    multiply: Callable[[Any, Any], Any]
    negative: Callable[[Any], Any]
    sqrt: Callable[[Any], Any]
    divide: Callable[[Any, Any], Any]


def handles_complex(fn):
    """Mark ``fn`` as a converter that takes complex operands."""
    fn.handles_complex = True
    return fn


def refuse_complex(fn, args, fail: Callable[[], Exception]) -> None:
    """Raise ``fail()`` when ``fn``, a converter that does not take complex values, is given
    one (directly or in a list argument)."""
    if getattr(fn, "handles_complex", False):
        return
    for a in args:
        if isinstance(a, ComplexValue) or (isinstance(a, list | tuple) and any(
                isinstance(b, ComplexValue) for b in a)):
            raise fail()


def _is_complex_operand(a) -> bool:
    """A complex value, a Python complex number (``1j * x``), or a list holding one."""
    if isinstance(a, list | tuple):
        return any(_is_complex_operand(b) for b in a)
    return isinstance(a, ComplexValue | complex)


def complex_aware(real, on_complex):
    """A converter that calls ``on_complex`` when an operand is complex (a complex value,
    a Python complex number, or either inside a list argument), else ``real``."""

    @handles_complex
    def convert(ctx, args):
        if any(_is_complex_operand(a) for a in args):
            return on_complex(ctx, args)
        return real(ctx, args)

    return convert


def per_part(real):
    """A layout op (slice, select, permute, view, ...) on a complex value: ``real`` applied
    to its real and imaginary parts with the same other arguments."""

    def convert(ctx, args):
        z = args[0]
        return ComplexValue(real(ctx, [z.re, *args[1:]]), real(ctx, [z.im, *args[1:]]))

    return convert


def operand_pair(args, as_complex: Callable[[Any, ComplexValue], ComplexValue]):
    """The first two of ``args`` as ComplexValues: ``as_complex(v, z)`` turns a real tensor
    or number ``v`` into one, given ``z``, the complex operand (for its dtype). With a real
    tensor and a Python complex number (``1j * x``, no complex value yet), ``z`` is the
    tensor as a complex value with no imaginary part."""
    pair = list(args[:2])
    z = next((v for v in pair if isinstance(v, ComplexValue)), None)
    if z is None:
        z = ComplexValue(next(v for v in pair if not isinstance(v, int | float | complex)),
                         None)
    return [v if isinstance(v, ComplexValue) else as_complex(v, z) for v in pair]


def complex_conjugate(z, ar: Arith):
    """``conj(z)``: the imaginary part negated; a real tensor (not a ComplexValue, or one
    with no imaginary part) is its own conjugate, as torch's ``conj`` of a real tensor."""
    if not isinstance(z, ComplexValue) or z.im is None:
        return z
    return ComplexValue(z.re, ar.negative(z.im))


def complex_product(a: ComplexValue, b: ComplexValue, ar: Arith) -> ComplexValue:
    """``a * b``; a real operand (``im`` None) scales both parts of the other."""
    if a.im is None or b.im is None:
        z, r = (b, a.re) if a.im is None else (a, b.re)
        return ComplexValue(ar.multiply(z.re, r), ar.multiply(z.im, r))
    return ComplexValue(ar.subtract(ar.multiply(a.re, b.re), ar.multiply(a.im, b.im)),
                        ar.add(ar.multiply(a.re, b.im), ar.multiply(a.im, b.re)))


def complex_sum(a: ComplexValue, b: ComplexValue, sign: int, ar: Arith) -> ComplexValue:
    """``a + b`` (``sign`` 1) or ``a - b`` (-1); a real operand has no imaginary part."""
    fn = ar.add if sign > 0 else ar.subtract
    re = fn(a.re, b.re)
    if a.im is None:
        im = b.im if sign > 0 else ar.negative(b.im)
    else:
        im = a.im if b.im is None else fn(a.im, b.im)
    return ComplexValue(re, im)


def complex_quotient(a: ComplexValue, b: ComplexValue, ar: Arith) -> ComplexValue:
    """``a / b``: by a real ``b`` part by part, else ``a * conj(b) / |b|^2``."""
    if b.im is None:
        return ComplexValue(ar.divide(a.re, b.re),
                            None if a.im is None else ar.divide(a.im, b.re))
    den = ar.add(ar.multiply(b.re, b.re), ar.multiply(b.im, b.im))
    if a.im is None:
        re, im = ar.multiply(a.re, b.re), ar.negative(ar.multiply(a.re, b.im))
    else:
        re = ar.add(ar.multiply(a.re, b.re), ar.multiply(a.im, b.im))
        im = ar.subtract(ar.multiply(a.im, b.re), ar.multiply(a.re, b.im))
    return ComplexValue(ar.divide(re, den), ar.divide(im, den))


def complex_abs(z: ComplexValue, ar: Arith):
    """``|z|``, a real tensor."""
    return ar.sqrt(ar.add(ar.multiply(z.re, z.re), ar.multiply(z.im, z.im)))


def complex_exp(z: ComplexValue, exp, cos, sin, multiply) -> ComplexValue:
    """``exp(a + ib) = e^a (cos b + i sin b)``; ``exp`` / ``cos`` / ``sin`` / ``multiply``
    build the dialect's real operations."""
    if z.im is None:
        return ComplexValue(exp(z.re), None)
    m = exp(z.re)
    return ComplexValue(multiply(m, cos(z.im)), multiply(m, sin(z.im)))


def complex_multilinear(fn: Callable[[list], Any], operands: list[ComplexValue],
                        ar: Arith) -> ComplexValue:
    """``fn(operands)`` for ``fn`` linear in each operand (einsum, matmul) with complex
    operands: expanded into one real call per choice of each operand's real or imaginary
    part, a term with k imaginary parts counted with the factor i^k (so 2^c calls for c
    complex operands, 4 for a product of two)."""
    terms: list[tuple[list, int]] = [([], 0)]
    for z in operands:
        terms = [(parts + [z.re], k) for parts, k in terms] + (
            [] if z.im is None else [(parts + [z.im], k + 1) for parts, k in terms])
    re = im = None
    for parts, k in terms:
        value, negate = fn(parts), k % 4 >= 2
        acc = re if k % 2 == 0 else im
        if acc is None:
            acc = ar.negative(value) if negate else value
        else:
            acc = ar.subtract(acc, value) if negate else ar.add(acc, value)
        if k % 2 == 0:
            re = acc
        else:
            im = acc
    return ComplexValue(re, im)

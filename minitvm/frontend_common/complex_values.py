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
           "per_part", "complex_product", "complex_sum", "complex_quotient", "complex_abs",
           "operand_pair"]


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


def complex_aware(real, on_complex):
    """A converter that calls ``on_complex`` when an operand is complex, else ``real``."""

    @handles_complex
    def convert(ctx, args):
        if any(isinstance(a, ComplexValue) for a in args):
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
    or number ``v`` into one, given ``z``, the complex operand (for its dtype)."""
    z = args[0] if isinstance(args[0], ComplexValue) else args[1]
    return [v if isinstance(v, ComplexValue) else as_complex(v, z) for v in args[:2]]


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

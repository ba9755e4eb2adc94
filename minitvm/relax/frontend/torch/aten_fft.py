"""torch.export's FFTs (``_fft_r2c`` / ``_fft_c2r`` / ``_fft_c2c``, what ``torch.fft.rfft2``
and its kin decompose to) and the complex arithmetic between them, as GFNet's global filter
uses them. Relax has no complex dtype: a complex value lives in the importer only, as a
:class:`ComplexValue` pair of float tensors, each FFT a matmul with constant cosine and sine
matrices per transformed axis (``frontend_common.dft``); it must end as a real tensor
(``_fft_c2r``, ``view_as_real``, ``abs``) before the program's output. Layout ops (slice,
select, permute, view, ...) apply to both parts; any other op on it is refused with an error
that names the op."""

from __future__ import annotations

import numpy as np

from ....frontend_common.dft import c2c_matrices, c2r_matrices, r2c_matrices, scale
from ... import op as _op
from ...expr import Expr, const
from .context import ATEN, AtenContext, register


class ComplexValue:
    """A complex tensor as two float Relax expressions of one shape."""

    __slots__ = ("re", "im")

    def __init__(self, re, im):
        self.re, self.im = re, im


def _complex_op(fn):
    """Mark ``fn`` as a converter that takes complex operands."""
    fn.handles_complex = True
    return fn


def refuse_complex(ctx: AtenContext, fn, args) -> None:
    """Raise a clear error when ``fn``, a converter that does not take complex values, is
    given one (directly or in a list argument)."""
    if getattr(fn, "handles_complex", False):
        return
    for a in args:
        if isinstance(a, ComplexValue) or (isinstance(a, list | tuple) and any(
                isinstance(b, ComplexValue) for b in a)):
            raise _unsupported(ctx, ctx.node.target if ctx.node is not None else "this op")


def _unsupported(ctx: AtenContext, what):
    return ctx.fail(f"{what} of a complex tensor is not supported: complex values exist only "
                    f"between FFTs, complex multiplies/adds and view_as_real / abs")


def _static(ctx: AtenContext, x, axis: int) -> int:
    n = ctx.shape(x)[axis]
    if not isinstance(n, int):
        raise ctx.fail(f"an FFT over axis {axis} of symbolic size {n} is not supported (the "
                       f"transformed axes must be static)")
    return n


def _apply(ctx: AtenContext, x, axis: int, mat: np.ndarray):
    """``x`` contracted along ``axis`` with ``mat`` [n_in, n_out] (the axis moved last, one
    matmul, moved back)."""
    nd = ctx.ndim(x)
    perm = [d for d in range(nd) if d != axis] + [axis]
    moved = x if axis == nd - 1 else ctx.emit(_op.permute_dims(x, perm))
    y = ctx.emit(_op.matmul(moved, const(mat.astype(ctx.dtype(x)))))
    if axis == nd - 1:
        return y
    return ctx.emit(_op.permute_dims(y, [int(b) for b in np.argsort(perm)]))


def _axes(ctx: AtenContext, x, dims) -> list[int]:
    nd = ctx.ndim(x)
    return [int(d) % nd for d in dims]


def _c2c_axis(ctx, z: ComplexValue, axis: int, forward: bool, norm) -> ComplexValue:
    n = _static(ctx, z.re, axis)
    c, s = c2c_matrices(n, forward, scale(norm, n, forward))
    re = ctx.emit(_op.add(_apply(ctx, z.re, axis, c), _apply(ctx, z.im, axis, s)))
    im = ctx.emit(_op.subtract(_apply(ctx, z.im, axis, c), _apply(ctx, z.re, axis, s)))
    return ComplexValue(re, im)


@register("_fft_r2c.default")
@_complex_op
def _fft_r2c(ctx: AtenContext, args):
    """(self, dim, normalization, onesided): the last of ``dim`` real-to-complex, the others
    complex DFTs."""
    x, dims, norm, onesided = args[0], args[1], int(args[2]), bool(args[3])
    if isinstance(x, ComplexValue):
        raise ctx.fail("the input of a real-to-complex FFT is complex")
    axes = _axes(ctx, x, dims)
    n = _static(ctx, x, axes[-1])
    c, s = r2c_matrices(n, onesided, scale(norm, n, True))
    z = ComplexValue(_apply(ctx, x, axes[-1], c), _apply(ctx, x, axes[-1], s))
    for a in reversed(axes[:-1]):
        z = _c2c_axis(ctx, z, a, True, norm)
    return z


@register("_fft_c2r.default")
@_complex_op
def _fft_c2r(ctx: AtenContext, args):
    """(self, dim, normalization, last_dim_size): inverse complex DFTs, then the last axis
    back to ``last_dim_size`` real points."""
    z, dims, norm, n = args[0], args[1], int(args[2]), int(args[3])
    if not isinstance(z, ComplexValue):
        raise ctx.fail("the input of a complex-to-real FFT is real")
    axes = _axes(ctx, z.re, dims)
    for a in axes[:-1]:
        z = _c2c_axis(ctx, z, a, False, norm)
    c, s = c2r_matrices(_static(ctx, z.re, axes[-1]), n, scale(norm, n, False))
    return ctx.emit(_op.add(_apply(ctx, z.re, axes[-1], c), _apply(ctx, z.im, axes[-1], s)))


@register("_fft_c2c.default")
@_complex_op
def _fft_c2c(ctx: AtenContext, args):
    """(self, dim, normalization, forward)."""
    z, dims, norm, forward = args[0], args[1], int(args[2]), bool(args[3])
    if not isinstance(z, ComplexValue):
        raise ctx.fail("the input of a complex-to-complex FFT is real")
    for a in reversed(_axes(ctx, z.re, dims)):
        z = _c2c_axis(ctx, z, a, forward, norm)
    return z


@register("view_as_complex.default")
@_complex_op
def _view_as_complex(ctx: AtenContext, args):
    x = args[0]
    shape = ctx.shape(x)
    if shape[-1] != 2:
        raise ctx.fail(f"needs a last axis of 2 (real, imaginary), got shape {shape}")
    nd = len(shape)
    parts = [ctx.emit(_op.take(x, const(np.array(i, "int64")), axis=nd - 1)) for i in (0, 1)]
    return ComplexValue(*parts)


@register("view_as_real.default")
@_complex_op
def _view_as_real(ctx: AtenContext, args):
    z = args[0]
    if not isinstance(z, ComplexValue):
        raise ctx.fail("the input is not complex")
    return ctx.emit(_op.stack([z.re, z.im], -1))


def _complex_aware(name: str, on_complex):
    """Wrap the real converter of ``name`` so that a complex operand goes to ``on_complex``."""
    real = ATEN[name]

    @_complex_op
    def convert(ctx, args):
        if any(isinstance(a, ComplexValue) for a in args):
            return on_complex(ctx, args)
        return real(ctx, args)

    return convert


def _operands(ctx: AtenContext, args):
    """Both operands as ComplexValues (``im`` None for a real tensor or number)."""
    z = args[0] if isinstance(args[0], ComplexValue) else args[1]
    out = []
    for v in args[:2]:
        if isinstance(v, ComplexValue):
            out.append(v)
        elif isinstance(v, Expr):
            out.append(ComplexValue(v, None))
        elif isinstance(v, int | float) and not isinstance(v, bool):
            out.append(ComplexValue(ctx.tensor(float(v), z.re), None))
        else:
            raise _unsupported(ctx, f"{ctx.node.target} with a {type(v).__name__} operand")
    return out


def _cmul(ctx: AtenContext, args):
    a, b = _operands(ctx, args)
    if a.im is None or b.im is None:
        z, r = (b, a.re) if a.im is None else (a, b.re)
        return ComplexValue(ctx.emit(_op.multiply(z.re, r)), ctx.emit(_op.multiply(z.im, r)))
    re = _op.subtract(_op.multiply(a.re, b.re), _op.multiply(a.im, b.im))
    im = _op.add(_op.multiply(a.re, b.im), _op.multiply(a.im, b.re))
    return ComplexValue(ctx.emit(re), ctx.emit(im))


def _cadd(sign: int):
    def convert(ctx: AtenContext, args):
        if len(args) > 2 and args[2] not in (1, None):
            raise _unsupported(ctx, f"{ctx.node.target} with alpha")
        a, b = _operands(ctx, args)
        fn = _op.add if sign > 0 else _op.subtract
        re = ctx.emit(fn(a.re, b.re))
        if a.im is None:
            im = b.im if sign > 0 else ctx.emit(_op.negative(b.im))
        else:
            im = a.im if b.im is None else ctx.emit(fn(a.im, b.im))
        return ComplexValue(re, im)

    return convert


def _cdiv(ctx: AtenContext, args):
    """``a / b`` with a complex operand (Hyena's ``rfft(k, n=2L) / (2L)``): by a real one part
    by part, else ``a * conj(b) / |b|^2``."""
    if len(args) > 2 and args[2] is not None:
        raise _unsupported(ctx, f"{ctx.node.target} with rounding_mode")
    a, b = _operands(ctx, args)
    if b.im is None:
        return ComplexValue(ctx.emit(_op.divide(a.re, b.re)), ctx.emit(_op.divide(a.im, b.re)))
    den = ctx.emit(_op.add(_op.multiply(b.re, b.re), _op.multiply(b.im, b.im)))
    if a.im is None:
        re, im = _op.multiply(a.re, b.re), _op.negative(_op.multiply(a.re, b.im))
    else:
        re = _op.add(_op.multiply(a.re, b.re), _op.multiply(a.im, b.im))
        im = _op.subtract(_op.multiply(a.im, b.re), _op.multiply(a.re, b.im))
    return ComplexValue(ctx.emit(_op.divide(re, den)), ctx.emit(_op.divide(im, den)))


def _cabs(ctx: AtenContext, args):
    z = args[0]
    return ctx.emit(_op.sqrt(_op.add(_op.multiply(z.re, z.re), _op.multiply(z.im, z.im))))


def _per_part(name: str):
    """A layout op (slice, select, permute, view, ...) on a complex value: the same op on its
    real and imaginary parts."""
    real = ATEN[name]

    def convert(ctx: AtenContext, args):
        z = args[0]
        return ComplexValue(real(ctx, [z.re, *args[1:]]), real(ctx, [z.im, *args[1:]]))

    return convert


def _zero_pad(ctx: AtenContext, args):
    """constant_pad_nd of a complex value (an irfft's spectrum zero-padded to ``s``)."""
    if len(args) > 2 and args[2] not in (0, 0.0, None):
        raise _unsupported(ctx, f"{ctx.node.target} with a non-zero value")
    return _per_part("constant_pad_nd.default")(ctx, args)


_LAYOUT = ("slice.Tensor", "select.int", "permute.default", "view.default",
           "reshape.default", "unsqueeze.default", "squeeze.dim", "transpose.int",
           "expand.default", "clone.default")

for _name in _LAYOUT:
    if _name in ATEN:
        register(_name)(_complex_aware(_name, _per_part(_name)))
register("constant_pad_nd.default")(_complex_aware("constant_pad_nd.default", _zero_pad))


def _is_complex_dtype(dt) -> bool:
    return getattr(dt, "is_complex", False) is True


@register("_to_copy.default")
@_complex_op
def _to_copy(ctx: AtenContext, args, _real=ATEN["_to_copy.default"]):
    """A cast to complex64 (torch.fft.fft of a real tensor starts with one): the tensor as
    the real part, zeros as the imaginary; a complex value cast to complex64 stays."""
    x = args[0]
    dt = args[1] if len(args) > 1 else None
    if not isinstance(x, ComplexValue) and not _is_complex_dtype(dt):
        return _real(ctx, args)
    if dt is not None and str(dt) != "torch.complex64":
        raise ctx.fail(f"a cast to {dt} is not supported (complex values are complex64)")
    if isinstance(x, ComplexValue):
        return x
    if ctx.dtype(x) != "float32":
        x = ctx.emit(_op.astype(x, "float32"))
    return ComplexValue(x, ctx.emit(_op.zeros_like(x)))

for _name, _fn in (("mul.Tensor", _cmul), ("mul.Scalar", _cmul), ("add.Tensor", _cadd(1)),
                   ("add.Scalar", _cadd(1)), ("sub.Tensor", _cadd(-1)),
                   ("sub.Scalar", _cadd(-1)), ("div.Tensor", _cdiv), ("div.Scalar", _cdiv),
                   ("abs.default", _cabs)):
    register(_name)(_complex_aware(_name, _fn))

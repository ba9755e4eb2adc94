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

from ....frontend_common import complex_values as cv
from ....frontend_common.complex_values import ComplexValue, handles_complex
from ....frontend_common.dft import c2c_matrices, c2r_matrices, r2c_matrices, scale
from ... import op as _op
from ...expr import Expr, const
from ..common import contract_axis
from .context import ATEN, AtenContext, register


def _arith(ctx: AtenContext) -> cv.Arith:
    """Complex arithmetic's real operations, each emitted as a binding."""
    def two(fn):
        return lambda a, b: ctx.emit(fn(a, b))

    def one(fn):
        return lambda a: ctx.emit(fn(a))

    return cv.Arith(two(_op.add), two(_op.subtract), two(_op.multiply), one(_op.negative),
                    one(_op.sqrt), two(_op.divide))


def refuse_complex(ctx: AtenContext, fn, args) -> None:
    """Raise a clear error when ``fn``, a converter that does not take complex values, is
    given one (directly or in a list argument)."""
    what = ctx.node.target if ctx.node is not None else "this op"
    cv.refuse_complex(fn, args, lambda: _unsupported(ctx, what))


def _unsupported(ctx: AtenContext, what):
    return ctx.fail(f"{what} of a complex tensor is not supported: complex values exist only "
                    f"between FFTs, complex multiplies/adds and view_as_real / abs")


def _static(ctx: AtenContext, x, axis: int) -> int:
    n = ctx.shape(x)[axis]
    if not isinstance(n, int):
        raise ctx.fail(f"an FFT over axis {axis} of symbolic size {n} is not supported (the "
                       f"transformed axes must be static)")
    return n


def _axes(ctx: AtenContext, x, dims) -> list[int]:
    nd = ctx.ndim(x)
    return [int(d) % nd for d in dims]


def _c2c_axis(ctx, z: ComplexValue, axis: int, forward: bool, norm) -> ComplexValue:
    n = _static(ctx, z.re, axis)
    c, s = c2c_matrices(n, forward, scale(norm, n, forward))
    re = ctx.emit(_op.add(contract_axis(ctx, z.re, axis, c), contract_axis(ctx, z.im, axis, s)))
    im = ctx.emit(_op.subtract(contract_axis(ctx, z.im, axis, c), contract_axis(ctx, z.re, axis, s)))
    return ComplexValue(re, im)


@register("_fft_r2c.default")
@handles_complex
def _fft_r2c(ctx: AtenContext, args):
    """(self, dim, normalization, onesided): the last of ``dim`` real-to-complex, the others
    complex DFTs."""
    x, dims, norm, onesided = args[0], args[1], int(args[2]), bool(args[3])
    if isinstance(x, ComplexValue):
        raise ctx.fail("the input of a real-to-complex FFT is complex")
    axes = _axes(ctx, x, dims)
    n = _static(ctx, x, axes[-1])
    c, s = r2c_matrices(n, onesided, scale(norm, n, True))
    z = ComplexValue(contract_axis(ctx, x, axes[-1], c), contract_axis(ctx, x, axes[-1], s))
    for a in reversed(axes[:-1]):
        z = _c2c_axis(ctx, z, a, True, norm)
    return z


@register("_fft_c2r.default")
@handles_complex
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
    return ctx.emit(_op.add(contract_axis(ctx, z.re, axes[-1], c), contract_axis(ctx, z.im, axes[-1], s)))


@register("_fft_c2c.default")
@handles_complex
def _fft_c2c(ctx: AtenContext, args):
    """(self, dim, normalization, forward)."""
    z, dims, norm, forward = args[0], args[1], int(args[2]), bool(args[3])
    if not isinstance(z, ComplexValue):
        raise ctx.fail("the input of a complex-to-complex FFT is real")
    for a in reversed(_axes(ctx, z.re, dims)):
        z = _c2c_axis(ctx, z, a, forward, norm)
    return z


@register("view_as_complex.default")
@handles_complex
def _view_as_complex(ctx: AtenContext, args):
    x = args[0]
    shape = ctx.shape(x)
    if shape[-1] != 2:
        raise ctx.fail(f"needs a last axis of 2 (real, imaginary), got shape {shape}")
    nd = len(shape)
    parts = [ctx.emit(_op.take(x, const(np.array(i, "int64")), axis=nd - 1)) for i in (0, 1)]
    return ComplexValue(*parts)


def _check_real_pair(ctx, a, b, what: str) -> None:
    """The two parts of torch.complex / torch.polar: real tensors of one floating dtype."""
    if not (isinstance(a, Expr) and isinstance(b, Expr)):
        raise ctx.fail(f"expects two real tensors ({what})")
    if ctx.dtype(a) != ctx.dtype(b) or not ctx.dtype(a).startswith("float"):
        raise ctx.fail(f"expects two floating-point tensors of one dtype, got "
                       f"{ctx.dtype(a)} and {ctx.dtype(b)}")


@register("complex.default")
def _complex(ctx: AtenContext, args):
    """torch.complex(real, imag) (FNO's spectrum rebuilt from its parts; torch.export keeps
    it as one op); the parts broadcast against each other as torch's do."""
    re, im = args[0], args[1]
    _check_real_pair(ctx, re, im, "real part, imaginary part")
    if ctx.shape(re) != ctx.shape(im):
        shapes = (ctx.shape(re), ctx.shape(im))
        if not all(isinstance(d, int) for s in shapes for d in s):
            raise ctx.fail(f"parts of different symbolic shapes {shapes[0]} and {shapes[1]}")
        out = ctx.shape_expr(list(np.broadcast_shapes(*shapes)))
        re, im = ctx.emit(_op.broadcast_to(re, out)), ctx.emit(_op.broadcast_to(im, out))
    return ComplexValue(re, im)


@register("polar.default")
def _polar(ctx: AtenContext, args):
    """torch.polar(abs, angle): ``abs cos(angle) + i abs sin(angle)``."""
    r, theta = args[0], args[1]
    _check_real_pair(ctx, r, theta, "abs, angle")
    return ComplexValue(ctx.emit(_op.multiply(r, ctx.emit(_op.cos(theta)))),
                        ctx.emit(_op.multiply(r, ctx.emit(_op.sin(theta)))))


@register("conj.default", "_conj.default", "conj_physical.default",
          "resolve_conj.default")
@handles_complex
def _conj(ctx: AtenContext, args):
    """``torch.conj`` of a spectrum (Autoformer's ``rfft(q) * conj(rfft(k))``); the exporter
    records the lazy ``_conj``, and ``resolve_conj`` has nothing left to materialize."""
    if str(ctx.node.target) == "aten.resolve_conj.default":
        return args[0]
    return cv.complex_conjugate(args[0], _arith(ctx))


@register("view_as_real.default")
@handles_complex
def _view_as_real(ctx: AtenContext, args):
    z = args[0]
    if not isinstance(z, ComplexValue):
        raise ctx.fail("the input is not complex")
    return ctx.emit(_op.stack([z.re, z.im], -1))


def _as_complex(ctx: AtenContext, v, z: ComplexValue) -> ComplexValue:
    """A real operand of complex arithmetic (``im`` None): a tensor, or a number as a
    tensor of ``z``'s dtype."""
    if isinstance(v, Expr):  # an integer or other-width tensor takes the complex dtype
        dt = ctx.dtype(z.re)
        return ComplexValue(v if ctx.dtype(v) == dt else ctx.emit(_op.astype(v, dt)), None)
    if isinstance(v, complex):  # (S4D's ``-exp(log_a) + 1j * a_imag``)
        return ComplexValue(ctx.tensor(v.real, z.re), ctx.tensor(v.imag, z.re))
    if isinstance(v, int | float) and not isinstance(v, bool):
        return ComplexValue(ctx.tensor(float(v), z.re), None)
    raise _unsupported(ctx, f"{ctx.node.target} with a {type(v).__name__} operand")


def _cmul(ctx: AtenContext, args):
    a, b = cv.operand_pair(args, lambda v, z: _as_complex(ctx, v, z))
    return cv.complex_product(a, b, _arith(ctx))


def _cadd(sign: int):
    def convert(ctx: AtenContext, args):
        if len(args) > 2 and args[2] not in (1, None):
            raise _unsupported(ctx, f"{ctx.node.target} with alpha")
        a, b = cv.operand_pair(args, lambda v, z: _as_complex(ctx, v, z))
        return cv.complex_sum(a, b, sign, _arith(ctx))

    return convert


def _cdiv(ctx: AtenContext, args):
    """``a / b`` with a complex operand (Hyena's ``rfft(k, n=2L) / (2L)``)."""
    if len(args) > 2 and args[2] is not None:
        raise _unsupported(ctx, f"{ctx.node.target} with rounding_mode")
    a, b = cv.operand_pair(args, lambda v, z: _as_complex(ctx, v, z))
    return cv.complex_quotient(a, b, _arith(ctx))


def _cabs(ctx: AtenContext, args):
    return cv.complex_abs(args[0], _arith(ctx))


def _cexp(ctx: AtenContext, args):
    """``exp`` of a complex value (S4D's discretized ``exp(dt A)`` and its powers)."""
    return cv.complex_exp(args[0], lambda x: ctx.emit(_op.exp(x)),
                          lambda x: ctx.emit(_op.cos(x)), lambda x: ctx.emit(_op.sin(x)),
                          lambda a, b: ctx.emit(_op.multiply(a, b)))


def _cmatmul(ctx: AtenContext, args, _real=ATEN["bmm.default"]):
    """``mm`` / ``bmm`` / ``matmul`` with a complex operand (an einsum over complex tensors
    decomposes to one), as the real products of each choice of parts."""
    z = next(a for a in args[:2] if isinstance(a, ComplexValue))
    zs = [a if isinstance(a, ComplexValue) else _as_complex(ctx, a, z) for a in args[:2]]
    return cv.complex_multilinear(lambda parts: _real(ctx, parts), zs, _arith(ctx))


def _csum(name: str):
    """A sum of a complex value: its parts summed alike (an einsum that keeps an axis
    decomposes to a product and one)."""
    def convert(ctx: AtenContext, args):
        dtype = args[3] if name == "sum.dim_IntList" and len(args) > 3 else (
            args[1] if name == "sum.default" and len(args) > 1 else None)
        if dtype is not None:
            raise _unsupported(ctx, f"{ctx.node.target} with a dtype")
        return cv.per_part(ATEN[name])(ctx, args)

    return convert


def _zero_pad(ctx: AtenContext, args):
    """constant_pad_nd of a complex value (an irfft's spectrum zero-padded to ``s``)."""
    if len(args) > 2 and args[2] not in (0, 0.0, None):
        raise _unsupported(ctx, f"{ctx.node.target} with a non-zero value")
    return cv.per_part(ATEN["constant_pad_nd.default"])(ctx, args)


_LAYOUT = ("slice.Tensor", "select.int", "permute.default", "view.default",
           "reshape.default", "unsqueeze.default", "squeeze.dim", "transpose.int",
           "expand.default", "clone.default")

for _name in _LAYOUT:
    if _name in ATEN:
        register(_name)(cv.complex_aware(ATEN[_name], cv.per_part(ATEN[_name])))
register("constant_pad_nd.default")(cv.complex_aware(ATEN["constant_pad_nd.default"],
                                                     _zero_pad))


def _is_complex_dtype(dt) -> bool:
    return getattr(dt, "is_complex", False) is True


@register("_to_copy.default")
@handles_complex
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
                   ("abs.default", _cabs), ("exp.default", _cexp),
                   ("mm.default", _cmatmul), ("bmm.default", _cmatmul),
                   ("matmul.default", _cmatmul), ("sum.dim_IntList", _csum("sum.dim_IntList")),
                   ("sum.default", _csum("sum.default"))):
    register(_name)(cv.complex_aware(ATEN[_name], _fn))

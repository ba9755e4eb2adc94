"""ATen's FFTs (``torch.fft.rfft2`` / ``irfft2`` and their 1-D, N-D and complex-to-complex
kin) and the complex arithmetic between them, as GFNet's global filter and FNO's spectral
layers use them: ``rfft2`` of the tokens, times a learned complex weight
(``view_as_complex`` of a parameter), ``irfft2`` back.

Relay has no complex dtype, so a complex value lives in the importer only, as a
:class:`ComplexValue` pair of float tensors (real, imaginary); every FFT is a product with
constant cosine and sine matrices along each transformed axis (a dense layer per axis, which
the native GEMM kernels run), and a complex value must end as a real tensor (``irfft*``,
``view_as_real``, ``real``, ``imag``, ``abs``) before the graph's output. Layout ops (slice,
select, permute, view, ...) apply to both parts; any other op on a complex value is refused
with an error that names it.
"""

from __future__ import annotations

import numpy as np

from ....frontend_common import complex_values as cv
from ....frontend_common.complex_values import ComplexValue, handles_complex
from ....frontend_common.dft import c2c_matrices, c2r_matrices, r2c_matrices, scale
from ... import expr as _expr
from ... import op as _op
from ...op import nn as _nn
from ..common import contract_axis
from .aten import ATEN, _is_expr, _norm_dim, register

_ARITH = cv.Arith(_op.add, _op.subtract, _op.multiply, _op.negative, _op.sqrt, _op.divide)


def array_constant(arr: np.ndarray):
    """A numpy array as a Relay constant; a complex one (a buffer of ``torch.polar``
    frequencies, a folded complex weight) as the :class:`ComplexValue` pair of its parts."""
    if np.iscomplexobj(arr):
        part = np.float64 if arr.dtype == np.complex128 else np.float32
        return ComplexValue(_expr.const(arr.real.astype(part)), _expr.const(arr.imag.astype(part)))
    return _expr.const(arr, str(arr.dtype))


def refuse_complex(ctx, fn, args) -> None:
    """Raise a clear error when ``fn``, a converter that does not take complex values, is
    given one (directly or in a list argument)."""
    cv.refuse_complex(fn, args, lambda: _unsupported(ctx, f"aten::{ctx.op_name}"))


def _unsupported(ctx, what: str):
    return ctx.fail(f"{what} of a complex tensor is not supported: complex values exist "
                    f"only between torch.fft calls, complex multiplies/adds and view_as_real "
                    f"/ real / imag / abs")


def _c2c(ctx, z: ComplexValue, axis: int, nd: int, n: int, forward: bool, norm):
    """The full complex DFT of ``z`` along ``axis`` (n points; an axis shorter than n is
    zero-padded: only its rows of the n-point matrices are used)."""
    c, sn = c2c_matrices(n, forward, scale(norm, n, forward))
    have = ctx.shape(z.re)[axis]
    c, sn = c[:have], sn[:have]
    dt = ctx.dtype(z.re)
    re = _op.add(contract_axis(z.re, axis, nd, c, dt), contract_axis(z.im, axis, nd, sn, dt))
    im = _op.subtract(contract_axis(z.im, axis, nd, c, dt), contract_axis(z.re, axis, nd, sn, dt))
    return ComplexValue(re, im)


def _r2c(ctx, x, axis: int, nd: int, n: int, norm):
    """The one-sided DFT of a real ``x`` along ``axis`` (n points; a shorter axis is
    zero-padded, as in ``_c2c``)."""
    c, sn = r2c_matrices(n, True, scale(norm, n, True))
    have = ctx.shape(x)[axis]
    c, sn = c[:have], sn[:have]
    dt = ctx.dtype(x)
    return ComplexValue(contract_axis(x, axis, nd, c, dt), contract_axis(x, axis, nd, sn, dt))


def _c2r(ctx, z: ComplexValue, axis: int, nd: int, n: int, norm):
    """The real inverse of a one-sided spectrum along ``axis`` (n output points)."""
    c, sn = c2r_matrices(ctx.shape(z.re)[axis], n, scale(norm, n, False))
    dt = ctx.dtype(z.re)
    return _op.add(contract_axis(z.re, axis, nd, c, dt), contract_axis(z.im, axis, nd, sn, dt))


def _dims_sizes(ctx, x, sizes, dims, default_dims):
    """(axes, sizes) of an FFT call: ``dims`` None means ``default_dims`` (all axes when
    that is None too); ``sizes`` None means the input's own."""
    shape = ctx.shape(x.re if isinstance(x, ComplexValue) else x)
    nd = len(shape)
    if dims is None:
        dims = default_dims if default_dims is not None else list(range(nd))
    dims = [_norm_dim(int(d), nd) for d in (dims if isinstance(dims, list | tuple) else [dims])]
    if sizes is not None and not isinstance(sizes, list | tuple):
        sizes = [sizes]
    return dims, (list(sizes) if sizes is not None else None), shape, nd


def _signal_sizes(ctx, x, shape, dims, sizes):
    """(``x`` cropped to ``n`` on each axis longer than its transform size ``n``, the sizes
    per axis): torch zero-pads a shorter axis to ``n`` (``_r2c`` / ``_c2c`` use only the
    input's rows of the n-point matrices) and crops a longer one (Hyena's FFT convolution
    takes ``rfft(v, n=2L)``)."""
    ns = [shape[d] if sizes is None or sizes[i] is None or int(sizes[i]) == -1
          else int(sizes[i]) for i, d in enumerate(dims)]
    for d, n in zip(dims, ns, strict=True):
        if n < shape[d]:
            x = _crop(x, d, n)
    return x, ns


def _crop(x, axis: int, n: int):
    if isinstance(x, ComplexValue):
        return ComplexValue(_crop(x.re, axis, n), _crop(x.im, axis, n))
    return _op.strided_slice(x, [0], [n], axes=[axis])


def _rfft_like(default_dims):
    @handles_complex
    def convert(ctx, args):
        x, sizes, dims, norm = args[0], args[1], args[2], args[3] if len(args) > 3 else None
        if isinstance(x, ComplexValue):
            raise ctx.fail("the input of a real-to-complex FFT is complex")
        dims, sizes, shape, nd = _dims_sizes(ctx, x, sizes, dims, default_dims)
        x, ns = _signal_sizes(ctx, x, shape, dims, sizes)
        z = _r2c(ctx, x, dims[-1], nd, ns[-1], norm)
        for d, n in reversed(list(zip(dims[:-1], ns[:-1], strict=True))):
            z = _c2c(ctx, z, d, nd, n, True, norm)
        return z

    return convert


def _resize_axis(z: ComplexValue, axis: int, nd: int, have: int, want: int):
    """Both parts of ``z`` zero-padded at the end of ``axis`` (or cropped) to ``want``."""
    def one(x):
        if want > have:
            return _nn.pad(x, [(0, 0)] * axis + [(0, want - have)] + [(0, 0)] * (nd - axis - 1))
        return _op.strided_slice(x, [0], [want], axes=[axis])
    return ComplexValue(one(z.re), one(z.im))


def _irfft_like(default_dims):
    @handles_complex
    def convert(ctx, args):
        z, sizes, dims, norm = args[0], args[1], args[2], args[3] if len(args) > 3 else None
        if not isinstance(z, ComplexValue):
            raise ctx.fail("the input of a complex-to-real FFT is real: torch would treat it "
                           "as complex with a zero imaginary part; pass a complex tensor")
        dims, sizes, shape, nd = _dims_sizes(ctx, z, sizes, dims, default_dims)
        if sizes is not None:  # s on the complex axes: zero-pad or crop the spectrum there
            for d, n in zip(dims[:-1], sizes[:-1], strict=True):
                if n is not None and int(n) != -1 and int(n) != shape[d]:
                    z = _resize_axis(z, d, nd, shape[d], int(n))
            shape = ctx.shape(z.re)
        for d in dims[:-1]:
            z = _c2c(ctx, z, d, nd, shape[d], False, norm)
        last = None if sizes is None else sizes[-1]
        n = 2 * (shape[dims[-1]] - 1) if last is None or int(last) == -1 else int(last)
        return _c2r(ctx, z, dims[-1], nd, n, norm)

    return convert


def _fft_like(default_dims, forward: bool):
    @handles_complex
    def convert(ctx, args):
        x, sizes, dims, norm = args[0], args[1], args[2], args[3] if len(args) > 3 else None
        dims, sizes, shape, nd = _dims_sizes(ctx, x, sizes, dims, default_dims)
        x, ns = _signal_sizes(ctx, x, shape, dims, sizes)
        if not isinstance(x, ComplexValue):
            x = ComplexValue(x, _op.zeros_like(x))
        for d, n in reversed(list(zip(dims, ns, strict=True))):
            x = _c2c(ctx, x, d, nd, n, forward, norm)
        return x

    return convert


register("fft_rfft")(_rfft_like([-1]))
register("fft_rfft2")(_rfft_like([-2, -1]))
register("fft_rfftn")(_rfft_like(None))
register("fft_irfft")(_irfft_like([-1]))
register("fft_irfft2")(_irfft_like([-2, -1]))
register("fft_irfftn")(_irfft_like(None))
register("fft_fft")(_fft_like([-1], True))
register("fft_fft2")(_fft_like([-2, -1], True))
register("fft_fftn")(_fft_like(None, True))
register("fft_ifft")(_fft_like([-1], False))
register("fft_ifft2")(_fft_like([-2, -1], False))
register("fft_ifftn")(_fft_like(None, False))


@register("view_as_complex")
def _view_as_complex(ctx, args):
    x = args[0]
    if ctx.shape(x)[-1] != 2:
        raise ctx.fail(f"needs a last axis of 2 (real, imaginary), got shape {ctx.shape(x)}")
    nd = len(ctx.shape(x))
    return ComplexValue(_op.take(x, _expr.const(0, "int64"), axis=nd - 1),
                        _op.take(x, _expr.const(1, "int64"), axis=nd - 1))


def _check_real_pair(ctx, a, b, what: str) -> None:
    """The two parts of torch.complex / torch.polar: real tensors of one floating dtype."""
    if not (_is_expr(a) and _is_expr(b)):
        raise ctx.fail(f"expects two real tensors ({what})")
    if ctx.dtype(a) != ctx.dtype(b) or not ctx.dtype(a).startswith("float"):
        raise ctx.fail(f"expects two floating-point tensors of one dtype, got "
                       f"{ctx.dtype(a)} and {ctx.dtype(b)}")


@register("complex")
def _complex(ctx, args):
    """torch.complex(real, imag): FNO's spectral weights written as two real tensors, or a
    spectrum rebuilt from its parts; the parts broadcast against each other as torch's do."""
    re, im = args[0], args[1]
    _check_real_pair(ctx, re, im, "real part, imaginary part")
    if ctx.shape(re) != ctx.shape(im):
        both = _op.add(re, im)
        re, im = _op.broadcast_to_like(re, both), _op.broadcast_to_like(im, both)
    return ComplexValue(re, im)


@register("polar")
def _polar(ctx, args):
    """torch.polar(abs, angle): ``abs cos(angle) + i abs sin(angle)`` (a rotary embedding's
    ``freqs_cis``)."""
    r, theta = args[0], args[1]
    _check_real_pair(ctx, r, theta, "abs, angle")
    return ComplexValue(_op.multiply(r, _op.cos(theta)), _op.multiply(r, _op.sin(theta)))


@register("view_as_real")
@handles_complex
def _view_as_real(ctx, args):
    z = args[0]
    if not isinstance(z, ComplexValue):
        raise ctx.fail("the input is not complex")
    return _op.stack([z.re, z.im], -1)


@register("real", "imag")
@handles_complex
def _real_imag(ctx, args):
    z = args[0]
    if not isinstance(z, ComplexValue):
        if ctx.op_name == "real":
            return z
        raise ctx.fail("imag of a real tensor")
    return z.re if ctx.op_name == "real" else z.im


@register("conj", "_conj", "conj_physical", "resolve_conj")
@handles_complex
def _conj(ctx, args):
    """``torch.conj`` of a spectrum (Autoformer's auto-correlation ``rfft(q) * conj(rfft(k))``);
    ``_conj`` is the lazy conjugate the tracer records, ``resolve_conj`` materializes it
    (nothing to do here: the negation is already an expression)."""
    if ctx.op_name == "resolve_conj":
        return args[0]
    return cv.complex_conjugate(args[0], _ARITH)


def _as_complex(ctx, v, other):
    """An operand as a ComplexValue; ``im`` None for a real tensor or number (Python numbers
    take the dtype of ``other``, the complex operand)."""
    dt = ctx.dtype(other.re)
    if _is_expr(v):  # an integer or other-width tensor takes the complex operand's dtype
        return ComplexValue(v if ctx.dtype(v) == dt else _op.cast(v, dt), None)
    if isinstance(v, int | float | complex) and not isinstance(v, bool):
        im = _expr.const(np.array(v.imag, dt), dt) if isinstance(v, complex) else None
        return ComplexValue(_expr.const(np.array(v.real, dt), dt), im)
    raise _unsupported(ctx, f"aten::{ctx.op_name} with a {type(v).__name__} operand")


def _cmul(ctx, args):
    a, b = cv.operand_pair(args, lambda v, z: _as_complex(ctx, v, z))
    return cv.complex_product(a, b, _ARITH)


def _cadd(sign: int):
    def convert(ctx, args):
        if len(args) > 2 and args[2] not in (1, None):
            raise _unsupported(ctx, f"aten::{ctx.op_name} with alpha")
        a, b = cv.operand_pair(args, lambda v, z: _as_complex(ctx, v, z))
        return cv.complex_sum(a, b, sign, _ARITH)

    return convert


def _cdiv(ctx, args):
    """``a / b`` with a complex operand (Hyena's ``rfft(v, n=2L) / (2L)``)."""
    if len(args) > 2 and args[2] is not None:
        raise _unsupported(ctx, f"aten::{ctx.op_name} with rounding_mode")
    a, b = cv.operand_pair(args, lambda v, z: _as_complex(ctx, v, z))
    return cv.complex_quotient(a, b, _ARITH)


def _cabs(ctx, args):
    return cv.complex_abs(args[0], _ARITH)


def _cexp(ctx, args):
    """``exp`` of a complex value (S4D's discretized ``exp(dt A)`` and its Vandermonde
    powers)."""
    return cv.complex_exp(args[0], _op.exp, _op.cos, _op.sin, _op.multiply)


def _ceinsum(ctx, args):
    """An einsum with complex operands, as the sum of real einsums over each choice of
    real / imaginary parts (S4D's ``einsum('hn,hnl->hl', C, exp(K))``)."""
    from ..einsum import einsum

    equation, operands = args[0], list(args[1])
    zs = [z if isinstance(z, ComplexValue) else _as_complex(ctx, z, _first_complex(operands))
          for z in operands]
    return cv.complex_multilinear(lambda parts: einsum(equation, parts), zs, _ARITH)


def _first_complex(values) -> ComplexValue:
    return next(v for v in values if isinstance(v, ComplexValue))


def _zero_pad(ctx, args):
    """constant_pad_nd of a complex value, with zeros only."""
    if len(args) > 2 and args[2] not in (0, 0.0, None):
        raise _unsupported(ctx, "aten::constant_pad_nd with a non-zero value")
    return cv.per_part(ATEN["constant_pad_nd"])(ctx, args)


for _name in ("slice", "select", "permute", "view", "reshape", "unsqueeze", "squeeze",
              "transpose", "expand", "contiguous", "clone"):
    register(_name)(cv.complex_aware(ATEN[_name], cv.per_part(ATEN[_name])))
register("constant_pad_nd")(cv.complex_aware(ATEN["constant_pad_nd"], _zero_pad))

def _csum(ctx, args):
    """A sum of a complex value: its parts summed alike (an einsum that keeps an axis)."""
    if len(args) > 3 and args[3] is not None:
        raise _unsupported(ctx, "aten::sum with a dtype")
    return cv.per_part(ATEN["sum"])(ctx, args)


def _csize(ctx, args):
    """``z.shape`` of a complex value: its real part's."""
    return ATEN["size"](ctx, [args[0].re, *args[1:]])


for _name, _fn in (("mul", _cmul), ("mul_", _cmul), ("add", _cadd(1)), ("add_", _cadd(1)),
                   ("sub", _cadd(-1)), ("sub_", _cadd(-1)), ("div", _cdiv), ("div_", _cdiv),
                   ("abs", _cabs), ("exp", _cexp), ("einsum", _ceinsum), ("sum", _csum),
                   ("size", _csize)):
    register(_name)(cv.complex_aware(ATEN[_name], _fn))

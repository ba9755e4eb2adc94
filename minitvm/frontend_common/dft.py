"""What the Relay and Relax PyTorch importers share of ``torch.fft``: the constant cosine and
sine matrices that turn each transformed axis of a DFT into dense products, and torch's
normalization factors. A complex tensor is a (real, imaginary) pair of float tensors there;
every matrix here is [n_in, n_out], applied along one axis and already scaled.

    forward c2c:  re' = re C + im S,  im' = im C - re S    (C = cos, S = sin of 2 pi j k / n)
    inverse c2c:  the same with S negated
    r2c:          re' = x C,  im' = -x S, over the n // 2 + 1 non-negative frequencies
    c2r:          x = re C' + im S', the one-sided spectrum's bins weighted 1 or 2
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["scale", "c2c_matrices", "r2c_matrices", "c2r_matrices", "OnnxDftPlan", "onnx_dft_plan",
           "onnx_dft_node_plan"]

# ATen's fft_norm_mode (the ``normalization`` int of _fft_r2c / _fft_c2r / _fft_c2c)
_NORM_MODES = {0: "none", 1: "by_root_n", 2: "by_n"}


def scale(norm, n: int, forward: bool) -> float:
    """The factor of one axis of ``n`` points: ``norm`` is torch.fft's string ("backward",
    the default, scales the inverse by 1/n; "forward" the forward transform; "ortho" both by
    1/sqrt(n)) or ATen's int mode (0 none, 1 1/sqrt(n), 2 1/n) as the decomposed ops carry."""
    if isinstance(norm, int) and not isinstance(norm, bool):
        if norm not in _NORM_MODES:
            raise ValueError(f"unknown FFT normalization mode {norm}")
        return (1.0, 1.0 / math.sqrt(n), 1.0 / n)[norm]
    norm = norm or "backward"
    if norm == "ortho":
        return 1.0 / math.sqrt(n)
    if norm not in ("backward", "forward"):
        raise ValueError(f"unknown FFT norm {norm!r}")
    return 1.0 / n if (norm == "forward") == forward else 1.0


def c2c_matrices(n: int, forward: bool, factor: float) -> tuple[np.ndarray, np.ndarray]:
    """(C, S) of a full complex DFT of ``n`` points (S negated for the inverse)."""
    ang = 2 * np.pi * np.outer(np.arange(n), np.arange(n)) / n
    return np.cos(ang) * factor, np.sin(ang) * (factor if forward else -factor)


def r2c_matrices(n: int, onesided: bool, factor: float) -> tuple[np.ndarray, np.ndarray]:
    """(real part, imaginary part) matrices of the DFT of a real axis of ``n`` points:
    n // 2 + 1 frequencies when ``onesided``, else n."""
    k = n // 2 + 1 if onesided else n
    ang = 2 * np.pi * np.outer(np.arange(n), np.arange(k)) / n
    return np.cos(ang) * factor, -np.sin(ang) * factor


def c2r_matrices(k: int, n: int, factor: float) -> tuple[np.ndarray, np.ndarray]:
    """(from real, from imaginary) matrices [k, n] of the real inverse of a one-sided spectrum
    of ``k`` bins to ``n`` points: the missing half is the conjugate mirror, so bins 1 ..
    ceil(n/2)-1 count twice; bins past n // 2 are ignored and the imaginary parts of bin 0
    (and of bin n/2 for even n) drop out, as torch does."""
    used = min(k, n // 2 + 1)
    ang = 2 * np.pi * np.outer(np.arange(k), np.arange(n)) / n
    w = np.zeros(k)
    w[:used] = 2.0
    w[0] = 1.0
    if n % 2 == 0 and used == n // 2 + 1:
        w[n // 2] = 1.0
    w *= factor
    return np.cos(ang) * w[:, None], -np.sin(ang) * w[:, None]


class OnnxDftPlan:
    """ONNX's ``DFT`` on one axis as products with constant matrices [n_in, n_out]:

        out_re = re @ rr + im @ ir      out_im = re @ ri + im @ ii

    (a term is None where its operand or result does not exist: a real input has no ``im``,
    an inverse one-sided DFT gives no ``out_im``). Zero-padding or cropping the signal to
    ``dft_length`` is already in the matrices (rows past the signal dropped, missing rows
    zero), so no pad or slice is needed."""

    __slots__ = ("axis", "rr", "ir", "ri", "ii")

    def __init__(self, axis: int, rr, ir, ri, ii):
        self.axis, self.rr, self.ir, self.ri, self.ii = axis, rr, ir, ri, ii

    @property
    def complex_out(self) -> bool:
        return self.ri is not None


def _fit_rows(mat: np.ndarray, n: int) -> np.ndarray:
    """``mat``, whose rows index a signal of its own length, for an input of ``n`` points:
    extra input points (cropped away) multiply zero rows; missing ones (zero padding) drop."""
    if mat.shape[0] >= n:
        return mat[:n]
    return np.concatenate([mat, np.zeros((n - mat.shape[0], mat.shape[1]))])


def onnx_dft_plan(shape, axis: int, inverse: bool, onesided: bool, dft_length,
                  fail) -> OnnxDftPlan:
    """The plan of ``DFT(x)`` for an input of ``shape`` ([..., signal dims ..., 1 or 2]),
    ``axis`` as the node gives it (negative counts from the back, the last axis being the
    real/imaginary one), ``dft_length`` an int or None; ``fail(message)`` makes the error."""
    r = len(shape)
    if r < 2 or shape[-1] not in (1, 2):
        raise fail(f"the input's last axis must be 1 (real) or 2 (complex), got shape "
                   f"{list(shape)}")
    if not -r <= axis <= r - 2 or axis == -1:
        raise fail(f"axis {axis} is out of range for a rank-{r} input (the last axis holds "
                   f"the real and imaginary parts)")
    axis %= r
    n = shape[axis]
    if not isinstance(n, int | np.integer):
        raise fail(f"the transformed axis {axis} must be static, got {n}")
    n, is_complex = int(n), shape[-1] == 2
    if onesided and inverse:  # IRFFT: a one-sided spectrum of n bins to a real signal
        if not is_complex:
            raise fail("an inverse one-sided DFT (IRFFT) needs a complex input")
        length = 2 * (n - 1) if dft_length is None else int(dft_length)
        if length < 1:
            raise fail(f"dft_length must be positive, got {length}")
        fr, fi = c2r_matrices(n, length, 1.0 / length)
        return OnnxDftPlan(axis, fr, fi, None, None)
    length = n if dft_length is None else int(dft_length)
    if length < 1:
        raise fail(f"dft_length must be positive, got {length}")
    if onesided:  # RFFT
        if is_complex:
            raise fail("a forward one-sided DFT needs a real input (last axis 1)")
        c, s = r2c_matrices(length, True, 1.0)
        return OnnxDftPlan(axis, _fit_rows(c, n), None, _fit_rows(s, n), None)
    c, s = c2c_matrices(length, not inverse, 1.0 / length if inverse else 1.0)
    c, s = _fit_rows(c, n), _fit_rows(s, n)
    if not is_complex:
        return OnnxDftPlan(axis, c, None, -s, None)
    return OnnxDftPlan(axis, c, s, -s, c)


def onnx_dft_node_plan(ctx, ins, attrs, shape, dtype: str) -> OnnxDftPlan:
    """``onnx_dft_plan`` of the DFT node ``ctx`` converts (either importer's context: its
    ``opset``, ``value(input, what)`` for import-time values and ``fail``): the input's
    ``shape`` and ``dtype``, ``dft_length`` (input 1) and the axis (opset 20's input 2, default
    -2; earlier the ``axis`` attribute, default 1)."""
    if dtype not in ("float16", "float32", "float64"):
        raise ctx.fail(f"the input must be a float tensor, got {dtype}")
    length = ins[1] if len(ins) > 1 else None
    length = None if length is None else int(ctx.value(length, "DFT's dft_length"))
    if ctx.opset >= 20:
        axis_in = ins[2] if len(ins) > 2 else None
        axis = -2 if axis_in is None else int(ctx.value(axis_in, "DFT's axis"))
    else:
        axis = int(attrs.get("axis", 1))
    return onnx_dft_plan(shape, axis, bool(attrs.get("inverse", 0)),
                         bool(attrs.get("onesided", 0)), length, ctx.fail)

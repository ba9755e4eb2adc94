"""device_copy, dft and stft with TVM's attrs, type relations and constructors (numpy
references: ``minitvm.topi.reference.signal``)."""

from __future__ import annotations

from ...ir.attrs import Attrs
from ...ir.op import Op, OpPattern
from ...ir.type import TensorType, TupleType
from ...topi.shape_conditions import agree
from ..expr import Call, Expr, TupleWrapper
from .annotation import _make_virtual_device
from .op import define_op, register_numpy_only
from .type_relations import check_num_args, dims_equal, is_static_dim, tensor_arg, type_str

__all__ = ["DeviceCopyAttrs", "DFTAttrs", "StftAttrs", "device_copy", "dft", "stft"]


class DeviceCopyAttrs(Attrs):
    __slots__ = ()
    _fields = (("src_virtual_device", None), ("dst_virtual_device", None))


class DFTAttrs(Attrs):
    __slots__ = ()
    _fields = (("inverse", False),)


class StftAttrs(Attrs):
    __slots__ = ()
    _fields = (("n_fft", -1), ("hop_length", -1), ("win_length", -1), ("normalized", False),
               ("onesided", True))


def _device_copy_rel(arg_types, attrs):
    check_num_args("device_copy", arg_types, 1)
    return arg_types[0]


def _dft_rel(arg_types, attrs):
    check_num_args("dft", arg_types, 2)
    re = tensor_arg(arg_types, 0, "dft")
    im = tensor_arg(arg_types, 1, "dft")
    if len(re.shape) != len(im.shape) or not all(dims_equal(a, b)
                                                 for a, b in zip(re.shape, im.shape)):
        raise TypeError(f"dft: the real and imaginary parts must have one shape, got "
                        f"{type_str(re)} and {type_str(im)}")
    if re.dtype != im.dtype or not re.dtype.startswith("float"):
        raise TypeError(f"dft: expects float parts of one dtype, got {re.dtype} and {im.dtype}")
    if not re.shape:
        raise TypeError(f"dft: expects tensors of rank >= 1, got {type_str(re)}")
    return TupleType([TensorType(re.shape, re.dtype), TensorType(im.shape, im.dtype)])


def _stft_rel(arg_types, attrs):
    check_num_args("stft", arg_types, 2)
    data = tensor_arg(arg_types, 0, "stft")
    window = tensor_arg(arg_types, 1, "stft")
    n_fft, hop, win = int(attrs.n_fft), int(attrs.hop_length), int(attrs.win_length)
    if len(data.shape) not in (1, 2):
        raise TypeError(f"stft: expects a 1-D or (batch, time) signal, got {type_str(data)}")
    if n_fft < 1 or hop < 1 or not 0 < win <= n_fft:
        raise ValueError(f"stft: needs n_fft >= 1, hop_length >= 1 and 0 < win_length <= "
                         f"n_fft, got {n_fft}, {hop} and {win}")
    if len(window.shape) != 1 or not agree(window.shape[0], win):
        raise TypeError(f"stft: the window must have win_length={win} samples, got "
                        f"{type_str(window)}")
    t = data.shape[-1]
    if is_static_dim(t) and t < n_fft:
        raise TypeError(f"stft: the signal {type_str(data)} is shorter than n_fft={n_fft}")
    frames = 1 + (t - n_fft) // hop if is_static_dim(t) else t
    freqs = n_fft // 2 + 1 if attrs.onesided else n_fft
    shape = (freqs, frames, 2) if len(data.shape) == 1 else (data.shape[0], freqs, frames, 2)
    return TensorType(shape, data.dtype)


_op = define_op("device_copy", _device_copy_rel, pattern=OpPattern.OPAQUE,
                attrs_type=DeviceCopyAttrs, num_inputs=1,
                describe="Copy a tensor from one virtual device to another.")
_op.set_attr("TOpIsStateful", False)
define_op("dft", _dft_rel, pattern=OpPattern.OPAQUE, attrs_type=DFTAttrs, num_inputs=2,
          describe="Discrete Fourier transform along the last axis.")
define_op("stft", _stft_rel, pattern=OpPattern.OPAQUE, attrs_type=StftAttrs, num_inputs=2,
          describe="Short-time Fourier transform.")


def device_copy(data: Expr, src_device, dst_device) -> Call:
    """Copy ``data`` from ``src_device`` to ``dst_device`` (devices, names or VirtualDevices)."""
    attrs = DeviceCopyAttrs(src_virtual_device=_make_virtual_device(src_device),
                            dst_virtual_device=_make_virtual_device(dst_device))
    return Call(Op.get("device_copy"), [data], attrs)


def dft(re_data: Expr, im_data: Expr, inverse: bool = False) -> TupleWrapper:
    return TupleWrapper(Call(Op.get("dft"), [re_data, im_data], DFTAttrs(inverse=bool(inverse))),
                        2)


def stft(data: Expr, n_fft: int, hop_length: int | None = None, win_length: int | None = None,
         window: Expr | None = None, normalized: bool = False, onesided: bool = True) -> Call:
    """STFT of ``data``; hop_length defaults to n_fft // 4, win_length to n_fft, the window to
    ones (as TVM's wrapper)."""
    from ..expr import const

    hop_length = n_fft // 4 if hop_length is None else hop_length
    win_length = n_fft if win_length is None else win_length
    if window is None:
        window = const([1.0] * int(win_length), "float32")
    attrs = StftAttrs(n_fft=int(n_fft), hop_length=int(hop_length), win_length=int(win_length),
                      normalized=bool(normalized), onesided=bool(onesided))
    return Call(Op.get("stft"), [data, window], attrs)

# numpy-only on purpose (not a failed native lowering; see backend.fallback)
register_numpy_only("dft", "a Fourier transform, computed by numpy's FFT")
register_numpy_only("stft", "a Fourier transform, computed by numpy's FFT")

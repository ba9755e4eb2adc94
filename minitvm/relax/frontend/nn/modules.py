"""Built-in modules (TVM's ``nn/modules.py``): activations, Linear, convolutions, norms,
Embedding, and the IO effect of debug exports."""

from __future__ import annotations

from collections.abc import Sequence

from ... import expr as rx
from ...block_builder import BlockBuilder
from ...struct_info import ObjectStructInfo
from . import op
from .core import Effect, Module, Parameter, Tensor, _legal_name
from .op import _relax_op

__all__ = [
    "IOEffect", "ReLU", "SiLU", "GELU", "Identity", "Linear", "Conv1D", "Conv2D",
    "ConvTranspose1D", "LayerNorm", "RMSNorm", "GroupNorm", "Embedding",
]


class IOEffect(Effect):
    """The IO side effect of ``export_tvm(debug=True)``: an ``R.Object`` input/output (``_io``)
    threaded through printing calls."""

    def __init__(self):
        self.effect = None

    def emit_init(self, name_hint: str, builder: BlockBuilder) -> list:
        return [builder.emit(_relax_op("null_value")(), _legal_name(f"{name_hint}.io"))]

    def create(self, name_hint: str) -> list:
        if self.effect is not None:
            raise RuntimeError("IOEffect.create: the effect is already live")
        return [rx.Var(_legal_name(f"{name_hint}.io"), ObjectStructInfo())]

    def set_state(self, state_vars: list) -> None:
        (self.effect,) = state_vars

    def finalize(self) -> list:
        result, self.effect = self.effect, None
        return [result]

    def print_(self, tensor: Tensor) -> None:
        """Print ``tensor`` at run time (``effect.print``)."""
        call = _relax_op("call_pure_packed")(
            rx.ExternFunc("effect.print"), self.effect, tensor._expr,
            sinfo_args=[ObjectStructInfo()])
        self.effect = BlockBuilder.current().emit(call, self.effect.name_hint)


class ReLU(Module):
    """``relu(x)``."""

    def forward(self, x: Tensor) -> Tensor:
        return op.relu(x)


class SiLU(Module):
    """``silu(x)``."""

    def forward(self, x: Tensor) -> Tensor:
        return op.silu(x)


class GELU(Module):
    """``gelu(x)``."""

    def forward(self, x: Tensor) -> Tensor:
        return op.gelu(x)


class Identity(Module):
    """``x`` unchanged."""

    def forward(self, x: Tensor) -> Tensor:
        return x


class Linear(Module):
    """``x @ weight.T + bias``: weight ``(out_features, in_features)``, bias
    ``(out_features,)`` in ``out_dtype`` when given."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True,
                 dtype: str | None = None, out_dtype: str | None = None):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.out_dtype = out_dtype
        self.weight = Parameter((out_features, in_features), dtype)
        if bias:
            self.bias = Parameter((out_features,), dtype if out_dtype is None else out_dtype)
        else:
            self.bias = None

    def forward(self, x: Tensor) -> Tensor:
        w = op.permute_dims(self.weight)
        x = op.matmul(x, w, out_dtype=self.out_dtype)
        if self.bias is not None:
            x = x + self.bias
        return x

    def to(self, dtype: str | None = None) -> None:
        """Convert the weight; the bias too unless ``out_dtype`` fixes its dtype."""
        self.weight.to(dtype=dtype)
        if self.bias is not None and self.out_dtype is None:
            self.bias.to(dtype=dtype)
        if dtype is not None and isinstance(getattr(self, "dtype", None), str):
            self.dtype = dtype


class _ConvNd(Module):
    """What the convolution modules share: their hyper-parameters as attributes, a
    ``weight_shape`` weight and an optional ``(out_channels,)`` bias, both of ``dtype``."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int,
                 padding: int, dilation: int, groups: int, bias: bool, dtype: str | None,
                 weight_shape: tuple[int, ...]) -> None:
        super().__init__()
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding
        self.dilation = dilation
        self.groups = groups
        self.weight = Parameter(weight_shape, dtype)
        self.bias = Parameter((out_channels,), dtype) if bias else None


class Conv1D(_ConvNd):
    """1-D convolution: weight ``(out, in // groups, kernel)``."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int = 1,
                 padding: int = 0, dilation: int = 1, groups: int = 1, bias: bool = True,
                 dtype: str | None = None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, dtype, (out_channels, in_channels // groups, kernel_size))

    def forward(self, x: Tensor) -> Tensor:
        return op.conv1d(x, self.weight, self.bias, self.stride, self.padding, self.dilation,
                         self.groups)


class Conv2D(_ConvNd):
    """2-D convolution: weight ``(out, in // groups, k, k)``."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int = 1,
                 padding: int = 0, dilation: int = 1, groups: int = 1, bias: bool = True,
                 dtype: str | None = None, data_layout: str = "NCHW"):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, dtype,
                         (out_channels, in_channels // groups, kernel_size, kernel_size))
        self.data_layout = data_layout

    def forward(self, x: Tensor) -> Tensor:
        return op.conv2d(x, self.weight, self.bias, self.stride, self.padding, self.dilation,
                         self.groups, self.data_layout)


class ConvTranspose1D(_ConvNd):
    """1-D transposed convolution: weight ``(in, out // groups, kernel)``."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int = 1,
                 padding: int = 0, output_padding: int = 0, dilation: int = 1, groups: int = 1,
                 bias: bool = True, dtype: str | None = None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, dtype, (in_channels, out_channels // groups, kernel_size))
        self.output_padding = output_padding

    def forward(self, x: Tensor) -> Tensor:
        return op.conv1d_transpose(x, self.weight, self.bias, self.stride, self.padding,
                                   self.output_padding, self.dilation, self.groups)


class LayerNorm(Module):
    """Layer norm over the last dimension(s); ``weight``/``bias`` of ``(normalized_shape,)``."""

    def __init__(self, normalized_shape: int, eps: float | None = 1e-5,
                 elementwise_affine: bool = True, dtype: str | None = None) -> None:
        super().__init__()
        self.normalized_shape = normalized_shape
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter((normalized_shape,), dtype=dtype)
            self.bias = Parameter((normalized_shape,), dtype=dtype)
        else:
            self.weight = None
            self.bias = None

    def forward(self, x: Tensor) -> Tensor:
        return op.layer_norm(x, normalized_shape=self.normalized_shape, weight=self.weight,
                             bias=self.bias, eps=self.eps)


class RMSNorm(Module):
    """RMS norm over ``axes`` with a ``(hidden_size,)`` weight (and an added bias)."""

    def __init__(self, hidden_size: int, axes: int | list[int], epsilon: float = 1e-5,
                 bias: bool = True, dtype: str | None = None):
        super().__init__()
        self.epsilon = epsilon
        self.axes = axes
        self.weight = Parameter((hidden_size,), dtype=dtype)
        self.bias = Parameter((hidden_size,), dtype=dtype) if bias else None

    def forward(self, x: Tensor) -> Tensor:
        out = op.rms_norm(x, weight=self.weight, axes=self.axes, epsilon=self.epsilon)
        if self.bias is not None:
            out = op.add(out, self.bias)
        return out


class GroupNorm(Module):
    """Group norm over ``num_groups`` groups of ``num_channels`` channels."""

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5,
                 affine: bool = True, dtype: str | None = None):
        super().__init__()
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        if affine:
            self.weight = Parameter((num_channels,), dtype=dtype)
            self.bias = Parameter((num_channels,), dtype=dtype)
        else:
            self.weight = None
            self.bias = None

    def forward(self, x: Tensor, channel_axis: int = 1, axes: Sequence[int] | None = None):
        return op.group_norm(x, self.num_groups, self.weight, self.bias, self.eps, channel_axis,
                             list(axes) if axes is not None else None)


class Embedding(Module):
    """A ``(num, dim)`` table looked up by integer indices (``take`` along axis 0)."""

    def __init__(self, num: int, dim: int, dtype: str | None = None):
        self.num = num
        self.dim = dim
        self.weight = Parameter((num, dim), dtype=dtype)

    def forward(self, x: Tensor) -> Tensor:
        if x.ndim == 1:
            return op.take(self.weight, x, axis=0)
        return op.reshape(op.take(self.weight, op.reshape(x, shape=[-1]), axis=0),
                          shape=[*x.shape, self.dim])

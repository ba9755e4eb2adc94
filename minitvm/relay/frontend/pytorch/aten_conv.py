"""ATen convolutions onto Relay: ``convolution`` / ``_convolution``, ``conv1d`` .. ``conv3d``,
their transposes (a pointwise transposed conv as a matmul) and string padding (``"same"`` /
``"valid"``, ``_convolution_mode``)."""

from __future__ import annotations

from ... import op as _op
from ...op import nn as _nn
from .aten import register
from .aten_fake_quant_conv import fake_quant_conv


def _string_padding(ctx, padding: str, kernel, dilation, nd: int) -> list[int]:
    """``padding="valid"`` / ``"same"`` (torch.export keeps the string; stride is 1 for
    "same") as explicit pads: one per axis when symmetric, else all begins then all ends
    (torch puts the odd one at the end)."""
    if padding == "valid":
        return [0] * nd
    if padding != "same":
        raise ctx.fail(f"padding={padding!r} is not supported")
    dil = list(dilation) if isinstance(dilation, list | tuple) else [dilation]
    dil = dil * nd if len(dil) == 1 else dil
    totals = [d * (int(k) - 1) for d, k in zip(dil, kernel, strict=True)]
    begin, end = [t // 2 for t in totals], [t - t // 2 for t in totals]
    return begin if begin == end else begin + end


def _conv(ctx, x, w, b, stride, padding, dilation, transposed, output_padding, groups):
    nd = len(ctx.shape(x)) - 2
    if isinstance(padding, str):
        padding = _string_padding(ctx, padding, ctx.shape(w)[2:], dilation, nd)

    def per(v, fill=1):
        v = list(v) if isinstance(v, list | tuple) else [v]
        return v * nd if len(v) == 1 else v

    stride, padding, dilation = per(stride), per(padding, 0), per(dilation)
    q = None if transposed else fake_quant_conv(ctx, x, w, stride, padding, dilation, groups)
    if q is not None:  # (a QAT conv of 8-bit values: aten_fake_quant_conv)
        return q if b is None else _nn.bias_add(q, b, axis=1)
    wshape = ctx.shape(w)
    if transposed and nd == 1:  # a 1-row 2-D transposed convolution
        out = _conv(ctx, _op.expand_dims(x, 2), _op.expand_dims(w, 2), None, [1] + per(stride),
                    [0] + per(padding, 0), [1] + per(dilation), True,
                    [0] + per(output_padding), groups)
        out = _op.squeeze(out, [2])
    elif transposed and _pointwise_transposed(ctx, x, wshape, stride, padding, dilation,
                                              output_padding, groups):
        # a transposed conv of a 1x1 input (a GAN generator's first layer, from the latent) is
        # one GEMM: out[n, (o, taps)] = x[n, :] @ w[:, (o, taps)]; as a convolution it pads the
        # input to the kernel's size and multiplies mostly zeros (DCGAN's 64 -> 256 channel 4x4
        # layer took 0.18 ms so, 0.01 ms as a dense)
        cols = _op.transpose(_op.reshape(w, (wshape[0], -1)), (1, 0))
        out = _op.reshape(_nn.dense(_op.reshape(x, (0, -1)), cols), (0, wshape[1], *wshape[2:]))
    elif transposed:
        if nd not in (2, 3):
            raise ctx.fail(f"{nd}-D transposed convolution is not supported")
        fn = _nn.conv2d_transpose if nd == 2 else _nn.conv3d_transpose
        out = fn(x, w, strides=stride, padding=padding, dilation=dilation, groups=groups,
                 channels=wshape[1] * groups, kernel_size=wshape[2:],
                 output_padding=per(output_padding))
    elif nd in (1, 2, 3):
        fn = {1: _nn.conv1d, 2: _nn.conv2d, 3: _nn.conv3d}[nd]
        out = fn(x, w, strides=stride, padding=padding, dilation=dilation, groups=groups,
                 channels=wshape[0], kernel_size=wshape[2:])
    else:
        raise ctx.fail(f"{nd}-D convolution is not supported")
    return out if b is None else _nn.bias_add(out, b, axis=1)


def _pointwise_transposed(ctx, x, wshape, stride, padding, dilation, output_padding,
                          groups) -> bool:
    """Is this transposed conv one whose input has every spatial size 1, with no padding,
    dilation or groups (so each output is one input pixel times one filter tap)?"""
    spatial = ctx.shape(x)[2:]
    out_pad = output_padding if isinstance(output_padding, list | tuple) else [output_padding]
    return (groups in (1, None) and all(isinstance(d, int) and d == 1 for d in spatial)
            and all(p == 0 for p in padding) and all(d == 1 for d in dilation)
            and all(p == 0 for p in out_pad) and all(isinstance(k, int) for k in wshape))


@register("convolution", "_convolution")
def _convolution(ctx, args):
    x, w, b, stride, padding, dilation, transposed, output_padding, groups = args[:9]
    return _conv(ctx, x, w, b, stride, padding, dilation, transposed, output_padding, groups)


@register("conv1d", "conv2d", "conv3d")
def _conv2d(ctx, args):
    x, w, b, stride, padding, dilation, groups = (list(args) + [None] * 7)[:7]
    return _conv(ctx, x, w, b, stride or 1, padding or 0, dilation or 1, False, 0, groups or 1)


@register("conv_transpose1d", "conv_transpose2d", "conv_transpose3d")
def _conv_transpose(ctx, args):
    """``F.conv_transpose2d`` as torch.export records it (a VQ-VAE's decoder): (input, weight,
    bias, stride, padding, output_padding, groups, dilation)."""
    x, w, b, stride, padding, out_pad, groups, dilation = (list(args) + [None] * 8)[:8]
    return _conv(ctx, x, w, b, stride or 1, padding or 0, dilation or 1, True, out_pad or 0,
                 groups or 1)


@register("_convolution_mode", "conv1d.padding", "conv2d.padding")
def _convolution_mode(ctx, args):
    """A convolution with padding="same" / "valid" (TorchScript's string-padding overload)."""
    x, w, b, stride, padding, dilation, groups = (list(args) + [None] * 7)[:7]
    nd = len(ctx.shape(x)) - 2
    kernel = ctx.shape(w)[2:]
    dilation = list(dilation) if isinstance(dilation, list | tuple) else [dilation or 1]
    dilation = dilation * nd if len(dilation) == 1 else dilation
    if padding == "valid":
        pads = [0] * nd
    elif padding == "same":
        totals = [d * (k - 1) for d, k in zip(dilation, kernel, strict=True)]
        pads = [t // 2 for t in totals] + [t - t // 2 for t in totals]  # extra goes after
    else:
        raise ctx.fail(f"padding={padding!r} is not supported")
    return _conv(ctx, x, w, b, stride or 1, pads, dilation, False, 0, groups or 1)

"""ATen converters for the inference fast paths of ``nn.TransformerEncoder(Layer)``, which a
model traced under ``torch.no_grad()`` records: the fused encoder layer with its merged
attention / key-padding mask, and the nested tensors an encoder builds from
``src_key_padding_mask`` (``_nested_tensor_from_mask`` ... ``to_padded_tensor``).

A nested tensor is imported as the padded values with the mask of real tokens: the layers in
between attend only to real tokens, and ``to_padded_tensor`` writes the padding value over the
other rows, as torch does.
"""

from __future__ import annotations

from ... import op as _op
from ...op import nn as _nn
from .aten import _scalar_like, register
from .aten_activation import _gelu
from .aten_attention import _native_mha


class NestedFromMask:
    """A nested tensor built from a padded batch: ``values`` (batch, seq, ...) and ``keep``
    (batch, seq), True at the tokens that exist."""

    __slots__ = ("values", "keep")

    def __init__(self, values, keep):
        self.values, self.keep = values, keep


@register("logical_not")
def _logical_not(ctx, args):
    x = args[0]
    if ctx.dtype(x) == "bool":
        return _op.logical_not(x)
    return _op.equal(x, _scalar_like(ctx, 0, x))


@register("_nested_tensor_from_mask")
def _nested_tensor_from_mask(ctx, args):
    """(padded, mask[, mask_check]): mask is True (non-zero) at the tokens to keep."""
    x, mask = args[0], args[1]
    keep = mask if ctx.dtype(mask) == "bool" else _op.not_equal(mask, _scalar_like(ctx, 0, mask))
    if len(ctx.shape(keep)) != 2 or list(ctx.shape(keep)) != list(ctx.shape(x))[:2]:
        raise ctx.fail(f"expects a (batch, seq) mask for a {ctx.shape(x)} input, got "
                       f"{ctx.shape(keep)}")
    return NestedFromMask(x, keep)


@register("to_padded_tensor")
def _to_padded_tensor(ctx, args):
    """(nested, padding[, output_size]): the padded values, ``padding`` at missing tokens."""
    nt, padding = args[0], float(args[1])
    if not isinstance(nt, NestedFromMask):
        return nt
    size = args[2] if len(args) > 2 else None
    if size is not None and [int(d) for d in size] != list(ctx.shape(nt.values)):
        raise ctx.fail(f"output_size {list(size)} differs from the padded shape "
                       f"{list(ctx.shape(nt.values))}")
    keep = _op.expand_dims(nt.keep, 2, len(ctx.shape(nt.values)) - 2)
    return _op.where(keep, nt.values, _scalar_like(ctx, padding, nt.values))


@register("_transformer_encoder_layer_fwd")
def _transformer_encoder_layer(ctx, args):
    """nn.TransformerEncoderLayer's inference fast path (batch-first). Its mask is what
    ``MultiheadAttention.merge_masks`` made: a key-padding mask (batch, seq) with mask type 1,
    or an attention mask expanded to (batch, heads, seq, seq) with type 2; True / -inf hide a
    key. On a nested tensor, the missing tokens are hidden the same way."""
    (x, embed, heads, w_qkv, b_qkv, w_out, b_out, use_gelu, norm_first, eps,
     g1, be1, g2, be2, w1, b1, w2, b2) = args[:18]
    mask = args[18] if len(args) > 18 else None
    mask_type = args[19] if len(args) > 19 else None
    nested = x if isinstance(x, NestedFromMask) else None
    if nested is not None:
        if mask is not None:
            raise ctx.fail("a mask on a nested-tensor input is not supported")
        x, mask, mask_type = nested.values, _op.logical_not(nested.keep), 1
    if mask is not None and mask_type not in (1, 2):
        raise ctx.fail(f"mask type {mask_type} is not supported (1: key padding, 2: merged)")
    eps = float(eps)

    def attn(h):
        return _native_mha(ctx, [h, h, h, embed, heads, w_qkv, b_qkv, w_out, b_out, mask,
                                 False, True, mask_type])[0]

    def ffn(h):
        y = _op.add(_nn.dense(h, w1), b1)
        y = _gelu(ctx, [y]) if use_gelu else _nn.relu(y)
        return _op.add(_nn.dense(y, w2), b2)

    if norm_first:
        x = _op.add(x, attn(_nn.layer_norm(x, g1, be1, axis=-1, epsilon=eps)))
        out = _op.add(x, ffn(_nn.layer_norm(x, g2, be2, axis=-1, epsilon=eps)))
    else:
        x = _nn.layer_norm(_op.add(x, attn(x)), g1, be1, axis=-1, epsilon=eps)
        out = _nn.layer_norm(_op.add(x, ffn(x)), g2, be2, axis=-1, epsilon=eps)
    return out if nested is None else NestedFromMask(out, nested.keep)

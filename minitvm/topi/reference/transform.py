"""Numpy references of the shape-manipulating operators (reshape, transpose, concat, slices...)."""

from __future__ import annotations

import numpy as np

from ...runtime.ndarray import contiguous
from ..layout import transform_array
from ..shape import (
    expand_dims_type,
    reshape_like_type,
    reshape_type,
    reverse_reshape_type,
    squeeze_type,
    transpose_axes,
)
from ..utils import reference, slice_params
from .utils import tensor_type


# ------------------------------------------------------------------ reshape & co
# The output shape is derived from the actual arrays (the call's type may hold Any dims).
@reference("reshape")
def _reshape(attrs, a, t):
    return np.reshape(a[0], reshape_type(tensor_type(a[0]), attrs).concrete_shape)


@reference("reshape_like")
def _reshape_like(attrs, a, t):
    out = reshape_like_type(tensor_type(a[0]), tensor_type(a[1]), attrs)
    return np.reshape(a[0], out.concrete_shape)


@reference("contrib_reverse_reshape")
def _reverse_reshape(attrs, a, t):
    return np.reshape(a[0], reverse_reshape_type(tensor_type(a[0]), attrs).concrete_shape)


@reference("transpose")
def _transpose(attrs, a, t):
    return np.transpose(a[0], transpose_axes(a[0].ndim, attrs.axes))


@reference("expand_dims")
def _expand_dims(attrs, a, t):
    return np.reshape(a[0], expand_dims_type(tensor_type(a[0]), attrs).concrete_shape)


@reference("squeeze")
def _squeeze(attrs, a, t):
    return np.reshape(a[0], squeeze_type(tensor_type(a[0]), attrs).concrete_shape)


# ------------------------------------------------------------------ concat / stack / split
def _tuple_arrays(args):
    return list(args[0]) if len(args) == 1 and isinstance(args[0], list | tuple) else list(args)


@reference("concatenate")
def _concatenate(attrs, a, t):
    return np.concatenate(_tuple_arrays(a), axis=int(attrs.axis))


@reference("stack")
def _stack(attrs, a, t):
    return np.stack(_tuple_arrays(a), axis=int(attrs.axis))


@reference("split")
def _split(attrs, args, out_type):
    ios = attrs.indices_or_sections
    return tuple(np.split(args[0], ios if isinstance(ios, int) else list(ios),
                          axis=int(attrs.axis)))


# ------------------------------------------------------------------ slices / layouts / repeats
@reference("strided_slice")
def _strided_slice(attrs, args, out_type):
    x = args[0]
    params = slice_params(x.shape, attrs)
    index = tuple(slice(*params[i]) if i in params else slice(None) for i in range(x.ndim))
    return contiguous(x[index])


@reference("layout_transform")
def _layout_transform(attrs, a, t):
    return transform_array(a[0], attrs.src_layout, attrs.dst_layout)


@reference("tile")
def _tile(attrs, a, t):
    return np.tile(a[0], tuple(attrs.reps))


@reference("repeat")
def _repeat(attrs, a, t):
    return np.repeat(a[0], int(attrs.repeats), axis=int(attrs.axis))


@reference("reverse")
def _reverse(attrs, a, t):
    return np.flip(a[0], int(attrs.axis)).copy()

"""Optimizations that depend on parameter values (TVM's ``relay.data_dep_optimization``):
convert sparse dense and conv2d weights to BSR, pre-transpose fully connected weights."""

from . import bsr_conv2d, bsr_dense, simplify_fc_transpose, utils  # noqa: F401

__all__ = ["bsr_conv2d", "bsr_dense", "simplify_fc_transpose", "utils"]

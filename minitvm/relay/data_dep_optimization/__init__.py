"""Optimizations that depend on parameter values (TVM's ``relay.data_dep_optimization``):
convert sparse dense weights to BSR, pre-transpose fully connected weights."""

from . import bsr_dense, simplify_fc_transpose, utils  # noqa: F401

__all__ = ["bsr_dense", "simplify_fc_transpose", "utils"]

"""Numpy references of the annotation and marker ops: all are identities at run time."""

from __future__ import annotations

from ..utils import reference

ANNOTATIONS = ("on_device", "annotation.stop_fusion", "annotation.checkpoint",
               "annotation.compiler_begin", "annotation.compiler_end", "annotation.cast_hint")


def _identity(attrs, args, out_type):
    return args[0]


for _name in ANNOTATIONS:
    reference(_name)(_identity)

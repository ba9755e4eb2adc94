"""``relay.op.nn._make``: constructors of the ``nn.*`` operators by short name
(``_make.conv2d`` is ``relay.nn.conv2d``)."""

from __future__ import annotations

from ....ir.op import Op
from .._make import _constructor


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    if "nn." + name in Op._registry:
        return _constructor("nn." + name, "minitvm.relay.op.nn")
    raise AttributeError(f"relay.op.nn._make has no operator 'nn.{name}'")

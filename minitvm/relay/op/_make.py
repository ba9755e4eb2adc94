"""``relay.op._make``: TVM's constructor table of the operators (``_make.add(x, y)``).

Each name is the Python constructor of the op of that name (``relay.add`` for ``add``); an op
registered without one gets a constructor that builds the plain call (no attributes)."""

from __future__ import annotations

import importlib

from ...ir.op import Op
from ..expr import Call


def _constructor(op_name: str, namespace: str):
    ns = importlib.import_module(namespace)
    short = op_name.rsplit(".", 1)[-1]
    fn = getattr(ns, short, None)
    if callable(fn) and not isinstance(fn, type):
        return fn
    op = Op.get(op_name)

    def make(*args):
        return Call(op, list(args))

    make.__name__ = short
    return make


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    if name in ("OpStrategy", "OpImplementation", "OpSpecialization"):
        from . import op_strategy

        return getattr(op_strategy, name)
    if name in Op._registry:
        return _constructor(name, "minitvm.relay.op")
    raise AttributeError(f"relay.op._make has no operator {name!r} (no op of that name is "
                         "registered)")

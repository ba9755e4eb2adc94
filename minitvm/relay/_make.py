"""``relay._make``: TVM's older constructor table — the node constructors of
``relay._ffi_api`` and, for any other name, the operator constructors of ``relay.op._make``."""

from __future__ import annotations

from ._ffi_api import *  # noqa: F401,F403
from ._ffi_api import __all__ as _NODES  # noqa: F401


def __getattr__(name: str):
    from .op import _make

    return getattr(_make, name)

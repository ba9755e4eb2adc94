"""The error for the parts of TVM's tuning APIs that minitvm deliberately leaves out: it says
what differs and what to use instead, rather than an AttributeError deep in a script. (Defined
with TVM's other error classes in ``runtime/error.py``, so lower layers raise it too.)"""

from __future__ import annotations

from ..runtime.error import TVMDifferenceError, differs, missing_attribute

__all__ = ["TVMDifferenceError", "differs", "missing_attribute"]

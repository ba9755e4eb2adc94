"""``quietly(fn, *args)``: ``fn(*args)`` with numpy's floating-point errors ignored, as
``np.errstate(all="ignore")`` does, at a third of its cost.

The elementwise and reduction references run once per operator call of the Relay
interpreter; entering a fresh ``np.errstate`` (which builds numpy's error-state object anew
each time) cost about 5 us of the ~7 us a scalar ``negative`` took, the largest part of
interpreting a 100,000-op chain. Here the ignoring state is built once and set and reset
around each call through the context variable ``np.errstate`` itself uses (numpy 2), so
nesting, threads and an exception inside behave as with ``np.errstate``. Where that
variable is not there (another numpy), ``np.errstate`` is used. (The state is made at import:
a later ``np.setbufsize`` does not reach these calls, which changes only speed.)
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

__all__ = ["quietly"]


def _fast_state():
    """numpy's error-state context variable and its all-ignoring value, or None."""
    try:
        from numpy._core._multiarray_umath import _make_extobj
        from numpy._core._ufunc_config import _extobj_contextvar
        ignore = _make_extobj(all="ignore")
        token = _extobj_contextvar.set(ignore)
        try:
            ok = set(np.geterr().values()) == {"ignore"}
        finally:
            _extobj_contextvar.reset(token)
    except (ImportError, AttributeError, TypeError, ValueError):
        return None
    return (_extobj_contextvar, ignore) if ok else None


_STATE = _fast_state()


def quietly(fn: Callable, *args):
    """``fn(*args)`` with numpy's floating-point errors (divide, over, under, invalid)
    ignored for its duration."""
    if _STATE is None:
        with np.errstate(all="ignore"):
            return fn(*args)
    var, ignore = _STATE
    token = var.set(ignore)
    try:
        return fn(*args)
    finally:
        var.reset(token)

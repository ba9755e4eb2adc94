"""Global packed functions (``tvm.register_func`` / ``tvm.get_global_func``): Python callables
registered by name, called from compiled programs (``R.call_packed("name", ...)``,
``R.call_dps_packed``) and by the runtime itself."""

from __future__ import annotations

import threading
from collections.abc import Callable

__all__ = ["register_func", "get_global_func", "list_global_func_names", "remove_global_func"]

_FUNCS: dict[str, Callable] = {}
_LOCK = threading.Lock()


def register_func(func_name, f: Callable | None = None, override: bool = False):
    """Register ``f`` under ``func_name``; usable as ``@register_func("name")`` or bare
    ``@register_func`` (the function's own name)."""
    if callable(func_name) and f is None:
        fn = func_name
        return register_func(fn.__name__, fn, override)
    if not isinstance(func_name, str):
        raise TypeError(f"register_func: the name must be a str, got {type(func_name).__name__}")

    def register(fn: Callable) -> Callable:
        if not callable(fn):
            raise TypeError(f"register_func({func_name!r}): {fn!r} is not callable")
        with _LOCK:
            if func_name in _FUNCS and not override:
                raise ValueError(f"global function {func_name!r} is already registered "
                                 "(pass override=True to replace it)")
            _FUNCS[func_name] = fn
        return fn

    return register(f) if f is not None else register


def get_global_func(name: str, allow_missing: bool = False):
    """The function registered as ``name`` (None when missing and ``allow_missing``)."""
    with _LOCK:
        fn = _FUNCS.get(name)
    if fn is None and not allow_missing:
        raise ValueError(f"no global function {name!r} is registered (tvm.register_func)")
    return fn


def list_global_func_names() -> list[str]:
    with _LOCK:
        return sorted(_FUNCS)


def remove_global_func(name: str) -> None:
    with _LOCK:
        _FUNCS.pop(name, None)

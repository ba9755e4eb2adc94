"""Generic functions: one name, a default body and per-target-key overrides (TVM's GenericFunc).

``@override_native_generic_func("name")`` (and ``@generic_func``) turns a function into the
default of a generic function; ``.register(["cpu", ...])`` adds bodies for target keys. A call
runs the body of the first key of the current target (``with tvm.target.Target(...)``) that has
one, else the default, as TVM dispatches. Generic functions made by name are kept by name
(``get_native_generic_func``), so a strategy registered from several places is one object.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

__all__ = ["GenericFunc", "generic_func", "get_native_generic_func", "override_native_generic_func"]

_LOCK = threading.Lock()
_NAMED: dict[str, GenericFunc] = {}


class GenericFunc:
    """A function dispatched on the keys of the current target."""

    def __init__(self, name: str = "", default: Callable | None = None):
        self.name = name
        self.default: Callable | None = default
        self.dispatch: dict[str, Callable] = {}
        self.__doc__ = getattr(default, "__doc__", None)
        self._note_module(default)

    def _note_module(self, func) -> None:
        """Take the module of a body from outside minitvm as this object's own: caches keyed
        on registered op attributes then see user code (and do not key on it blindly)."""
        module = getattr(func, "__module__", None) or ""
        if func is not None and not module.startswith("minitvm"):
            self.__module__ = module

    def set_default(self, func: Callable, allow_override: bool = False) -> None:
        """Make ``func`` the body used when no key of the current target has one."""
        if self.default is not None and not allow_override:
            raise ValueError(f"generic function {self.name!r} already has a default")
        self.default = func
        self._note_module(func)

    def register(self, key_list, override: bool = False) -> Callable:
        """A decorator registering a body for the target key(s) ``key_list``."""
        keys = [key_list] if isinstance(key_list, str) else list(key_list)

        def decorator(func: Callable) -> Callable:
            for k in keys:
                if k in self.dispatch and not override:
                    raise ValueError(
                        f"generic function {self.name!r}: key {k!r} is already "
                        "registered (pass override=True to replace it)"
                    )
                self.dispatch[k] = func
            self._note_module(func)
            return func

        return decorator

    def get_packed_func(self) -> Callable:
        return self

    def __call__(self, *args, **kwargs):
        from . import Target

        target = Target.current(allow_none=True)
        for k in list(getattr(target, "keys", ()) or ()):
            fn = self.dispatch.get(k)
            if fn is not None:
                return fn(*args, **kwargs)
        if self.default is None:
            raise ValueError(
                f"generic function {self.name!r} has no body for target "
                f"{target} (keys {getattr(target, 'keys', [])}) and no default"
            )
        return self.default(*args, **kwargs)

    def __repr__(self):
        return f"GenericFunc({self.name!r}, keys={sorted(self.dispatch)})"


def get_native_generic_func(name: str) -> GenericFunc:
    """The generic function registered under ``name`` (made empty on first use)."""
    with _LOCK:
        func = _NAMED.get(name)
        if func is None:
            func = _NAMED[name] = GenericFunc(name)
        return func


def override_native_generic_func(func_name: str) -> Callable:
    """A decorator making the function the default of the generic function ``func_name``."""

    def decorator(fdefault: Callable) -> GenericFunc:
        func = get_native_generic_func(func_name)
        func.set_default(fdefault, allow_override=True)
        return func

    return decorator


def generic_func(fdefault: Callable) -> GenericFunc:
    """A decorator making ``fdefault`` the default of a new (unnamed) generic function."""
    return GenericFunc(getattr(fdefault, "__name__", ""), fdefault)

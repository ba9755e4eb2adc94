"""``tvm._ffi``: TVM's registration entry points, for code that calls them by that path.

There is no C++ side here: global functions live in the Python registry
(``register_func``/``get_global_func``), and ``register_object`` leaves a class as it is.
"""

from __future__ import annotations

from .registry import get_global_func, register_func

__all__ = ["get_global_func", "register_func", "register_object"]


def register_object(type_key=None):
    """Class decorator: TVM ties the class to a C++ object type; here it is kept as is."""
    if isinstance(type_key, type):
        return type_key

    def register(cls: type) -> type:
        cls._type_key = type_key or cls.__name__
        return cls

    return register

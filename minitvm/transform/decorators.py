"""The module_pass decorator and the class-form machinery shared with relay's function_pass."""

from __future__ import annotations

import functools
import inspect

from .pass_base import ModulePass
from .pass_info import PassInfo


def make_info(pass_arg, opt_level, name, required, traceable=False, contracts=None) -> PassInfo:
    if required is not None and not isinstance(required, list | tuple):
        raise TypeError("Required is expected to be the type of list/tuple.")
    return PassInfo(0 if opt_level is None else opt_level, name or pass_arg.__name__, required,
                    traceable, **(contracts or {}))


def _literal_args(init, args, kwargs) -> dict:
    """The arguments a class-form pass was constructed with, by parameter name."""
    try:
        bound = inspect.signature(init).bind(None, *args, **kwargs)
    except (TypeError, ValueError):
        return dict(kwargs)
    out = dict(bound.arguments)
    out.pop(next(iter(out)), None)  # self
    return out


def wrap_pass_class(user_cls, base, info: PassInfo, method: str):
    """TVM's class form: a subclass of ``base`` whose instances wrap ``user_cls(*args)``."""
    if not hasattr(user_cls, method):
        raise TypeError(f"{user_cls.__name__} must define {method}() to be a "
                        f"{base.kind} pass")

    class PyPass(base):
        def __init__(self, *args, **kwargs):
            inst = user_cls(*args, **kwargs)
            bound = getattr(inst, method)
            if base.kind == "function":
                def pass_func(func, mod, ctx):
                    return bound(func, mod, ctx)
            else:
                def pass_func(mod, ctx):
                    return bound(mod, ctx)
            base.__init__(self, pass_func, info)
            self._inst = inst
            self._text_args = _literal_args(user_cls.__init__, args, kwargs)
            self._factory_name = info.name

        def __getattr__(self, name):
            if name == "_inst":
                raise AttributeError(name)
            return getattr(self._inst, name)

    PyPass.__name__ = user_cls.__name__
    PyPass.__qualname__ = user_cls.__qualname__
    PyPass.__doc__ = user_cls.__doc__
    PyPass.__module__ = user_cls.__module__
    PyPass.info = info  # class-level access, as the registry reads it
    functools.update_wrapper(PyPass.__init__, user_cls.__init__)
    return PyPass


def module_pass(pass_func=None, opt_level=None, name=None, required=None, traceable=False,
                **contracts):
    """Decorate a module pass: a function ``(mod, ctx) -> mod`` or a class with
    ``transform_module``. Usable bare (``@module_pass``) or with arguments; opt_level defaults
    to 0 (TVM requires it) and the name to the function or class name.
    """

    def create(pass_arg):
        if not callable(pass_arg):
            raise TypeError("pass_func must be a callable for Module pass")
        info = make_info(pass_arg, opt_level, name, required, traceable, contracts)
        if inspect.isclass(pass_arg):
            return wrap_pass_class(pass_arg, ModulePass, info, "transform_module")
        return ModulePass(pass_arg, info)

    if pass_func is not None:
        return create(pass_func)
    return create

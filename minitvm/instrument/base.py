"""PassInstrument and the pass_instrument class decorator."""

from __future__ import annotations

import functools


class PassInstrument:
    """Hooks called around pass execution; every hook is optional.

    ``enter_pass_ctx()``, ``exit_pass_ctx()``, ``should_run(mod, info) -> bool``,
    ``run_before_pass(mod, info)``, ``run_after_pass(mod, info)``.
    """

    def __init__(self):
        pass

    @property
    def name(self) -> str:
        return type(self).__name__

    def enter_pass_ctx(self) -> None:
        pass

    def exit_pass_ctx(self) -> None:
        pass

    def should_run(self, mod, info) -> bool:
        return True

    def run_before_pass(self, mod, info) -> None:
        pass

    def run_after_pass(self, mod, info) -> None:
        pass

    def __repr__(self) -> str:
        return type(self).__name__


def pass_instrument(pi_cls=None):
    """Make a plain class with some of the hooks a PassInstrument (TVM's decorator)."""

    def create(cls):
        if not isinstance(cls, type):
            raise TypeError("pi_cls must be a class")
        if issubclass(cls, PassInstrument):
            return cls

        class PyPassInstrument(cls, PassInstrument):
            def __init__(self, *args, **kwargs):
                cls.__init__(self, *args, **kwargs)
                PassInstrument.__init__(self)

        PyPassInstrument.__name__ = cls.__name__
        PyPassInstrument.__qualname__ = cls.__qualname__
        PyPassInstrument.__doc__ = cls.__doc__
        PyPassInstrument.__module__ = cls.__module__
        functools.update_wrapper(PyPassInstrument.__init__, cls.__init__)
        return PyPassInstrument

    if pi_cls is None:
        return create
    return create(pi_cls)

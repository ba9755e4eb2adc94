"""``tvm.testing._ffi_api``: the functions TVM registers for testing its foreign-function
interface (``testing.echo``, ``testing.ErrorTest``, ...), here as Python functions registered
under the same global names, so tests that call them by either route run.

``ErrorTest`` raises the errors TVM's does (``ValueError`` when the two arguments differ, an
``InternalError`` for ``x == 1``); the callback helpers return functions that call back, fail
with a message, or check two integers for equality."""

from __future__ import annotations

import time
from collections.abc import Callable

from ..runtime.error import InternalError, TVMError
from ..runtime.registry import get_global_func, register_func

__all__ = ["nop", "echo", "device_test", "run_check_signal", "test_wrap_callback",
           "test_raise_error_callback", "test_check_eq_callback", "ErrorTest", "identity_cpp",
           "sleep_in_ffi"]


def nop(*args) -> None:
    """Take any arguments and do nothing (measures call overhead in TVM's tests)."""
    return None


def echo(value):
    """``value`` back, unchanged."""
    return value


def device_test(dev, device_type: int, device_id: int):
    """``dev`` after checking that it is device ``device_type``/``device_id``."""
    if int(dev.device_type) != int(device_type) or int(dev.device_id) != int(device_id):
        raise TVMError(f"device_test: expected device ({device_type}, {device_id}), got "
                       f"({int(dev.device_type)}, {int(dev.device_id)})")
    return dev


def run_check_signal(nsec: int, nstep: int) -> None:
    """Sleep ``nsec`` seconds in ``nstep`` slices, letting a signal (Ctrl-C) interrupt it
    between slices, as TVM's check of signal handling inside a long native call does."""
    steps = max(int(nstep), 1)
    for _ in range(steps):
        time.sleep(float(nsec) / steps)
    print("Function finished without catching signal")


def test_wrap_callback(callback: Callable) -> Callable:
    """A function of no arguments that calls ``callback()`` and returns None."""

    def wrapped() -> None:
        callback()

    return wrapped


def test_raise_error_callback(message: str) -> Callable:
    """A function of no arguments that fails with ``message``."""

    def fail() -> None:
        raise TVMError(message)

    return fail


def test_check_eq_callback(message: str) -> Callable:
    """A function ``f(x, y)`` that fails with ``message`` unless the integers are equal."""

    def check(x: int, y: int) -> None:
        if int(x) != int(y):
            raise TVMError(f"Check failed: x == y ({int(x)} vs. {int(y)}) : {message}")

    return check


def ErrorTest(x: int, y: int) -> None:  # noqa: N802 - TVM's name
    """Raise ``ValueError`` when ``x != y`` and ``InternalError`` when ``x == 1``."""
    if int(x) != int(y):
        raise ValueError("expect x and y to be equal.")
    if int(x) == 1:
        raise InternalError("cannot reach here")


def identity_cpp(value):
    """``value`` through the global function ``testing.identity_py`` (a Python function
    registered by ``tvm.testing.popen_pool``), as TVM's native identity calls back into Python."""
    f = get_global_func("testing.identity_py", allow_missing=True)
    if f is None:
        raise AttributeError('"testing.identity_py" is not registered. Please check if the '
                             "python module is properly loaded")
    return f(value)


def sleep_in_ffi(seconds: float) -> None:
    """Sleep ``seconds`` (a job that outlasts a worker pool's timeout)."""
    time.sleep(float(seconds))


for _name in __all__:
    register_func(f"testing.{_name}", globals()[_name], override=True)
del _name

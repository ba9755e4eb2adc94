"""``tvm.testing.popen_pool``: the small jobs TVM's worker-pool tests send to worker processes
(state set by an initializer, a global function registered inside the worker, fast and slow
sums, a job that sleeps past a timeout). Importing it registers ``testing.identity_py``."""

from __future__ import annotations

from ..runtime.registry import get_global_func, register_func
from . import _ffi_api

__all__ = ["initializer", "after_initializer", "register_ffi", "call_py_ffi", "call_cpp_ffi",
           "call_cpp_py_ffi", "fast_summation", "slow_summation", "timeout_job", "identity_py"]

TEST_GLOBAL_STATE_1 = 0
TEST_GLOBAL_STATE_2 = 0
TEST_GLOBAL_STATE_3 = 0


def initializer(test_global_state_1, test_global_state_2, test_global_state_3) -> None:
    """Set this process's three test globals (a worker's initializer)."""
    global TEST_GLOBAL_STATE_1, TEST_GLOBAL_STATE_2, TEST_GLOBAL_STATE_3
    TEST_GLOBAL_STATE_1 = test_global_state_1
    TEST_GLOBAL_STATE_2 = test_global_state_2
    TEST_GLOBAL_STATE_3 = test_global_state_3


def after_initializer() -> tuple:
    """The three test globals, as the initializer left them."""
    return TEST_GLOBAL_STATE_1, TEST_GLOBAL_STATE_2, TEST_GLOBAL_STATE_3


def identity_py(value):
    """``value`` unchanged (registered as ``testing.identity_py``)."""
    return value


register_func("testing.identity_py", identity_py, override=True)


def register_ffi() -> None:
    """Register ``testing.nested_identity_py`` in this process."""
    register_func("testing.nested_identity_py", identity_py, override=True)


def call_py_ffi(value):
    """``value`` through ``testing.nested_identity_py`` (registered by ``register_ffi``)."""
    return get_global_func("testing.nested_identity_py")(value)


def call_cpp_ffi(value):
    """``value`` through ``testing.echo``."""
    return _ffi_api.echo(value)


def call_cpp_py_ffi(value):
    """``value`` through ``testing.identity_cpp``, which calls ``testing.identity_py``."""
    return _ffi_api.identity_cpp(value)


def fast_summation(n: int) -> int:
    """0 + 1 + ... + n in closed form."""
    return n * (n + 1) // 2


def slow_summation(n: int) -> int:
    """0 + 1 + ... + n by a loop."""
    total = 0
    for i in range(n + 1):
        total += i
    return total


def timeout_job(n: float) -> None:
    """Sleep 1.5 * ``n`` seconds (longer than a timeout of ``n``)."""
    _ffi_api.sleep_in_ffi(n * 1.5)

"""A damage-fuzzer family whose cases crash, hang, fail and pass on purpose: what
``test_damage_fuzz`` checks the worker-process runner records (imported by the workers)."""

import ctypes
import time

from minitvm.testing.fuzz.damage import DamageCase


def _segfault():
    ctypes.string_at(0)  # reads address 0: the worker dies of SIGSEGV


def _bare_key_error():
    return {}["missing"]


def _clear_error():
    raise ValueError("input 'x' has the wrong shape")


def cases(seed: int, n: int) -> list:
    """Five cases in a fixed order (``seed`` and ``n`` are not used)."""
    return [DamageCase("self/clear", "clear", _clear_error, ("'x'",)),
            DamageCase("self/crash", "segfault", _segfault),
            DamageCase("self/error", "key error", _bare_key_error),
            DamageCase("self/hang", "sleeps", lambda: time.sleep(60)),
            DamageCase("self/accepted", "fine", lambda: None)]

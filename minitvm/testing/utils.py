"""``tvm.testing.utils``: TVM's test helpers module. The helpers the package defines
(``assert_allclose``, ``parametrize_targets``, ``requires_*``, ...) are readable here too; this
module adds numerical gradient checking and the test marks ``slow``, ``exclude_targets``,
``skip_if_32bit`` and the skip/xfail-by-parameter helpers."""

from __future__ import annotations

import functools
import os
import platform
import sys

import numpy as np

__all__ = ["check_numerical_grads", "slow", "exclude_targets", "skip_if_32bit",
           "is_ampere_or_newer", "skip_parameterizations", "xfail_parameterizations",
           "SKIP_SLOW_TESTS", "DEFAULT_TEST_TARGETS", "assert_prim_expr_equal", "IS_IN_CI",
           "identity_after", "terminate_self", "install_request_hook"]

SKIP_SLOW_TESTS = os.getenv("SKIP_SLOW_TESTS", "").lower() in {"true", "1", "yes"}
DEFAULT_TEST_TARGETS = ["llvm"]  # the only target minitvm compiles for


def __getattr__(name: str):
    """The package's own helpers (``tvm.testing.utils.assert_allclose``)."""
    pkg = sys.modules[__package__]
    if name != "__path__" and name in getattr(pkg, "__dict__", {}):
        return pkg.__dict__[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _pytest():
    import pytest

    return pytest


def slow(fn):
    """Marks a slow test: skipped when the environment sets ``SKIP_SLOW_TESTS`` (true/1/yes)."""

    @functools.wraps(fn)
    def run(*args, **kwargs):
        if SKIP_SLOW_TESTS:
            _pytest().skip("slow test skipped: SKIP_SLOW_TESTS is set")
        return fn(*args, **kwargs)

    return run


def exclude_targets(*targets):
    """Never runs a target-parametrized test on ``targets`` (it is skipped there)."""
    excluded = {str(t).split()[0] for t in targets}

    def decorator(func):
        @functools.wraps(func)
        def run(*args, **kwargs):
            target = kwargs.get("target")
            if target is not None and str(target).split()[0] in excluded:
                _pytest().skip(f"target {target} is excluded for this test")
            return func(*args, **kwargs)

        run.tvm_excluded_targets = sorted(excluded | set(getattr(func,
                                                                  "tvm_excluded_targets", ())))
        return run

    return decorator


def _is_32bit() -> bool:
    return "32bit" in platform.architecture()[0] or sys.maxsize <= 2**32


def skip_if_32bit(reason: str):
    """Skips the decorated test on a 32-bit Python."""

    def decorator(func):
        return _pytest().mark.skipif(_is_32bit(), reason=reason)(func)

    return decorator


def is_ampere_or_newer() -> bool:
    """Whether a CUDA device of compute capability 8.0 or later is present: never in minitvm,
    which has no CUDA back end."""
    return False


def _param_filter(action, *params, reason: str):
    wanted = {str(p) for p in params}

    def decorator(func):
        @functools.wraps(func)
        def run(*args, **kwargs):
            request = kwargs.get("request")
            node = getattr(request, "node", None)
            ident = getattr(getattr(node, "callspec", None), "id", "")
            if any(w in ident.split("-") for w in wanted):
                action(reason)
            return func(*args, **kwargs)

        return run

    return decorator


def skip_parameterizations(*params, reason: str):
    """Skips the runs of a parametrized test whose id contains one of ``params`` (the test must
    take the ``request`` fixture)."""
    return _param_filter(_pytest().skip, *params, reason=reason)


def xfail_parameterizations(*params, reason: str):
    """Marks as expected failures the runs whose id contains one of ``params``."""
    return _param_filter(_pytest().xfail, *params, reason=reason)


def assert_prim_expr_equal(lhs, rhs) -> None:
    """Raises ``ValueError`` unless two integer expressions are equal after arithmetic
    simplification (their difference simplifies to 0)."""
    from ..arith import Analyzer
    from ..ir.convert import convert

    ana = Analyzer()
    diff = ana.simplify(convert(lhs) - convert(rhs))
    value = getattr(diff, "value", None)
    if value != 0:
        raise ValueError(f"{lhs} and {rhs} are not equal: their difference simplifies to {diff}")


def _as_float_array(x) -> np.ndarray:
    x = x.numpy() if hasattr(x, "numpy") and not isinstance(x, np.ndarray) else x
    return np.array(x, dtype=np.float64)


def check_numerical_grads(function, input_values, grad_values, function_value=None,
                          delta: float = 1e-3, atol: float = 1e-2, rtol: float = 0.1) -> None:
    """Checks ``grad_values`` (the gradients of the scalar ``function`` at ``input_values``)
    against central finite differences, element by element.

    Parameters
    ----------
    function : callable
        Takes the inputs (positionally for lists, by name for dicts) and returns a number (an
        array result is summed).
    input_values : list or dict of arrays
        Where the gradient is checked.
    grad_values : list or dict of arrays
        The gradients to check, matching ``input_values``.
    function_value : float, optional
        ``function(*input_values)``; computed when omitted.
    delta : float
        Finite-difference step.
    atol, rtol : float
        Tolerance: ``|numeric - given| <= atol + rtol * |numeric|``.
    """
    if isinstance(input_values, dict) != isinstance(grad_values, dict):
        raise TypeError("check_numerical_grads: input_values and grad_values must both be "
                        "lists or both be dicts")
    if isinstance(input_values, dict):
        names = list(input_values)
        inputs = {k: _as_float_array(v) for k, v in input_values.items()}
        grads = {k: _as_float_array(v) for k, v in grad_values.items()}

        def call(vals):
            return float(np.sum(_as_float_array(function(**vals))))
    else:
        names = list(range(len(input_values)))
        inputs = {k: _as_float_array(v) for k, v in zip(names, input_values)}
        if len(grad_values) > len(names):
            raise ValueError(f"check_numerical_grads: {len(grad_values)} gradients for "
                             f"{len(names)} inputs")
        grads = {k: _as_float_array(v) for k, v in zip(names, grad_values)}

        def call(vals):
            return float(np.sum(_as_float_array(function(*[vals[k] for k in names]))))

    if function_value is not None:
        base = float(np.sum(_as_float_array(function_value)))
        if not np.isfinite(base):
            raise ValueError(f"check_numerical_grads: function_value {base} is not finite")
    for name, grad in grads.items():
        x = inputs[name]
        if grad.shape != x.shape:
            raise ValueError(f"check_numerical_grads: the gradient of input {name!r} has shape "
                             f"{grad.shape}, the input {x.shape}")
        numeric = np.zeros_like(x)
        flat = x.reshape(-1)
        for j in range(flat.size):
            old = flat[j]
            flat[j] = old + delta
            up = call(inputs)
            flat[j] = old - delta
            down = call(inputs)
            flat[j] = old
            numeric.reshape(-1)[j] = (up - down) / (2 * delta)
        err = np.abs(numeric - grad)
        bad = err > atol + rtol * np.abs(numeric)
        if bad.any():
            j = int(np.argmax(np.where(bad, err, -1.0)))
            idx = tuple(int(i) for i in np.unravel_index(j, x.shape)) if x.shape else ()
            raise AssertionError(
                f"check_numerical_grads: gradient of input {name!r} is wrong at {tuple(idx)}: "
                f"numeric {numeric.reshape(-1)[j]:.6g}, given {grad.reshape(-1)[j]:.6g} "
                f"({int(bad.sum())} of {bad.size} elements beyond atol={atol}, rtol={rtol}; "
                f"max abs error {float(err.max()):.6g})")


# ------------------------------------------------------------------ process helpers (popen tests)
IS_IN_CI = os.getenv("CI", "") == "true"


def identity_after(x, sleep):
    """``x``, returned after sleeping ``sleep`` seconds (a slow job for worker-pool tests)."""
    if sleep:
        import time

        time.sleep(sleep)
    return x


def terminate_self():
    """End the calling process with a failure status (``sys.exit(-1)``, as TVM's helper does:
    worker-pool tests send it to a worker to see the pool survive a dying child)."""
    sys.exit(-1)


def install_request_hook(depth: int) -> None:
    """In CI (``CI=true``), wrap ``urllib.request`` with the project's request hook: the
    ``request_hook`` module of ``tests/scripts/request_hook``, found ``depth`` directories above
    this file, is imported and its ``init()`` called (it redirects downloads to a mirror).
    Outside CI nothing happens, as in TVM."""
    if not IS_IN_CI:
        return
    from pathlib import Path

    base = globals().get("__file__")
    where = Path(base).resolve().parent if base else Path.cwd().resolve()
    if depth <= 0:
        raise ValueError(f"depth less than 1 not supported, found: {depth}")
    for _ in range(depth):
        where = where.parent
    hook_dir = where / "tests" / "scripts" / "request_hook"
    if not hook_dir.exists():
        raise RuntimeError(f"Directory {hook_dir} does not exist (install_request_hook looked "
                           f"{depth} directories above {base or 'the working directory'})")
    sys.path.append(str(hook_dir))
    import request_hook  # noqa: PLC0415  (only in CI: the hook is not part of the package)

    request_hook.init()

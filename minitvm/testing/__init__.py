"""tvm.testing: numeric comparison and target parametrization helpers for tests."""

from __future__ import annotations

import inspect

import numpy as np

__all__ = [
    "assert_allclose", "enabled_targets", "parametrize_targets", "device_enabled", "uses_gpu",
    "requires_gpu", "requires_cuda", "requires_llvm", "main", "parameter", "parameters",
    "fixture", "known_failing_targets", "CompareBeforeAfter", "requires_package",
]

from .fixtures import (  # noqa: E402
    CompareBeforeAfter, fixture, known_failing_targets, parameter, parameters,
)

# The targets this build can run; only the CPU (llvm) exists here.
_ENABLED = ("llvm",)


def _as_numpy(x):
    if hasattr(x, "numpy") and not isinstance(x, np.ndarray):
        return x.numpy()
    return np.asanyarray(x)


def assert_allclose(actual, desired, rtol: float = 1e-7, atol: float = 1e-7) -> None:
    """Like ``np.testing.assert_allclose`` but also checks shapes and accepts ``tvm.nd`` arrays."""
    actual, desired = _as_numpy(actual), _as_numpy(desired)
    if actual.shape != desired.shape:
        raise AssertionError(f"shape mismatch: actual {actual.shape} vs desired {desired.shape}")
    np.testing.assert_allclose(actual, desired, rtol=rtol, atol=atol, verbose=True)


def device_enabled(target) -> bool:
    """Whether ``target`` (a string such as "llvm" or "cuda") can run here."""
    kind = str(target).split()[0]
    return kind in _ENABLED


def enabled_targets() -> list:
    """``[(target, device)]`` for every target that runs here: ``[("llvm", tvm.cpu(0))]``."""
    from ..runtime.ndarray import device

    return [(t, device(t, 0)) for t in _ENABLED]


def parametrize_targets(*args):
    """Run a ``test(target, dev)`` once per enabled target; usable bare or with target names."""
    import pytest

    def wrap(targets):
        def decorator(func):
            wanted = [t for t in (targets or _ENABLED) if device_enabled(t)]
            from ..runtime.ndarray import device

            params = inspect.signature(func).parameters
            if "dev" in params:
                return pytest.mark.parametrize(
                    "target,dev", [(t, device(t, 0)) for t in wanted])(func)
            return pytest.mark.parametrize("target", wanted)(func)

        return decorator

    if len(args) == 1 and callable(args[0]):
        return wrap(None)(args[0])
    return wrap(args)


def _skip_unless(cond: bool, reason: str):
    def decorator(func):
        import pytest

        return pytest.mark.skipif(not cond, reason=reason)(func)

    return decorator


def uses_gpu(func):
    """Marks a test that also runs on GPUs when present; it runs on the CPU here."""
    return func


requires_gpu = _skip_unless(False, "no GPU target in minitvm")
requires_cuda = requires_gpu
# Every other device TVM tests can ask for: none exists in minitvm, so those tests skip.
for _name in ("cudagraph", "cudnn", "cublas", "cutlass", "tensorcore", "opencl", "rocm",
              "vulkan", "metal", "nvptx", "hexagon", "ethosn", "ethosu", "cmsisnn", "micro",
              "rpc", "openclml", "vitis_ai", "arm_compute_lib", "matrixcore", "aprofile_aem",
              "corstone300", "mrvl", "rust", "spirv"):
    globals()["requires_" + _name] = _skip_unless(False, f"no {_name} support in minitvm")
requires_x86 = _skip_unless(__import__("platform").machine() in ("x86_64", "AMD64", "i686"),
                            "needs an x86 CPU")


def requires_package(*names):
    """Skips the test unless every named Python package can be imported."""
    import importlib.util

    missing = [n for n in names if importlib.util.find_spec(n) is None]
    return _skip_unless(not missing, f"needs the package(s) {', '.join(missing)}")


def requires_llvm(func):
    """The llvm target is always available."""
    return func


def main() -> None:
    """Run the calling test file with pytest (``if __name__ == "__main__": tvm.testing.main()``)."""
    import sys

    import pytest

    frame = inspect.stack()[1]
    sys.exit(pytest.main([frame.filename, *sys.argv[1:]]))



from . import env, utils  # noqa: E402
from .utils import (  # noqa: E402,F401
    DEFAULT_TEST_TARGETS, SKIP_SLOW_TESTS, assert_prim_expr_equal, check_numerical_grads,
    exclude_targets, is_ampere_or_newer, skip_if_32bit, skip_parameterizations, slow,
    xfail_parameterizations,
)
from .utils import identity_after, install_request_hook, terminate_self  # noqa: E402,F401
from . import _ffi_api, popen_pool  # noqa: E402,F401  (TVM's FFI test functions, pool jobs)
from ._ffi_api import (  # noqa: E402,F401
    ErrorTest, device_test, echo, identity_cpp, nop, run_check_signal, test_check_eq_callback,
    test_raise_error_callback, test_wrap_callback,
)
from .popen_pool import (  # noqa: E402,F401
    after_initializer, call_cpp_ffi, call_cpp_py_ffi, call_py_ffi, fast_summation, initializer,
    register_ffi, slow_summation, timeout_job,
)

"""Session-wide test settings: the on-disk kernel cache goes to a temporary directory, never
the user's ~/.cache/minitvm; builds are strict (a kernel whose native lowering fails raises
rather than running in numpy; tests of the fallback itself switch it off); each test body runs
with Python's cyclic collector paused, as the compiler's passes do, and its cyclic garbage is
collected after it (tests of the collector's handling opt out with ``cyclic_gc``)."""

import gc

import pytest


@pytest.fixture(autouse=True, scope="session")
def _private_kernel_cache_dir(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MINITVM_CACHE_DIR", str(tmp_path_factory.mktemp("minitvm-cache")))
        # whole relay.build results are not reused across tests: many tests monkeypatch compiler
        # internals, which the build cache's key cannot see (its own tests switch it on)
        mp.setenv("MINITVM_DISABLE_BUILD_CACHE", "1")
        mp.setenv("MINITVM_STRICT_NATIVE", "1")
        yield


@pytest.fixture(autouse=True)
def _own_kernels_when_patching(request):
    """A test that monkeypatches (a schedule's constant or switch) builds its own kernels: the
    in-process kernel cache keys on the source function, not on module constants, so a kernel
    an earlier test built (the same conv under another parameter of the test) would be reused.
    The cache is emptied before such a test and after it."""
    if "monkeypatch" not in request.fixturenames:
        yield
        return
    from minitvm.backend import kernel_cache

    kernel_cache.clear_cache()
    yield
    kernel_cache.clear_cache()


@pytest.fixture(autouse=True)
def _forget_the_tests_own_op_code():
    """Attributes of minitvm's ops that a test set, overrode or removed from its own code are
    put back after it: the whole-build caches' key holds such changes (one holding code turns
    the caches off), and a pass may introduce any op, so one left behind would change every
    later test's builds. Ops the test registered itself stay: a build not calling them does
    not see them."""
    from minitvm.backend.whole_build import foreign_op_attrs
    from minitvm.ir.op import Op

    before = {(name, attr): Op.get(name)._attrs.get(attr) for name, attr in foreign_op_attrs()}
    yield
    for name, attr in set(foreign_op_attrs()) | before.keys():
        op = Op.get(name)
        entry = before[(name, attr)] if (name, attr) in before else op._builtin.get(attr)
        if entry is None:
            op._attrs.pop(attr, None)
        else:
            op._attrs[attr] = entry


@pytest.fixture(autouse=True)
def _collector_paused_in_the_test(request):
    """The cyclic collector is off while the test runs and its young generation is collected
    after: a test building a 100,000-node program otherwise pays the collector's rescans of
    every node it keeps (about a fifth of those tests' time), and the compiler it calls
    pauses the collector itself (``ir.gc_pause``) anyway. Objects the test leaves behind are
    in the young generation at its end, so one collection of it frees their cycles."""
    if request.node.get_closest_marker("cyclic_gc") or not gc.isenabled():
        yield
        return
    from minitvm.ir.gc_pause import paused

    with paused():
        yield
    gc.collect(0)


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "cyclic_gc: the test runs with the cyclic collector on, as outside the "
        "test suite (tests of how the compiler pauses and restores it)")
    config.addinivalue_line(
        "markers", "numpy_fallback(reason): the test builds a kernel that runs in numpy because "
        "an op lacks native lowering (a known gap, named in reason); strict builds are off for it")


@pytest.fixture(autouse=True)
def _allow_known_numpy_fallback(request):
    marker = request.node.get_closest_marker("numpy_fallback")
    if marker is None:
        yield
        return
    if not marker.args or not marker.args[0]:
        raise ValueError(f"{request.node.nodeid}: numpy_fallback needs the reason (the op)")
    import warnings

    from minitvm.backend.fallback import NativeFallbackWarning

    with pytest.MonkeyPatch.context() as mp, warnings.catch_warnings():
        mp.setenv("MINITVM_STRICT_NATIVE", "0")
        warnings.simplefilter("ignore", NativeFallbackWarning)
        yield


@pytest.fixture
def matrix_set_diag_without_compute(monkeypatch):
    """``matrix_set_diag`` with its compute (FTECompute) taken away for the test: the op with no
    native lowering that the numpy-fallback tests build (any op would do; this one keeps them
    independent of which ops have computes). Using monkeypatch empties the kernel cache."""
    from minitvm.ir.op import Op

    monkeypatch.delitem(Op.get("matrix_set_diag")._attrs, "FTECompute")


class SeededMatrices:
    """Random float32 torch matrices from one seeded generator, for the linear-algebra tests of
    both importers: well conditioned (``a + 3 I``) and positive definite (``a a^T + n I``)."""

    def __init__(self, seed: int = 0):
        import numpy as np

        self._rng = np.random.default_rng(seed)

    def _normal(self, shape):
        return self._rng.standard_normal(shape).astype("float32")

    def well_conditioned(self, *shape: int):
        import numpy as np
        import torch

        return torch.from_numpy(self._normal(shape) + np.float32(3) * np.eye(shape[-1],
                                                                             dtype="float32"))

    def positive_definite(self, *shape: int):
        import numpy as np
        import torch

        a = self._normal(shape)
        eye = np.eye(shape[-1], dtype="float32")
        return torch.from_numpy(a @ np.swapaxes(a, -1, -2) + np.float32(shape[-1]) * eye)


@pytest.fixture
def matrices():
    """``SeededMatrices`` seeded 0 (a fresh generator per test)."""
    return SeededMatrices(0)

"""Session-wide test settings: the on-disk kernel cache goes to a temporary directory, never
the user's ~/.cache/minitvm; builds are strict (a kernel whose native lowering fails raises
rather than running in numpy; tests of the fallback itself switch it off)."""

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


def pytest_configure(config):
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

"""Session-wide test settings: the on-disk kernel cache goes to a temporary directory, never
the user's ~/.cache/minitvm."""

import pytest


@pytest.fixture(autouse=True, scope="session")
def _private_kernel_cache_dir(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MINITVM_CACHE_DIR", str(tmp_path_factory.mktemp("minitvm-cache")))
        # whole relay.build results are not reused across tests: many tests monkeypatch compiler
        # internals, which the build cache's key cannot see (its own tests switch it on)
        mp.setenv("MINITVM_DISABLE_BUILD_CACHE", "1")
        yield

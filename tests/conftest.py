"""Session-wide test settings: the on-disk kernel cache goes to a temporary directory, never
the user's ~/.cache/minitvm."""

import pytest


@pytest.fixture(autouse=True, scope="session")
def _private_kernel_cache_dir(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MINITVM_CACHE_DIR", str(tmp_path_factory.mktemp("minitvm-cache")))
        yield

"""``tvm.contrib.utils``: temporary directories for tests and exported libraries."""

from __future__ import annotations

import os
import shutil
import tempfile


class TempDirectory:
    """A temporary directory removed when the object is collected or ``remove()`` is called
    (kept when ``keep_for_debug``). ``relpath(name)`` joins a file name onto it."""

    def __init__(self, custom_path: str | None = None, keep_for_debug: bool = False):
        if custom_path is not None:
            os.makedirs(custom_path, exist_ok=True)
            self.temp_dir = os.path.abspath(custom_path)
        else:
            self.temp_dir = tempfile.mkdtemp(prefix="minitvm_")
        self._keep = keep_for_debug

    @property
    def path(self) -> str:
        return self.temp_dir

    def relpath(self, name: str) -> str:
        return os.path.join(self.temp_dir, name)

    def listdir(self) -> list[str]:
        return os.listdir(self.temp_dir)

    def remove(self) -> None:
        if self.temp_dir and not self._keep:
            shutil.rmtree(self.temp_dir, ignore_errors=True)
            self.temp_dir = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()

    def __del__(self):
        try:
            self.remove()
        except Exception:  # interpreter shutdown: modules may already be gone
            pass

    def __str__(self):
        return str(self.temp_dir)


def tempdir(custom_path: str | None = None, keep_for_debug: bool = False) -> TempDirectory:
    """A new ``TempDirectory``."""
    return TempDirectory(custom_path, keep_for_debug)

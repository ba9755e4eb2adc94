"""``tvm.contrib.download``: fetch test data once into a cache directory
(``$TVM_TEST_DATA``, default ``~/.tvm_test_data``) and reuse it afterwards.

A cached file is returned without touching the network; fetching one that is not cached on a
machine without network access raises a ``RuntimeError`` naming the URL and the cache path
where the file can be placed by hand."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

__all__ = ["download", "download_testdata", "TEST_DATA_ROOT_PATH"]

TEST_DATA_ROOT_PATH = Path(os.environ.get("TVM_TEST_DATA", Path.home() / ".tvm_test_data"))


def download(url: str, path, overwrite: bool = False, size_compare: bool = False,
             retries: int = 3, timeout: float = 30.0) -> None:
    """Download ``url`` to ``path`` (kept when present unless ``overwrite``)."""
    # (urllib.request pulls in http, ssl and email: loaded here, not by ``import minitvm``)
    import urllib.error
    import urllib.request

    path = Path(path)
    if path.is_file() and not overwrite:
        if not size_compare:
            return
        try:
            with urllib.request.urlopen(urllib.request.Request(url, method="HEAD"),
                                        timeout=timeout) as resp:
                size = int(resp.headers.get("Content-Length") or -1)
        except (urllib.error.URLError, OSError, ValueError):
            return  # cannot compare offline: keep the cached copy
        if size in (-1, path.stat().st_size):
            return
    path.parent.mkdir(parents=True, exist_ok=True)
    last: Exception | None = None
    for _ in range(max(1, retries)):
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".")
        try:
            with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=timeout) as r:
                shutil.copyfileobj(r, out)
            os.replace(tmp, path)
            return
        except (urllib.error.URLError, OSError, ValueError) as err:
            last = err
            if os.path.exists(tmp):
                os.unlink(tmp)
    raise RuntimeError(f"download of {url} failed ({type(last).__name__}: {last}); without "
                       f"network access, place the file at {path} by hand")


def download_testdata(url: str, relpath: str, module=None, overwrite: bool = False) -> str:
    """The path of ``relpath`` in the test-data cache (under ``module``: a name or a list of
    nested names), downloading ``url`` there first unless it is already cached."""
    root = Path(os.environ.get("TVM_TEST_DATA", TEST_DATA_ROOT_PATH))
    if module is None:
        folder = root
    elif isinstance(module, str):
        folder = root / module
    else:
        folder = root.joinpath(*[str(m) for m in module])
    path = folder / relpath
    download(url, path, overwrite=overwrite)
    return str(path)

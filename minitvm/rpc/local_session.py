"""``rpc.LocalSession``: TVM's RPC session API served by this process — uploads go to the
session's own temporary directory, ``load_module`` reads from it, devices are the host's."""

from __future__ import annotations

import os
import shutil
import tempfile

from ..runtime.error import differs
from ..runtime.module import load_module
from ..runtime.ndarray import cpu, device
from ..runtime.registry import get_global_func

__all__ = ["RPCSession", "LocalSession"]


class RPCSession:
    """The session API (``upload``, ``download``, ``remove``, ``listdir``, ``load_module``,
    ``cpu`` / ``device``, ``get_function``) over a working directory of this machine."""

    def __init__(self, workdir: str):
        self._workdir = workdir

    def _path(self, name: str) -> str:
        path = os.path.normpath(os.path.join(self._workdir, name))
        if os.path.commonpath([path, self._workdir]) != self._workdir:
            raise ValueError(f"RPC session: {name!r} is outside the session's directory")
        return path

    def upload(self, data, target: str | None = None) -> None:
        """Copy a local file (path) or write bytes into the session directory."""
        if isinstance(data, bytes | bytearray):
            if target is None:
                raise ValueError("upload of bytes needs a target file name")
            with open(self._path(target), "wb") as f:
                f.write(data)
            return
        src = os.fspath(data)
        if not os.path.isfile(src):
            raise FileNotFoundError(f"upload: no such file {src!r}")
        shutil.copyfile(src, self._path(target or os.path.basename(src)))

    def download(self, path: str) -> bytes:
        with open(self._path(path), "rb") as f:
            return f.read()

    def remove(self, path: str) -> None:
        p = self._path(path)
        if os.path.isdir(p):
            shutil.rmtree(p)
        elif os.path.exists(p):
            os.remove(p)

    def listdir(self, path: str = ".") -> str:
        """Names in a directory of the session, comma separated (TVM's format)."""
        return ",".join(sorted(os.listdir(self._path(path))))

    def load_module(self, path: str):
        """Load an exported library that was uploaded to the session."""
        return load_module(self._path(path))

    def device(self, dev_type, dev_id: int = 0):
        dev = device(dev_type, dev_id)
        if dev.device_type != 1:
            raise differs(f"RPCSession.device({dev_type!r})",
                          "minitvm runs on the host CPU only", "session.cpu()")
        return dev

    def cpu(self, dev_id: int = 0):
        return cpu(dev_id)

    def cuda(self, dev_id: int = 0):
        return self.device("cuda", dev_id)

    def cl(self, dev_id: int = 0):
        return self.device("opencl", dev_id)

    def get_function(self, name: str):
        """A global packed function of the (local) server."""
        fn = get_global_func(name, allow_missing=True)
        if fn is None:
            raise AttributeError(f"RPC session: no global function {name!r}")
        return fn


class LocalSession(RPCSession):
    """An RPC session that runs in this process (TVM's local demo session)."""

    def __init__(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="tvm_rpc_")
        super().__init__(os.path.realpath(self._tmp.name))

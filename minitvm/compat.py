"""Run unmodified TVM scripts: ``minitvm.compat.install_as_tvm()`` makes ``import tvm`` (and
``from tvm import relay``, ``import tvm.relay.testing``, ...) resolve to minitvm."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys


class _TvmAlias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Maps every ``tvm.X`` module name onto ``minitvm.X``."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "tvm" and not fullname.startswith("tvm."):
            return None
        real = "minitvm" + fullname[3:]
        if importlib.util.find_spec(real) is None:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec):
        return importlib.import_module("minitvm" + spec.name[3:])

    def exec_module(self, module):
        pass


_FINDER = _TvmAlias()


def install_as_tvm() -> None:
    """Register minitvm under the name ``tvm`` (idempotent)."""
    import minitvm

    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)
    sys.modules.setdefault("tvm", minitvm)
    for name, mod in list(sys.modules.items()):
        if name.startswith("minitvm."):
            sys.modules.setdefault("tvm" + name[7:], mod)


def uninstall_as_tvm() -> None:
    if _FINDER in sys.meta_path:
        sys.meta_path.remove(_FINDER)
    for name in [n for n, m in sys.modules.items() if n == "tvm" or n.startswith("tvm.")]:
        if getattr(sys.modules[name], "__name__", "").startswith("minitvm"):
            del sys.modules[name]

"""A disk cache of a test's own for the Relay VM's saved-kernel and whole-executable tests."""

from __future__ import annotations

from minitvm.backend.kernel_cache import clear_cache
from minitvm.codegen.build import clear_cache as clear_codegen_cache
from minitvm.relay.backend.vm.symbolic import clear_symbolic_cache


def forget_compiled() -> None:
    """Drop every kernel, module and symbolic kernel kept in this process (only the disk
    remembers, as in a fresh process)."""
    clear_cache()
    clear_codegen_cache()
    clear_symbolic_cache()


def own_disk_cache(tmp_path, monkeypatch):
    """An empty disk cache under ``tmp_path`` with whole builds on and nothing kept in process;
    returns its directory."""
    monkeypatch.delenv("MINITVM_DISABLE_DISK_CACHE", raising=False)
    monkeypatch.delenv("MINITVM_DISABLE_BUILD_CACHE", raising=False)
    monkeypatch.setenv("MINITVM_CACHE_DIR", str(tmp_path / "cache"))
    forget_compiled()
    return tmp_path / "cache"

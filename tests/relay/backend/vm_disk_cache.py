"""A disk cache of a test's own for the Relay VM's saved-kernel and whole-executable tests."""

from __future__ import annotations

from minitvm.backend import whole_build
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
    returns its directory. The op registry's digest is pinned: an op attribute an earlier test
    in this worker registered from outside minitvm would turn the records off (the key cannot
    see its code)."""
    monkeypatch.delenv("MINITVM_DISABLE_DISK_CACHE", raising=False)
    monkeypatch.delenv("MINITVM_DISABLE_BUILD_CACHE", raising=False)
    monkeypatch.setenv("MINITVM_CACHE_DIR", str(tmp_path / "cache"))
    # (the key is made in backend.whole_build: pinning build_cache's re-exported name did nothing)
    monkeypatch.setattr(whole_build, "_op_registry_digest", lambda: "ops")
    forget_compiled()
    return tmp_path / "cache"

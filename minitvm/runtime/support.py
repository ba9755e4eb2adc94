"""``tvm.support``: what this build of minitvm contains (``libinfo()``), in TVM's key names."""

from __future__ import annotations

import importlib.util
import platform
import sys

__all__ = ["libinfo", "describe", "enabled"]


def _llvm_version() -> str:
    try:
        from llvmlite import binding

        return ".".join(str(v) for v in binding.llvm_version_info)
    except Exception:  # noqa: BLE001  (llvmlite missing or unusable: report it as absent)
        return "NOT-FOUND"


def _onoff(flag: bool) -> str:
    return "ON" if flag else "OFF"


def libinfo() -> dict[str, str]:
    """Build options as TVM reports them (``"ON"`` / ``"OFF"`` / versions): llvm (llvmlite) is
    on, GPU back ends are off, oneDNN is on when its package is installed."""
    llvm = _llvm_version()
    dnnl = importlib.util.find_spec("onednn_cpu_gomp") is not None or \
        importlib.util.find_spec("onednn") is not None
    info = {
        "GIT_COMMIT_HASH": "NOT-FOUND", "GIT_COMMIT_TIME": "NOT-FOUND",
        "USE_LLVM": _onoff(llvm != "NOT-FOUND"), "LLVM_VERSION": llvm,
        "USE_CUDA": "OFF", "CUDA_VERSION": "NOT-FOUND", "USE_ROCM": "OFF", "USE_VULKAN": "OFF",
        "USE_METAL": "OFF", "USE_OPENCL": "OFF", "USE_CUDNN": "OFF", "USE_CUBLAS": "OFF",
        "USE_CUTLASS": "OFF", "USE_TENSORRT_CODEGEN": "OFF", "USE_HEXAGON": "OFF",
        "USE_MICRO": "OFF", "USE_RPC": "OFF", "USE_PROFILER": "ON", "USE_GRAPH_EXECUTOR": "ON",
        "USE_RELAY_DEBUG": "OFF", "USE_OPENMP": "OFF", "USE_BLAS": "numpy",
        "USE_DNNL": _onoff(dnnl), "USE_LIBBACKTRACE": "OFF", "BUILD_STATIC_RUNTIME": "OFF",
        "INSTALL_DEV": "OFF", "HIDE_PRIVATE_SYMBOLS": "OFF", "TVM_CXX_COMPILER_PATH": "",
        "CMAKE_BUILD_TYPE": "Release", "DMLC_USE_LOGGING_LIBRARY": "OFF",
        "TVM_DEBUG_WITH_ABI_CHANGE": "OFF", "TVM_LOG_BEFORE_THROW": "OFF",
        "PYTHON_VERSION": platform.python_version(), "PLATFORM": sys.platform,
    }
    return info


def describe() -> None:
    """Print ``libinfo()``, one option a line."""
    info = libinfo()
    print("Python Environment")
    print(f"  Python: {sys.version.split()[0]} on {platform.platform()}")
    print("CMake Options:")
    width = max(len(k) for k in info)
    for k, v in sorted(info.items()):
        print(f"  {k.ljust(width)} = {v}")


def enabled(target) -> bool:
    """Whether code for ``target`` (a kind name such as "llvm", "cuda") can be built and run
    here: the host CPU (llvm) only."""
    kind = str(getattr(getattr(target, "kind", None), "name", target) or "").split()[0]
    return kind in ("llvm", "cpu") and libinfo()["USE_LLVM"] == "ON"

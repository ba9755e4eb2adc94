"""``tvm.testing.env``: capability probes for gating tests (``has_cuda()``, ``has_llvm()``,
``has_cpu_feature("avx2")``, ...). minitvm compiles for the CPU through llvmlite only, so the
device and GPU-library probes answer False and the CPU probes ask the host."""

from __future__ import annotations

import functools
import platform

__all__ = ["has_cuda", "has_rocm", "has_vulkan", "has_metal", "has_opencl", "has_nvptx",
           "has_llvm", "has_gpu", "has_multi_gpu", "has_cudnn", "has_cublas", "has_nccl",
           "has_hipblas", "has_cutlass", "has_rpc", "has_nnapi", "has_openclml", "has_mrvl",
           "has_nvshmem", "has_cuda_compute", "has_nvcc_version", "has_llvm_min_version",
           "has_tensorcore", "has_matrixcore", "has_cudagraph", "has_hexagon",
           "has_hexagon_toolchain", "has_cpu_feature", "has_arm_dot", "has_arm_fp16",
           "has_aarch64_sve", "has_aarch64_sme", "has_x86_vnni", "has_x86_avx512",
           "has_x86_amx", "is_x86", "is_aarch64"]


def _absent(what: str):
    """A probe for something minitvm has no back end or library for: always False."""

    def probe(*_args, **_kwargs) -> bool:
        return False

    probe.__doc__ = f"Whether {what} is usable: never in minitvm (CPU-only, through llvmlite)."
    return probe


has_cuda = _absent("a CUDA device")
has_rocm = _absent("a ROCm device")
has_vulkan = _absent("a Vulkan device")
has_metal = _absent("a Metal device")
has_opencl = _absent("an OpenCL device")
has_nvptx = _absent("the NVPTX back end")
has_gpu = _absent("any GPU")
has_multi_gpu = _absent("several GPUs")
has_cudnn = _absent("cuDNN")
has_cublas = _absent("cuBLAS")
has_nccl = _absent("NCCL")
has_hipblas = _absent("hipBLAS")
has_cutlass = _absent("CUTLASS")
has_rpc = _absent("RPC")
has_nnapi = _absent("NNAPI")
has_openclml = _absent("OpenCLML")
has_mrvl = _absent("the Marvell back end")
has_nvshmem = _absent("NVSHMEM")
has_cuda_compute = _absent("a CUDA compute capability")
has_nvcc_version = _absent("nvcc")
has_tensorcore = _absent("Tensor Cores")
has_matrixcore = _absent("Matrix Cores")
has_cudagraph = _absent("CUDA graphs")
has_hexagon = _absent("Hexagon")
has_hexagon_toolchain = _absent("the Hexagon toolchain")


@functools.cache
def _llvm_major() -> int:
    try:
        from llvmlite import binding

        return int(binding.llvm_version_info[0])
    except Exception:  # noqa: BLE001  (no usable llvmlite: no LLVM)
        return 0


def has_llvm() -> bool:
    """Whether the LLVM back end (llvmlite) is usable."""
    return _llvm_major() > 0


def has_llvm_min_version(major: int) -> bool:
    """Whether LLVM is usable and at least version ``major``."""
    return _llvm_major() >= major


@functools.cache
def _host_features() -> frozenset[str]:
    try:
        from llvmlite import binding

        flat = binding.get_host_cpu_features().flatten()
    except Exception:  # noqa: BLE001  (feature query unavailable: report none)
        return frozenset()
    return frozenset(f[1:] for f in flat.split(",") if f.startswith("+"))


def has_cpu_feature(features) -> bool:
    """Whether the host CPU has every feature named (LLVM names: "avx2", "avx512f", ...)."""
    names = [features] if isinstance(features, str) else list(features)
    host = _host_features()
    return all(n in host for n in names)


def is_x86() -> bool:
    return platform.machine().lower() in ("x86_64", "amd64", "i386", "i686")


def is_aarch64() -> bool:
    return platform.machine().lower() in ("aarch64", "arm64")


def has_arm_dot() -> bool:
    return is_aarch64() and has_cpu_feature("dotprod")


def has_arm_fp16() -> bool:
    return is_aarch64() and has_cpu_feature("fullfp16")


def has_aarch64_sve() -> bool:
    return is_aarch64() and has_cpu_feature("sve")


def has_aarch64_sme() -> bool:
    return is_aarch64() and has_cpu_feature("sme")


def has_x86_vnni() -> bool:
    return is_x86() and (has_cpu_feature("avx512vnni") or has_cpu_feature("avxvnni"))


def has_x86_avx512() -> bool:
    return is_x86() and has_cpu_feature(["avx512f", "avx512bw", "avx512dq", "avx512vl"])


def has_x86_amx() -> bool:
    return is_x86() and has_cpu_feature("amx-int8")

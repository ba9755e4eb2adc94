"""A pytest plugin (and importable module) that makes llvmlite report an AVX2-only Haswell as
the host: every AVX-512 feature off, CPU name ``haswell``. The schedules then choose their AVX2
tiles and LLVM emits AVX2 code, so an AVX-512 machine checks the AVX2 paths::

    PYTHONPATH=scripts MINITVM_CACHE_DIR=/tmp/avx2-cache \\
        python -m pytest -p pretend_avx2 -n 2 tests/schedule tests/topi

Use its own cache directory: kernels cached for the real CPU are keyed by it, but a separate
directory keeps the two apart for inspection.
"""

import llvmlite.binding as llvm

_real_features = llvm.get_host_cpu_features
_OFF = ("amx-tile", "amx-int8", "amx-bf16", "avxvnni", "evex512")


def _haswell_features():
    features = _real_features()
    for name in list(features.keys()):
        if name.startswith("avx512") or name in _OFF:
            features[name] = False
    return features


llvm.get_host_cpu_features = _haswell_features
llvm.get_host_cpu_name = lambda: "haswell"

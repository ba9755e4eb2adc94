"""``tvm.contrib.cc``: build shared libraries, static libraries and executables with the system
C/C++ compiler (``$CXX``, else ``g++`` / ``c++`` / ``clang++`` / ``gcc`` / ``cc`` on the PATH).
Without one, each call raises a ``RuntimeError`` that says so."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

__all__ = ["get_cc", "create_shared", "create_staticlib", "create_executable",
           "cross_compiler"]


def get_cc() -> str | None:
    """The path of the C++ compiler to use, or None when the machine has none."""
    env = os.environ.get("CXX")
    if env:
        return shutil.which(env) or env
    for name in ("g++", "c++", "clang++", "gcc", "cc", "clang"):
        path = shutil.which(name)
        if path:
            return path
    return None


def _compiler(cc: str | None) -> str:
    cc = cc or get_cc()
    if cc is None or shutil.which(cc) is None:
        raise RuntimeError(f"tvm.contrib.cc: no C/C++ compiler found (looked for $CXX, g++, c++, "
                           f"clang++, gcc, cc{'' if cc is None else ', ' + repr(cc)}); install "
                           "one to build native libraries")
    return cc


def _as_list(x) -> list[str]:
    if x is None:
        return []
    return [x] if isinstance(x, str) else [str(v) for v in x]


def _run(cmd: list[str], cwd, env_extra: dict | None, what: str) -> None:
    env = dict(os.environ, **(env_extra or {}))
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{what} failed (exit {proc.returncode}):\n{' '.join(cmd)}\n"
                           f"{proc.stdout}{proc.stderr}")


def create_shared(output: str, objects, options=None, cc: str | None = None, cwd=None,
                  ccache_env: dict | None = None) -> None:
    """Link (and compile, for sources) ``objects`` into the shared library ``output``."""
    cmd = [_compiler(cc), "-shared", "-fPIC"]
    if sys.platform == "darwin":
        cmd += ["-undefined", "dynamic_lookup"]
    cmd += ["-o", str(output), *_as_list(objects), *_as_list(options)]
    _run(cmd, cwd, ccache_env, "create_shared")


create_shared.output_format = "so" if sys.platform != "win32" else "dll"


def create_executable(output: str, objects, options=None, cc: str | None = None, cwd=None,
                      ccache_env: dict | None = None) -> None:
    """Compile and link ``objects`` into the executable ``output``."""
    cmd = [_compiler(cc), "-o", str(output), *_as_list(objects), *_as_list(options)]
    _run(cmd, cwd, ccache_env, "create_executable")


create_executable.output_format = "" if sys.platform != "win32" else "exe"


def create_staticlib(output: str, inputs, ar: str | None = None) -> None:
    """Archive object files ``inputs`` into the static library ``output``."""
    ar = ar or os.environ.get("AR") or shutil.which("ar")
    if not ar:
        raise RuntimeError("tvm.contrib.cc.create_staticlib: no archiver ('ar') found")
    _run([ar, "crs", str(output), *_as_list(inputs)], None, None, "create_staticlib")


create_staticlib.output_format = "a"


def cross_compiler(compile_func, options=None, output_format: str | None = None,
                   get_target_triple=None, add_files=None):
    """``compile_func`` (a compiler path or a function like ``create_shared``) with ``options``
    and ``add_files`` always appended."""
    base_options = _as_list(options)
    extra_files = _as_list(add_files)
    if isinstance(compile_func, str):
        compiler = compile_func

        def compile_func(output, objects, options=None, cc=None, cwd=None, ccache_env=None):
            create_shared(output, objects, options, cc=compiler, cwd=cwd, ccache_env=ccache_env)

        fmt = "so"
    else:
        fmt = getattr(compile_func, "output_format", "so")

    def _fcompile(outputs, objects, options=None, **kwargs):
        all_options = base_options + _as_list(options)
        return compile_func(outputs, _as_list(objects) + extra_files, options=all_options,
                            **kwargs)

    _fcompile.output_format = output_format or fmt
    _fcompile.get_target_triple = get_target_triple
    return _fcompile

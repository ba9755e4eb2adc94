"""``autotvm.callback``: the two callbacks the tutorials pass to ``Tuner.tune``.

``log_to_file(path)`` makes the tuner append every measured candidate to ``path`` (minitvm's
JSON-lines records, which ``autotvm.apply_history_best(path)`` reads); ``progress_bar`` turns
on minitvm's progress display (tqdm when installed, else a line per improvement). Other
callables are not supported: minitvm's tuner does not hand TVM's MeasureInput/MeasureResult
pairs to user callbacks.
"""

from __future__ import annotations

import os


class LogToFile:
    def __init__(self, path: str | os.PathLike):
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"autotvm.callback.log_to_file takes a file path, got "
                            f"{type(path).__name__} (file objects are not supported)")
        self.path = os.fspath(path)

    def __repr__(self) -> str:
        return f"log_to_file({self.path!r})"


class ProgressBar:
    def __init__(self, total: int, prefix: str = "", si_prefix: str = "G"):
        self.total, self.prefix = total, prefix

    def __repr__(self) -> str:
        return f"progress_bar({self.total}, prefix={self.prefix!r})"


def log_to_file(file_out, protocol: str = "json") -> LogToFile:
    if protocol != "json":
        raise ValueError(f"autotvm.callback.log_to_file: only protocol='json' is supported, "
                         f"got {protocol!r}")
    return LogToFile(file_out)


def progress_bar(total: int, prefix: str = "", si_prefix: str = "G") -> ProgressBar:
    return ProgressBar(total, prefix, si_prefix)

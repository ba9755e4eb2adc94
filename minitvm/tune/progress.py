"""Progress of a tuning run: a bar (tqdm when installed) or plain lines, best-so-far per task."""

from __future__ import annotations

import sys


def _ms(cost: float | None) -> str:
    return "-" if cost is None or cost == float("inf") else f"{cost * 1e3:.4f} ms"


class Progress:
    """``start(task, total)``, ``update(best, default, result)`` per candidate, ``finish()``.

    ``mode``: "auto" (tqdm if installed, else "lines"), "bar", "lines" (a line per candidate
    that improves the best, fails, or is every 10th; ``verbose=True``: every one) or "none".
    """

    def __init__(self, ntasks: int, mode: str = "auto", stream=None, verbose: bool = False):
        if mode not in ("auto", "bar", "lines", "none"):
            raise ValueError(f"progress: mode must be auto, bar, lines or none, got {mode!r}")
        self.ntasks = ntasks
        self.verbose = verbose
        self.stream = stream if stream is not None else sys.stderr
        self._tqdm = None
        if mode in ("auto", "bar"):
            try:
                from tqdm import tqdm

                self._tqdm = tqdm
            except ImportError:
                if mode == "bar":
                    mode = "lines"
        self.mode = "bar" if self._tqdm is not None and mode in ("auto", "bar") else \
            ("lines" if mode == "auto" else mode)
        self._bar = None
        self._index = 0
        self._done = 0
        self._total = 0
        self._name = ""
        self._shown_best: float | None = None

    def start(self, task, total: int) -> None:
        self._index += 1
        self._done, self._total, self._name = 0, total, task.name
        self._shown_best = None
        if self.mode == "bar":
            self._bar = self._tqdm(total=total, desc=f"[{self._index}/{self.ntasks}] {task.name}",
                                   file=self.stream, leave=True)
        elif self.mode == "lines":
            print(f"[task {self._index}/{self.ntasks}] {task.name}: up to {total} candidates "
                  f"(space of {task.space.size()})", file=self.stream, flush=True)

    def update(self, best: float | None, default: float | None, result) -> None:
        self._done += 1
        if self.mode == "bar" and self._bar is not None:
            self._bar.set_postfix_str(f"best {_ms(best)} default {_ms(default)}")
            self._bar.update(1)
        elif self.mode == "lines":
            improved = best is not None and (self._shown_best is None or best < self._shown_best)
            if not (self.verbose or improved or not result.ok or self._done % 10 == 0
                    or self._done == self._total):
                return
            self._shown_best = best
            what = _ms(min(result.costs)) if result.ok else f"failed ({result.error})"
            print(f"  {self._name} {self._done}/{self._total}: {what}; best {_ms(best)} "
                  f"(default {_ms(default)})", file=self.stream, flush=True)

    def finish(self, best: float | None, default: float | None) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        if self.mode != "none":
            speed = f", {default / best:.2f}x" if best and default and default != float("inf") \
                else ""
            print(f"[task {self._index}/{self.ntasks}] {self._name}: best {_ms(best)} "
                  f"(default {_ms(default)}{speed})", file=self.stream, flush=True)

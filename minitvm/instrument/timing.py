"""PassTimingInstrument: a per-thread tree of pass timings (and statistics), rendered as text."""

from __future__ import annotations

import threading
import time
import warnings

from ..transform.stats import add_stat_sink, remove_stat_sink
from .base import PassInstrument


class _Entry:
    __slots__ = ("name", "start", "duration", "children", "stats")

    def __init__(self, name: str):
        self.name = name
        self.start = time.perf_counter()
        self.duration = 0.0
        self.children: list[_Entry] = []
        self.stats: dict[str, int] = {}


class _Profile(threading.local):
    def __init__(self):
        self.root = _Entry("root")
        self.stack = [self.root]


_PROFILE = _Profile()


def _record_stat(name: str, count: int) -> None:
    top = _PROFILE.stack[-1]
    top.stats[name] = top.stats.get(name, 0) + count


class PassTimingInstrument(PassInstrument):
    """Times every pass; ``PassTimingInstrument.render()`` reports them (call it inside the
    context: leaving the context clears the profile, as in TVM).

    Nested passes are indented; each line reads ``name: total [self] (% of all; % of parent)``
    followed by the pass's statistics, and a per-pass summary follows.
    """

    def enter_pass_ctx(self) -> None:
        add_stat_sink(_record_stat)

    def exit_pass_ctx(self) -> None:
        remove_stat_sink(_record_stat)
        _PROFILE.root = _Entry("root")
        _PROFILE.stack = [_PROFILE.root]

    def run_before_pass(self, mod, info) -> None:
        e = _Entry(info.name)
        _PROFILE.stack[-1].children.append(e)
        _PROFILE.stack.append(e)

    def run_after_pass(self, mod, info) -> None:
        stack = _PROFILE.stack
        if len(stack) > 1:
            e = stack.pop()
            e.duration = time.perf_counter() - e.start

    @staticmethod
    def render() -> str:
        """The timing report of the passes run so far in this thread's context."""
        prof = _PROFILE
        if len(prof.stack) > 1:
            raise RuntimeError("cannot print pass profile while still in a pass!")
        root = prof.root
        if not root.children:
            warnings.warn("no passes have been profiled, did you enable pass profiling?")
            return ""
        total = sum(c.duration for c in root.children) or 1e-12
        lines: list[str] = []
        totals: dict[str, list] = {}
        stack = [(c, 0, total) for c in reversed(root.children)]
        while stack:
            e, depth, parent = stack.pop()
            us = e.duration * 1e6
            self_us = us - sum(c.duration for c in e.children) * 1e6
            indent = "\t" * depth
            line = (f"{indent}{e.name}: {us:.0f}us [{self_us:.0f}us] "
                    f"({e.duration / total * 100:.2f}%; {e.duration / (parent or 1e-12) * 100:.2f}%)")
            if e.stats:
                line += " {" + ", ".join(f"{k}: {v}" for k, v in e.stats.items()) + "}"
            lines.append(line)
            t = totals.setdefault(e.name, [0, 0.0, 0.0, {}])
            t[0] += 1
            t[1] += e.duration
            t[2] += max(self_us, 0.0) / 1e6
            for k, v in e.stats.items():
                t[3][k] = t[3].get(k, 0) + v
            stack.extend((c, depth + 1, e.duration) for c in reversed(e.children))
        lines.append("Per-pass totals (runs, total, self):")
        for name, (runs, dur, self_dur, stats) in sorted(totals.items(),
                                                         key=lambda kv: -kv[1][2]):
            line = f"\t{name}: {runs} runs, {dur * 1e6:.0f}us, self {self_dur * 1e6:.0f}us"
            if stats:
                line += " {" + ", ".join(f"{k}: {v}" for k, v in stats.items()) + "}"
            lines.append(line)
        return "\n".join(lines) + "\n"

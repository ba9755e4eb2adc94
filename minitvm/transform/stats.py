"""Pass statistics: a pass counts what it did (``record_stat("folded constants", 12)``).

Counts go to whoever listens (PassTimingInstrument shows them in its report); with nobody
listening, ``record_stat`` returns at once. Call it once per pass run with a total, not per node.
"""

from __future__ import annotations

import threading


class _Sinks(threading.local):
    def __init__(self):
        self.sinks: list = []


_SINKS = _Sinks()


def record_stat(name: str, count: int = 1) -> None:
    """Add ``count`` to the statistic ``name`` of the pass that is running."""
    sinks = _SINKS.sinks
    if sinks:
        for sink in sinks:
            sink(name, count)


def add_stat_sink(sink) -> None:
    _SINKS.sinks.append(sink)


def remove_stat_sink(sink) -> None:
    try:
        _SINKS.sinks.remove(sink)
    except ValueError:
        pass

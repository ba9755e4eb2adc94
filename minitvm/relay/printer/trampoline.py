"""Run recursive-looking generator code on an explicit stack (no Python recursion).

A step is a generator; it ``yield``s a sub-step generator to "call" it and receives the sub-step's
return value as the result of the ``yield``. The printer and the parser are written this way, so a
program nested 100,000 levels deep needs no deeper Python stack than a flat one.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any


def run(step: Generator) -> Any:
    """Drive ``step`` and every sub-step it yields to completion; return its value."""
    stack = [step]
    value = None
    while True:
        try:
            sub = stack[-1].send(value)
        except StopIteration as stop:
            stack.pop()
            if not stack:
                return stop.value
            value = stop.value
            continue
        stack.append(sub)
        value = None

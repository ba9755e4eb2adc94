"""The error for the parts of TVM's tuning APIs that minitvm deliberately leaves out: it says
what differs and what to use instead, rather than an AttributeError deep in a script."""

from __future__ import annotations


class TVMDifferenceError(NotImplementedError):
    """A TVM name that minitvm does not provide on purpose; the message names the replacement."""


def differs(name: str, why: str, instead: str) -> TVMDifferenceError:
    return TVMDifferenceError(f"{name}: minitvm differs from TVM here: {why}. Use {instead}.")


def missing_attribute(module: str, name: str, known: dict[str, tuple[str, str]]):
    """A module ``__getattr__`` body: a known left-out name raises its difference, any other
    name the usual AttributeError."""
    if name in known:
        why, instead = known[name]
        raise differs(f"{module}.{name}", why, instead)
    raise AttributeError(f"module {module!r} has no attribute {name!r}")

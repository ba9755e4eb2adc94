"""``relay.debug``: the default action of the ``debug`` op — stop in the Python debugger with
the value in hand (TVM's ``_debugger_init`` / ``_debug``)."""

from __future__ import annotations

__all__ = ["_debugger_init", "_debug"]


def _debugger_init(expr, stack) -> None:
    """Enter ``pdb`` with ``expr`` (the value) and ``stack`` (the evaluation context) in scope."""
    import pdb

    print("Relay debugger: the value is in `expr`, the evaluation stack in `stack`")
    pdb.set_trace()
    _ = (expr, stack)  # kept alive (and visible) in the debugger's frame


def _debug(*args) -> None:
    """The ``debug`` op's default function."""
    _debugger_init(args[0] if args else None, list(args[1:]))

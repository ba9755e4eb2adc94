"""Printing instruments: PrintBeforeAll, PrintAfterAll, PassPrintingInstrument, PrintAfterChange."""

from __future__ import annotations

import difflib
import sys

from .base import PassInstrument


class PrintBeforeAll(PassInstrument):
    """Print the name of every pass and the IR before it runs (stdout)."""

    def run_before_pass(self, mod, info) -> None:
        print(f"Before Running Pass: {info}")
        print(mod)


class PrintAfterAll(PassInstrument):
    """Print the name of every pass and the IR after it ran (stdout)."""

    def run_after_pass(self, mod, info) -> None:
        print(f"After Running Pass: {info}")
        print(mod)


class PassPrintingInstrument(PassInstrument):
    """Print the IR before / after the passes named in the two lists."""

    def __init__(self, print_before_pass_names=(), print_after_pass_names=()):
        super().__init__()
        self.print_before_pass_names = list(print_before_pass_names or ())
        self.print_after_pass_names = list(print_after_pass_names or ())

    def run_before_pass(self, mod, info) -> None:
        if info.name in self.print_before_pass_names:
            print(f"Print IR before: {info.name}\n{mod}\n\n")

    def run_after_pass(self, mod, info) -> None:
        if info.name in self.print_after_pass_names:
            print(f"Print IR after: {info.name}\n{mod}\n\n")


class PrintAfterChange(PassInstrument):
    """Print a unified diff of the IR after each pass that changed it (nothing otherwise).

    A pass nested in another (the InferType a function pass runs) counts as part of it; the
    text of a module is taken only when a pass returned a different module object.
    """

    def __init__(self, file=None, context_lines: int = 3):
        super().__init__()
        self.file = file
        self.context_lines = context_lines
        self.changed: list[str] = []  # names of the passes that changed the IR, in order
        self._last_mod = None
        self._last_text: str | None = None

    def enter_pass_ctx(self) -> None:
        self._last_mod = None
        self._last_text = None

    def run_before_pass(self, mod, info) -> None:
        from ..transform.instrumented import running_passes

        if len(running_passes()) == 1 and mod is not self._last_mod:  # a new pipeline input
            self._last_mod, self._last_text = mod, str(mod)

    def run_after_pass(self, mod, info) -> None:
        from ..transform.instrumented import is_outermost_transform

        last = self._last_mod
        if not is_outermost_transform() or mod is last or \
                last is not None and mod.functions == last.functions:
            return
        text = str(mod)
        self._last_mod = mod
        if text == self._last_text:
            return
        diff = difflib.unified_diff(
            (self._last_text or "").splitlines(keepends=True), text.splitlines(keepends=True),
            fromfile=f"before {info.name}", tofile=f"after {info.name}", n=self.context_lines)
        self._last_text = text
        self.changed.append(info.name)
        out = self.file or sys.stdout
        out.write(f"*** IR changed by pass {info.name} ***\n")
        out.write("".join(diff))
        if not text.endswith("\n"):
            out.write("\n")

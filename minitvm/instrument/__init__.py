"""tvm.instrument: hooks around pass execution (timing, printing, numerical bisection)."""

from .base import PassInstrument, pass_instrument
from .bisect import NumericalBisect
from .printing import PassPrintingInstrument, PrintAfterAll, PrintAfterChange, PrintBeforeAll
from .timing import PassTimingInstrument

__all__ = [
    "PassInstrument", "pass_instrument", "PassTimingInstrument", "PrintBeforeAll",
    "PrintAfterAll", "PassPrintingInstrument", "PrintAfterChange", "NumericalBisect",
]

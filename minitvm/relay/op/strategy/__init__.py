"""``relay.op.strategy``: operator strategies per target (``generic``, and ``x86`` for the CPU,
which minitvm serves with the same generic implementations)."""

from . import generic  # noqa: F401
from .generic import *  # noqa: F401,F403
from . import x86  # noqa: F401

"""relax.testing: the Relax tutorial flow (seed 003) the ``minitvm`` command runs."""

from .tutorial import run_tutorial  # noqa: F401

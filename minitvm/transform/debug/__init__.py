"""Pipeline debugging tools: verify-each, IR dumps, crash reproducers."""

from .verify import WellFormedError, well_formed_problems

__all__ = ["WellFormedError", "well_formed_problems"]

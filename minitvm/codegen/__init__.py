"""Placeholder package; filled in by its owner."""

"""The Relay standard library files (``prelude.rly``, ``nat.rly``, ``gradient.rly``), read by
import_from_std."""

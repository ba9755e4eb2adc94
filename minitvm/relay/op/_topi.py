"""Attach the shared operator library's computes (``minitvm.topi``) to Relay's operators.

Relay lowers a primitive function by calling each op's ``FTECompute``; the definitions live in
topi so Relax's legalization uses the same ones. A user's ``register_compute`` (at a higher
level) still overrides these.
"""

from __future__ import annotations

from ... import topi
from .op import register_compute

for _name, _fn in topi.registered_computes().items():
    register_compute(_name, _fn)

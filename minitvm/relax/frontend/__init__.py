"""tvm.relax.frontend: front ends that build Relax programs (``relax.frontend.nn``)."""

from . import nn

"""tvm.driver: TVM's drivers; ``tvmc``, the simplified Python API (load, tune, compile, run)."""

from . import tvmc  # noqa: F401

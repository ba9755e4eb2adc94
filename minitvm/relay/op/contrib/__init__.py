"""tvm.relay.op.contrib: BYOC op support per external compiler (pattern tables, predicates)."""

from .register import get_pattern_table, register_pattern_table

__all__ = ["get_pattern_table", "register_pattern_table", "dnnl"]


def __getattr__(name):
    if name == "dnnl":  # imported on first use: registers the target.dnnl predicates
        import importlib

        return importlib.import_module(".dnnl", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

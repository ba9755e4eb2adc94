"""Helpers of the codegen tests: build a TE graph into a kernel."""

from minitvm import codegen, te


def build_te(args, name="main"):
    """Compile the TE graph whose arguments are ``args`` and return its kernel."""
    return codegen.build(te.create_prim_func(args), name=name)[name]

"""TVM's error classes (``tvm.error``): the names TVM code raises and catches.

``TVMError`` subclasses RuntimeError as in TVM; the op errors carry TVM's hierarchy
(``OpError`` and its attribute/implementation kinds). minitvm's own checks raise the built-in
classes (ValueError, TypeError) that name what is wrong.
"""

from __future__ import annotations

__all__ = ["TVMError", "InternalError", "DiagnosticError", "RPCError", "RPCSessionTimeoutError",
           "OpError", "OpNotImplemented", "OpAttributeRequired", "OpAttributeInvalid",
           "OpAttributeUnImplemented", "register_error", "TVMDifferenceError", "differs",
           "missing_attribute"]

_REGISTRY: dict[str, type] = {}


def register_error(func_name=None, cls=None):
    """Register an error class under a name (TVM's decorator; the class is returned)."""
    if isinstance(func_name, type) and cls is None:
        cls, func_name = func_name, func_name.__name__

    def register(c: type) -> type:
        _REGISTRY[func_name or c.__name__] = c
        return c

    return register(cls) if cls is not None else register


@register_error
class TVMError(RuntimeError):
    """Base error of TVM."""


@register_error
class InternalError(TVMError):
    """An internal invariant did not hold."""


@register_error
class DiagnosticError(TVMError):
    """Errors were reported by the diagnostic context (parser, type checker)."""


@register_error
class RPCError(TVMError):
    """An error from the RPC layer."""


@register_error
class RPCSessionTimeoutError(RPCError, TimeoutError):
    """An RPC session timed out."""


@register_error
class OpError(TVMError):
    """Base class of operator errors in frontends."""


@register_error
class OpNotImplemented(OpError, NotImplementedError):
    """An operator is not implemented."""


@register_error
class OpAttributeRequired(OpError, AttributeError):
    """A required attribute of an operator is missing."""


@register_error
class OpAttributeInvalid(OpError, AttributeError):
    """An operator attribute has an invalid value."""


@register_error
class OpAttributeUnImplemented(OpError, NotImplementedError):
    """An operator attribute is not supported."""


class TVMDifferenceError(NotImplementedError):
    """A TVM name or target that minitvm does not provide on purpose (CUDA, RPC, AutoTVM's
    schedule templates...); the message says what differs and names the replacement."""


def differs(name: str, why: str, instead: str) -> TVMDifferenceError:
    return TVMDifferenceError(f"{name}: minitvm differs from TVM here: {why}. Use {instead}.")


def missing_attribute(module: str, name: str, known: dict[str, tuple[str, str]]):
    """A module ``__getattr__`` body: a known left-out name raises its difference, any other
    name the usual AttributeError."""
    if name in known:
        why, instead = known[name]
        raise differs(f"{module}.{name}", why, instead)
    raise AttributeError(f"module {module!r} has no attribute {name!r}")

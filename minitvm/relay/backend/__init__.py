"""Relay back ends: the debug interpreter and the executors built on compiled code."""

from . import interpreter
from .interpreter import ConstructorValue, Interpreter, RefValue
from .build_config import Executor, Runtime
from ...target.compilation_config import CompilationConfig  # noqa: F401,E402  (planning's config)

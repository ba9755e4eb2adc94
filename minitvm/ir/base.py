"""``tvm.ir.base``: the node base, source locations, JSON serialization and structural
comparison, under TVM's module path."""

from ..runtime.object import Object
from .node import Node, SequentialSpan, SourceName, Span
from .serialization import load_json, save_json
from .structural import assert_structural_equal, structural_equal, structural_hash

__all__ = ["Object", "Node", "SourceName", "Span", "SequentialSpan", "load_json", "save_json",
           "structural_equal", "assert_structural_equal", "structural_hash"]

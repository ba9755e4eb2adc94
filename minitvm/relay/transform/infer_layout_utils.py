"""``tvm.relay.transform.infer_layout_utils``: what an ``FInferCorrectLayout`` rule returns."""

from __future__ import annotations


class InferCorrectLayoutOutput(tuple):
    """(input layouts, output layouts, new attrs) of a layout rule, as TVM's Python API builds
    it; unpacks like the tuples the built-in rules return."""

    __slots__ = ()

    def __new__(cls, input_layouts, output_layouts, new_attrs):
        return super().__new__(cls, (list(input_layouts), list(output_layouts), new_attrs))

    @property
    def input_layouts(self) -> list:
        return self[0]

    @property
    def output_layouts(self) -> list:
        return self[1]

    @property
    def new_attrs(self):
        return self[2]

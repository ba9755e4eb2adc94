"""The dialect-neutral pieces of the visualizer: a graph of VizNodes and VizEdges, the parser
and plotter interfaces (as TVM's ``tvm.contrib.relay_viz.interface``)."""

from __future__ import annotations

import abc
from dataclasses import dataclass, field

__all__ = ["VizNode", "VizEdge", "VizGraph", "VizParser", "Plotter"]


@dataclass(frozen=True)
class VizNode:
    """One node: a stable id, its kind (``Call``, ``Var``, ``Constant``, ...), a short label
    (the op name or variable) and a detail line (attributes, type)."""

    node_id: str
    type_name: str
    detail: str = ""
    label: str = ""


@dataclass(frozen=True)
class VizEdge:
    start: str
    end: str


@dataclass
class VizGraph:
    """The nodes and edges of one function (``name``); nodes are in topological order."""

    name: str
    nodes: list[VizNode] = field(default_factory=list)
    edges: list[VizEdge] = field(default_factory=list)

    def node(self, node: VizNode) -> None:
        self.nodes.append(node)

    def edge(self, edge: VizEdge) -> None:
        self.edges.append(edge)


class VizParser(abc.ABC):
    """Turns one IR function into a VizGraph (the Relay parser is supplied by the relay layer)."""

    @abc.abstractmethod
    def get_graph(self, name: str, func, relay_param: dict | None) -> VizGraph:
        ...


class Plotter(abc.ABC):
    """Draws VizGraphs: ``create_graph(name)`` per function, then ``render(filename)``."""

    @abc.abstractmethod
    def add_graph(self, graph: VizGraph) -> None:
        ...

    @abc.abstractmethod
    def render(self, filename: str | None = None) -> str:
        ...

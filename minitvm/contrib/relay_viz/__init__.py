"""``tvm.contrib.relay_viz``: draw a Relay module's dataflow graph.

    viz = relay_viz.RelayVisualizer(mod, relay_param=params)   # terminal plotter by default
    viz.render()

``plotter=SvgPlotter()`` writes a self-contained HTML/SVG page instead. The Relay parser (IR ->
VizGraph) is supplied by ``minitvm.relay`` on import (``set_default_parser``), so this package
depends on no dialect.
"""

from __future__ import annotations

from .interface import Plotter, VizEdge, VizGraph, VizNode, VizParser
from .svg import SvgPlotter
from .terminal import TermPlotter

__all__ = ["RelayVisualizer", "VizNode", "VizEdge", "VizGraph", "VizParser", "Plotter",
           "TermPlotter", "SvgPlotter", "set_default_parser"]

_DEFAULT_PARSER = None


def set_default_parser(factory) -> None:
    """Install the factory of the default parser (the relay layer does this on import)."""
    global _DEFAULT_PARSER
    _DEFAULT_PARSER = factory


class RelayVisualizer:
    """Parses every function of ``relay_mod`` into a VizGraph and hands it to the plotter."""

    def __init__(self, relay_mod, relay_param: dict | None = None, plotter: Plotter | None = None,
                 parser: VizParser | None = None):
        if parser is None:
            import minitvm  # noqa: F401  (loading the package installs the Relay parser)

            if _DEFAULT_PARSER is None:
                raise RuntimeError("no Relay visualization parser is registered")
            parser = _DEFAULT_PARSER()
        self.plotter = plotter if plotter is not None else TermPlotter()
        self.graphs: list[VizGraph] = []
        functions = sorted(relay_mod.functions.items(), key=lambda kv: kv[0].name_hint != "main")
        for gv, func in functions:
            graph = parser.get_graph(gv.name_hint, func, relay_param)
            self.graphs.append(graph)
            self.plotter.add_graph(graph)

    def render(self, filename: str | None = None) -> str:
        return self.plotter.render(filename)

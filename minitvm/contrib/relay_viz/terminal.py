"""Text rendering of dataflow graphs (TVM's ``relay_viz.terminal``): each function as a tree
from its output back to its inputs; a node reached twice is drawn once and referred to."""

from __future__ import annotations

from .interface import Plotter, VizGraph

__all__ = ["TermPlotter", "render_tree"]


def render_tree(graph: VizGraph) -> str:
    """The graph as an indented tree (iterative: deep graphs print without recursion)."""
    by_id = {n.node_id: n for n in graph.nodes}
    inputs: dict[str, list[str]] = {n.node_id: [] for n in graph.nodes}
    has_user = set()
    for e in graph.edges:
        inputs[e.end].append(e.start)
        has_user.add(e.start)
    roots = [n.node_id for n in graph.nodes if n.node_id not in has_user] or \
        [graph.nodes[-1].node_id]
    lines = [f"@{graph.name}"]
    shown: set[str] = set()
    # stack of (node id, prefix for its line, prefix for its children, is last sibling)
    stack = [(r, "", "", True) for r in reversed(roots)]
    while stack:
        nid, head, cont, last = stack.pop()
        node = by_id[nid]
        branch = "`--" if last else "|--"
        text = f"{node.type_name} {node.label}".rstrip()
        if node.detail:
            text += f"  [{node.detail}]"
        if nid in shown and inputs[nid]:
            lines.append(f"{head}{branch}{text}  (#{nid}, shown above)")
            continue
        lines.append(f"{head}{branch}{text}  (#{nid})")
        shown.add(nid)
        kids = inputs[nid]
        child_prefix = cont + ("   " if last else "|  ")
        for k, kid in reversed(list(enumerate(kids))):
            stack.append((kid, child_prefix, child_prefix, k == len(kids) - 1))
    return "\n".join(lines)


class TermPlotter(Plotter):
    """Collects graphs and prints them as trees (``render()`` returns the text too)."""

    def __init__(self):
        self.graphs: list[VizGraph] = []

    def add_graph(self, graph: VizGraph) -> None:
        self.graphs.append(graph)

    def render(self, filename: str | None = None) -> str:
        text = "\n\n".join(render_tree(g) for g in self.graphs)
        if filename:
            with open(filename, "w") as f:
                f.write(text + "\n")
        else:
            print(text)
        return text

"""Self-contained SVG / HTML pictures of dataflow graphs, laid out in Python (no Graphviz).

Layout: nodes are ranked by longest path from the inputs (the graph's topological order makes
that one pass), ordered within a rank by a few barycenter sweeps to reduce crossings, and
edges are drawn as cubic curves. Hovering a node shows its detail (attributes, type).
"""

from __future__ import annotations

import html

from .interface import Plotter, VizGraph

__all__ = ["SvgPlotter", "layout", "graph_svg", "html_page"]

_ROW, _GAP, _H = 78, 26, 34
_COLORS = {"Var": "#d9f2d9", "Constant": "#eeeeee", "Tuple": "#fff2cc",
           "TupleGetItem": "#fff2cc", "Function": "#e6ccff"}


def _color(node) -> str:
    if node.type_name != "Call":
        return _COLORS.get(node.type_name, "#ffffff")
    op = node.label
    if "conv" in op or "dense" in op or "matmul" in op:
        return "#cfe2ff"
    if "pool" in op or op in ("sum", "mean", "max", "min"):
        return "#ffe0cc"
    if "norm" in op or "softmax" in op:
        return "#f8d7da"
    return "#ffffff"


def _width(node) -> int:
    return max(60, 8 * len(f"{node.label or node.type_name}") + 24)


def layout(graph: VizGraph) -> dict[str, tuple[float, float, float]]:
    """node id -> (x center, y top, width)."""
    preds: dict[str, list[str]] = {n.node_id: [] for n in graph.nodes}
    succs: dict[str, list[str]] = {n.node_id: [] for n in graph.nodes}
    for e in graph.edges:
        preds[e.end].append(e.start)
        succs[e.start].append(e.end)
    rank: dict[str, int] = {}
    for n in graph.nodes:  # topological order: inputs are ranked before their users
        rank[n.node_id] = 1 + max((rank[p] for p in preds[n.node_id] if p in rank), default=-1)
    rows: dict[int, list[str]] = {}
    for n in graph.nodes:
        rows.setdefault(rank[n.node_id], []).append(n.node_id)
    pos = {nid: float(i) for row in rows.values() for i, nid in enumerate(row)}
    for sweep in range(4):  # barycenter ordering, down then up
        order = sorted(rows) if sweep % 2 == 0 else sorted(rows, reverse=True)
        for r in order:
            nbrs = preds if sweep % 2 == 0 else succs

            def key(nid, nbrs=nbrs):
                ps = [pos[p] for p in nbrs[nid]]
                return sum(ps) / len(ps) if ps else pos[nid]

            rows[r].sort(key=key)
            for i, nid in enumerate(rows[r]):
                pos[nid] = float(i)
    widths = {n.node_id: _width(n) for n in graph.nodes}
    row_w = {r: sum(widths[n] for n in ids) + _GAP * (len(ids) - 1) for r, ids in rows.items()}
    total = max(row_w.values(), default=0)
    out = {}
    for r, ids in rows.items():
        x = (total - row_w[r]) / 2
        for nid in ids:
            out[nid] = (x + widths[nid] / 2, r * _ROW, widths[nid])
            x += widths[nid] + _GAP
    return out


def graph_svg(graph: VizGraph) -> str:
    """One graph as an ``<svg>`` element."""
    pos = layout(graph)
    width = max((x + w / 2 for x, _, w in pos.values()), default=100) + 20
    height = max((y for _, y, _ in pos.values()), default=0) + _H + 20
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" '
             f'height="{height:.0f}" viewBox="-10 -10 {width:.0f} {height:.0f}" '
             'font-family="monospace" font-size="12">',
             '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="6" '
             'markerHeight="6" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#555"/>'
             '</marker></defs>']
    for e in graph.edges:
        x1, y1, _ = pos[e.start]
        x2, y2, _ = pos[e.end]
        y1 += _H
        mid = (y1 + y2) / 2
        parts.append(f'<path d="M{x1:.1f},{y1:.1f} C{x1:.1f},{mid:.1f} {x2:.1f},{mid:.1f} '
                     f'{x2:.1f},{y2:.1f}" fill="none" stroke="#555" stroke-width="1.2" '
                     'marker-end="url(#arrow)"/>')
    for n in graph.nodes:
        x, y, w = pos[n.node_id]
        label = html.escape(n.label or n.type_name)
        tip = html.escape(f"{n.type_name} {n.label}\n{n.detail}".strip())
        parts.append(f'<g><title>{tip}</title><rect x="{x - w / 2:.1f}" y="{y:.1f}" '
                     f'width="{w:.1f}" height="{_H}" rx="6" fill="{_color(n)}" '
                     f'stroke="#333"/><text x="{x:.1f}" y="{y + _H / 2 + 4:.1f}" '
                     f'text-anchor="middle">{label}</text></g>')
    parts.append("</svg>")
    return "\n".join(parts)


def html_page(title: str, sections: list[tuple[str, VizGraph]]) -> str:
    """A self-contained HTML page showing each (heading, graph) side by side."""
    cols = "".join(
        f'<div class="col"><h2>{html.escape(h)}</h2><p>{len(g.nodes)} nodes, '
        f'{len(g.edges)} edges</p>{graph_svg(g)}</div>' for h, g in sections)
    return ("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>"
            f"{html.escape(title)}</title><style>body{{font-family:sans-serif;margin:16px}}"
            ".row{display:flex;gap:32px;align-items:flex-start}.col{overflow:auto}"
            "h2{font-size:16px}</style></head><body>"
            f"<h1>{html.escape(title)}</h1><div class=\"row\">{cols}</div></body></html>\n")


class SvgPlotter(Plotter):
    """Collects graphs; ``render(path)`` writes one HTML page (or an .svg of the first graph)."""

    def __init__(self, title: str = "dataflow graph"):
        self.title = title
        self.graphs: list[VizGraph] = []

    def add_graph(self, graph: VizGraph) -> None:
        self.graphs.append(graph)

    def render(self, filename: str | None = None) -> str:
        if filename and filename.endswith(".svg"):
            text = graph_svg(self.graphs[0])
        else:
            text = html_page(self.title, [(g.name, g) for g in self.graphs])
        if filename:
            with open(filename, "w") as f:
                f.write(text)
        return text

"""tvm.contrib.relay_viz on Relay: the VizGraph the Relay parser builds, the terminal and SVG
plotters, and a 100,000-node chain (no recursion)."""

from __future__ import annotations

import numpy as np

import minitvm as tvm
from minitvm import relay
from minitvm.contrib import relay_viz
from minitvm.contrib.relay_viz.svg import graph_svg, layout
from minitvm.contrib.relay_viz.terminal import TermPlotter


def small_module():
    x = relay.var("x", shape=(1, 2, 4, 4))
    w = relay.var("w", shape=(3, 2, 3, 3))
    c = relay.nn.conv2d(x, w, padding=(1, 1))
    y = relay.add(relay.nn.relu(c), c)  # c is shared: one node, two users
    return relay.transform.InferType()(tvm.IRModule.from_expr(relay.Function([x, w], y)))


def test_graph_nodes_and_edges():
    mod = small_module()
    viz = relay_viz.RelayVisualizer(mod, relay_param={"w": np.zeros((3, 2, 3, 3))},
                                    plotter=TermPlotter())
    (g,) = viz.graphs
    labels = [(n.type_name, n.label) for n in g.nodes]
    assert labels == [("Var", "x"), ("Var", "w"), ("Call", "nn.conv2d"), ("Call", "nn.relu"),
                      ("Call", "add")]
    ids = {n.label: n.node_id for n in g.nodes}
    edges = {(e.start, e.end) for e in g.edges}
    assert edges == {(ids["x"], ids["nn.conv2d"]), (ids["w"], ids["nn.conv2d"]),
                     (ids["nn.conv2d"], ids["nn.relu"]), (ids["nn.relu"], ids["add"]),
                     (ids["nn.conv2d"], ids["add"])}
    assert g.nodes[1].detail.startswith("param")
    assert "Tensor[(1, 3, 4, 4), float32]" in g.nodes[2].detail


def test_terminal_render_marks_shared_nodes(capsys):
    text = relay_viz.RelayVisualizer(small_module()).render()
    assert text == capsys.readouterr().out.rstrip("\n")
    assert text.splitlines()[1].startswith("`--Call add")
    assert "shown above" in text  # conv2d printed once, referred to the second time


def test_fused_functions_become_one_node():
    mod = small_module()
    with tvm.transform.PassContext(opt_level=3):
        fused = relay.transform.FuseOps(fuse_opt_level=2)(mod)
    (g,) = relay_viz.RelayVisualizer(fused, plotter=TermPlotter()).graphs
    calls = [n for n in g.nodes if n.type_name == "Call"]
    assert len(calls) == 1 and calls[0].label.startswith("fn(")
    assert "nn.conv2d" in calls[0].detail and "add" in calls[0].detail


def test_svg_layout_ranks_follow_dataflow():
    (g,) = relay_viz.RelayVisualizer(small_module(), plotter=TermPlotter()).graphs
    pos = layout(g)
    for e in g.edges:
        assert pos[e.start][1] < pos[e.end][1]  # every edge points down
    svg = graph_svg(g)
    assert svg.count("<rect") == len(g.nodes) and svg.count("marker-end") == len(g.edges)


def test_svg_plotter_writes_html(tmp_path):
    out = tmp_path / "g.html"
    relay_viz.RelayVisualizer(small_module(), plotter=relay_viz.SvgPlotter("t")).render(
        str(out))
    assert "<svg" in out.read_text()


def test_100k_chain():
    x = relay.var("x", shape=(2,))
    y = x
    for _ in range(100_000):
        y = relay.negative(y)
    mod = tvm.IRModule.from_expr(relay.Function([x], y))
    (g,) = relay_viz.RelayVisualizer(mod, plotter=TermPlotter()).graphs
    assert len(g.nodes) == 100_001
    assert len(layout(g)) == 100_001

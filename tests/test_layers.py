"""The package layering of DESIGN §2, computed from the source: imports only point down.

Every ``import`` / ``from ... import`` in minitvm (inside functions too) is read with ``ast``
and mapped to an edge between top-level packages. The graph must have no cycle, each edge must
point to a lower tier, the shared core must import no dialect, and the runtime nothing of the
compiler.
"""

from __future__ import annotations

import ast
import functools
import pathlib
from collections import defaultdict

import minitvm

ROOT = pathlib.Path(minitvm.__file__).parent

# top to bottom; a package may import only packages of lower tiers (and itself)
TIERS: list[set[str]] = [
    {"__main__"},
    {"cli"},
    {"driver"},
    {"meta_schedule"},
    {"autotvm"},
    {"cli_passes", "cli_model", "cli_cache", "compat", "parser", "testing", "tune", "dlight"},
    {"script"},
    {"relay", "relax"},
    {"frontend_common"},
    {"backend"},
    {"schedule"},
    {"topi"},
    {"codegen"},
    {"te"},
    {"arith"},
    {"tir"},
    {"instrument"},
    {"transform"},
    {"target"},
    {"ir"},
    {"contrib"},
    {"rpc"},
    {"runtime"},
]
DIALECTS = {"relay", "relax"}
SHARED = {"ir", "tir", "te", "topi", "transform", "instrument", "codegen", "runtime", "target",
          "schedule", "backend", "arith", "contrib", "frontend_common"}


def _tier(pkg: str) -> int:
    for k, tier in enumerate(TIERS):
        if pkg in tier:
            return k
    raise AssertionError(f"minitvm/{pkg} is in no tier of tests/test_layers.py; add it where "
                         "DESIGN §2 puts it")


def _statements(tree: ast.Module):
    """Every statement of a module, nested ones too (imports are statements: walking only
    statement lists, not expressions, is several times faster than ``ast.walk``)."""
    stack = list(tree.body)
    while stack:
        node = stack.pop()
        yield node
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            stack.extend(getattr(node, field, None) or ())


def import_edges() -> dict[tuple[str, str], list[str]]:
    """(importer, imported) top-level packages -> the places (file:line) that import."""
    edges: dict[tuple[str, str], list[str]] = defaultdict(list)
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT.parent).with_suffix("")
        parts = list(rel.parts)
        pkg = parts[:-1]
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if len(parts) < 2:
            continue  # minitvm/__init__.py wires the packages together
        top = parts[1]
        for node in _statements(ast.parse(path.read_text(), str(path))):
            targets: list[list[str]] = []
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = pkg[:len(pkg) - node.level + 1]
                    if node.module:
                        targets.append(base + node.module.split("."))
                    else:
                        targets.extend(base + [a.name] for a in node.names)
                elif (node.module or "").split(".")[0] == "minitvm":
                    targets.append(node.module.split("."))
            elif isinstance(node, ast.Import):
                targets.extend(a.name.split(".") for a in node.names
                               if a.name.split(".")[0] == "minitvm")
            for t in targets:
                if len(t) > 1 and t[1] != top:
                    edges[(top, t[1])].append(f"{path.relative_to(ROOT.parent)}:{node.lineno}")
    return edges


@functools.cache
def edges() -> dict[tuple[str, str], list[str]]:
    """``import_edges()``, scanned on first use, not at collection: parsing all of minitvm there
    cost every pytest-xdist worker seconds, also one that runs none of these tests."""
    return import_edges()


def _where(edge) -> str:
    places = edges()[edge]
    return ", ".join(places[:5]) + (f" (+{len(places) - 5} more)" if len(places) > 5 else "")


def test_the_scan_sees_the_known_edges():
    # guards the scanner itself: these imports exist and must be found
    assert ("relay", "ir") in edges()
    assert ("backend", "schedule") in edges()
    assert ("codegen", "tir") in edges()


def test_no_cycle_between_packages():
    graph = defaultdict(set)
    for a, b in edges():
        graph[a].add(b)
    state: dict[str, int] = {}
    for start in list(graph):
        if state.get(start):
            continue
        stack = [(start, iter(sorted(graph[start])))]
        path = [start]
        state[start] = 1
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                state[node] = 2
                stack.pop()
                path.pop()
                continue
            if state.get(nxt) == 1:
                cycle = path[path.index(nxt):] + [nxt]
                detail = "; ".join(f"{a}->{b} at {_where((a, b))}"
                                   for a, b in zip(cycle, cycle[1:]))
                raise AssertionError(f"import cycle {' -> '.join(cycle)}: {detail}")
            if not state.get(nxt):
                state[nxt] = 1
                path.append(nxt)
                stack.append((nxt, iter(sorted(graph[nxt]))))


def test_imports_point_down_the_tiers():
    bad = [f"{a} -> {b} ({_where((a, b))})" for a, b in edges() if _tier(b) <= _tier(a)]
    assert not bad, "imports against DESIGN §2's layering:\n" + "\n".join(sorted(bad))


def test_shared_core_imports_no_dialect():
    bad = [f"{a} -> {b} ({_where((a, b))})" for a, b in edges() if a in SHARED and b in DIALECTS]
    assert not bad, "the shared core imports a dialect:\n" + "\n".join(sorted(bad))


def test_dialects_do_not_import_each_other():
    bad = [f"{a} -> {b} ({_where((a, b))})" for a, b in edges() if a in DIALECTS and b in DIALECTS]
    assert not bad, "\n".join(bad)


def test_runtime_imports_no_compiler_layer():
    bad = [f"runtime -> {b} ({_where((a, b))})" for a, b in edges() if a == "runtime"]
    assert not bad, "the runtime imports the compiler:\n" + "\n".join(sorted(bad))


def test_a_violation_is_reported():
    """The checks fail on a bad edge (a shared package importing a dialect)."""
    edges()[("tir", "relay")].append("minitvm/tir/fake.py:1")
    try:
        try:
            test_shared_core_imports_no_dialect()
        except AssertionError as err:
            assert "tir -> relay (minitvm/tir/fake.py:1)" in str(err)
        else:
            raise AssertionError("a tir -> relay import went unnoticed")
    finally:
        del edges()[("tir", "relay")]

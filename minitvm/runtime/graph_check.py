"""Validation of a graph executor's graph JSON against its kernels, before any memory is touched.

A graph can come from a file (``load_module``), so every field the executor reads is checked:
types, ranges, node order, storage sizes against entry shapes, kernel names and argument counts,
the whole-graph entry's call sequence. Any problem is a ``ValueError`` naming ``where`` (the file
and member) and the field, never a KeyError/IndexError, a bad allocation or a memory overwrite.
"""

from __future__ import annotations

import json
import math
import re

import numpy as np

#: Total planned bytes above this are refused (a damaged size, not a model).
MAX_TOTAL_BYTES = 1 << 40
_DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
           "float16", "float32", "float64")


class GraphError(ValueError):
    """A graph JSON that the executor cannot run safely."""


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _fail(where: str, msg: str):
    return GraphError(f"{where}: {msg}")


def _list(obj, key: str, where: str, kind: str = "list") -> list:
    v = obj.get(key) if isinstance(obj, dict) else None
    if not isinstance(v, list):
        raise _fail(where, f"field {key!r} must be a {kind}, got {type(v).__name__}")
    return v


def _int_list(v, what: str, where: str, lo: int = 0, hi: int | None = None) -> list:
    if type(v) is list and all(type(x) is int for x in v) and (
            not v or (min(v) >= lo and (hi is None or max(v) < hi))):
        return v  # (the common case, checked without a call per item; below: which item fails)
    if not isinstance(v, list):
        raise _fail(where, f"{what} must be a list of integers, got {type(v).__name__}")
    for x in v:
        if not _is_int(x) or x < lo or (hi is not None and x >= hi):
            bound = f" in [{lo}, {hi})" if hi is not None else f" >= {lo}"
            raise _fail(where, f"{what} holds {x!r}; expected integers{bound}")
    return v


def _attr(attrs: dict, key: str, where: str) -> list:
    v = attrs.get(key)
    if not (isinstance(v, list) and len(v) == 2 and isinstance(v[0], str)):
        raise _fail(where, f"attrs[{key!r}] must be [type tag, values]")
    return v[1]


def parse_graph_json(text, where: str = "graph.json") -> dict:
    """``json.loads`` with every failure (syntax, nesting depth, non-object) a GraphError."""
    try:
        g = json.loads(text)
    except (ValueError, RecursionError, TypeError) as err:
        raise _fail(where, f"not valid JSON: {str(err)[:200]}") from None
    if not isinstance(g, dict):
        raise _fail(where, f"must be a JSON object, got {type(g).__name__}")
    return g


def _edge(v, n_nodes: int, what: str, where: str) -> tuple[int, int]:
    if type(v) is list and 2 <= len(v) <= 3 and all(type(x) is int for x in v) and \
            0 <= v[0] < n_nodes and v[1] >= 0:
        return v[0], v[1]  # (the common case; below: what is wrong)
    if not (isinstance(v, list) and len(v) in (2, 3) and all(_is_int(x) for x in v)):
        raise _fail(where, f"{what} must be [node id, output index, version], got {v!r}")
    if not 0 <= v[0] < n_nodes or v[1] < 0:
        raise _fail(where, f"{what} refers to node {v[0]} output {v[1]}, out of range")
    return v[0], v[1]


def check_graph(g: dict, kernels: dict, where: str = "graph.json") -> dict:
    """Check ``g`` against ``kernels`` (name -> Kernel); return the facts the executor needs:
    ``entries`` [(storage id, dtype, shape)], ``offsets`` (bytes into the storage, per entry),
    ``sizes``, ``ws_bytes``, ``inputs`` name -> entry,
    ``outputs`` entries, ``steps`` [(node name, kernel, input entries, output entries)]."""
    nodes = _list(g, "nodes", where)
    n = len(nodes)
    row_ptr = _int_list(_list(g, "node_row_ptr", where), "node_row_ptr", where)
    if len(row_ptr) != n + 1 or row_ptr[0] != 0:
        raise _fail(where, f"node_row_ptr must have {n + 1} entries starting at 0")
    if any(b < a for a, b in zip(row_ptr, row_ptr[1:], strict=False)):
        raise _fail(where, "node_row_ptr must be non-decreasing")
    n_entries = row_ptr[-1]
    attrs = g.get("attrs")
    if not isinstance(attrs, dict):
        raise _fail(where, "field 'attrs' must be an object")
    sizes = _int_list(_attr(attrs, "minitvm_storage_bytes", where), "storage bytes", where)
    sids = _int_list(_attr(attrs, "storage_id", where), "storage_id", where, 0, len(sizes))
    shapes = _attr(attrs, "shape", where)
    dtypes = _attr(attrs, "dltype", where)
    ws = _int_list(_attr(attrs, "minitvm_workspace_bytes", where), "workspace bytes", where)
    offsets = _int_list(_attr(attrs, "minitvm_storage_offset", where), "storage offsets",
                        where) if "minitvm_storage_offset" in attrs else [0] * n_entries
    for what, v in (("storage_id", sids), ("shape", shapes), ("dltype", dtypes),
                    ("minitvm_storage_offset", offsets)):
        if not isinstance(v, list) or len(v) != n_entries:
            raise _fail(where, f"attrs[{what!r}] must have one value per entry ({n_entries})")
    if len(ws) != 1:
        raise _fail(where, "attrs['minitvm_workspace_bytes'] must hold one integer")
    total = sum(sizes) + ws[0]
    if total > MAX_TOTAL_BYTES:
        raise _fail(where, f"the memory plan asks for {total} bytes, beyond any real model")
    entries = []
    dtype_of = {name: np.dtype(name) for name in _DTYPES}
    for e in range(n_entries):
        shape = _int_list(shapes[e], f"the shape of entry {e}", where)
        dt = dtype_of.get(dtypes[e]) if type(dtypes[e]) is str else None
        if dt is None:
            raise _fail(where, f"entry {e} has the unsupported dtype {dtypes[e]!r}")
        nbytes = dt.itemsize * math.prod(shape)
        if offsets[e] + nbytes > sizes[sids[e]]:
            raise _fail(where, f"entry {e} ({dtypes[e]}{shape}) needs {nbytes} bytes at offset "
                               f"{offsets[e]} but its storage {sids[e]} has {sizes[sids[e]]}")
        entries.append((sids[e], dt, tuple(shape)))
    inputs = {}
    for nid in _int_list(_list(g, "arg_nodes", where), "arg_nodes", where, 0, n):
        node = nodes[nid]
        if not isinstance(node, dict) or node.get("op") != "null":
            raise _fail(where, f"arg_nodes lists node {nid}, which is not an input node")
        if not isinstance(node.get("name"), str):
            raise _fail(where, f"input node {nid} has no name")
        inputs[node["name"]] = row_ptr[nid]
    steps = []
    for nid, node in enumerate(nodes):
        if not isinstance(node, dict) or node.get("op") not in ("null", "tvm_op"):
            raise _fail(where, f"node {nid} must be an object with op 'null' or 'tvm_op'")
        count = row_ptr[nid + 1] - row_ptr[nid]
        if node["op"] == "null":
            if count != 1:
                raise _fail(where, f"input node {nid} must have one output entry")
            continue
        nattrs = node.get("attrs")
        fname = nattrs.get("func_name") if isinstance(nattrs, dict) else None
        if not isinstance(fname, str):
            raise _fail(where, f"node {nid} has no attrs.func_name")
        ins = []
        for v in _list(node, "inputs", f"{where} node {nid}"):
            src, idx = _edge(v, nid, f"an input of node {nid}", where)  # inputs come earlier
            if idx >= row_ptr[src + 1] - row_ptr[src]:
                raise _fail(where, f"node {nid} reads output {idx} of node {src}, which has "
                                   f"{row_ptr[src + 1] - row_ptr[src]}")
            ins.append(row_ptr[src] + idx)
        outs = list(range(row_ptr[nid], row_ptr[nid + 1]))
        name = node.get("name", f"node{nid}")
        if fname == "__concat":  # its parts, written in place, lie back to back in its output
            at = offsets[outs[0]] if len(outs) == 1 else -1
            for e in ins:
                if at < 0 or sids[e] != sids[outs[0]] or offsets[e] != at:
                    raise _fail(where, f"node {nid} (__concat): its inputs are not the "
                                       "consecutive pieces of its output's storage")
                at += entries[e][1].itemsize * int(np.prod(entries[e][2], dtype=np.int64))
            continue
        if fname == "__nop":
            continue
        k = kernels.get(fname)
        if k is None:
            raise _fail(where, f"node {nid} calls kernel {fname!r}, which the library lacks")
        declared = (nattrs.get("num_inputs"), nattrs.get("num_outputs"))  # strings, as in TVM
        if declared != (None, None) and tuple(str(d) for d in declared) != (str(len(ins)),
                                                                            str(len(outs))):
            raise _fail(where, f"node {nid}: num_inputs/num_outputs {declared} do not match "
                               f"its {len(ins)} inputs and {len(outs)} output entries")
        steps.append((name, k, ins, outs))
    outputs = []
    for h in _list(g, "heads", where):
        nid, idx = _edge(h, n, "a head", where)
        if idx >= row_ptr[nid + 1] - row_ptr[nid]:
            raise _fail(where, f"head {h!r} is out of range")
        outputs.append(row_ptr[nid] + idx)
    ws_need = max([k.ws_bytes for _, k, _, _ in steps if k.kind == "native"] + [0])
    return {"entries": entries, "offsets": offsets, "sizes": sizes,
            "ws_bytes": max(ws[0], ws_need),
            "inputs": inputs, "outputs": outputs, "steps": steps}


_CALL = re.compile(r"getelementptr ptr, ptr %table, i64 (\d+)\s*\n\s*call void @\"?([\w.$]+)\"?")


def check_entry(entry_ir: str, native_steps: list[tuple[str, int]], where: str) -> None:
    """The whole-graph entry must call exactly the executor's steps at the table offsets the
    executor fills: ``[(kernel symbol, number of argument pointers)]`` in order."""
    calls = [(int(off), sym) for off, sym in _CALL.findall(entry_ir)]
    expected, off = [], 0
    for sym, nargs in native_steps:
        expected.append((off, sym))
        off += nargs
    if calls != expected:
        raise _fail(where, "the whole-graph entry does not call the graph's kernels with the "
                           "argument layout of graph.json")

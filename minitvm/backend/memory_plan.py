"""Static memory planning for the graph executor: storage reused by liveness.

Every node output gets a storage id. Walking nodes in execution order, a kernel's outputs take
the best-fitting free storage (growing the largest free one when none fits) before its inputs are
released, so an output never aliases an input; a storage is freed after the last use of every
tensor in it. Graph inputs, parameters and outputs keep their own storage. ``__nop`` (reshape)
nodes view their input's storage. Kernels share one workspace (they run one at a time).

A concatenation whose parts are contiguous pieces of its output (every dim before the axis is 1)
runs in place when each part is a kernel's output read by nothing else: the part's producer
writes it at its byte offset inside the concatenation's storage (taken when the first part is
produced), and the concatenation node becomes ``__concat``, which runs nothing. Offsets stay
multiples of ``ALIGN`` (kernels may assume aligned buffers); graph outputs are not written so.
"""

from __future__ import annotations

import numpy as np

ALIGN = 64


def _nbytes(shape, dtype: str) -> int:
    """Bytes of a tensor, in Python integers: a size past int64 (which numpy's product would
    wrap, planning 0 bytes) is refused at build time."""
    n = np.dtype(dtype).itemsize
    for d in shape:
        n *= int(d)
    if n >= 1 << 63:
        dims = ", ".join(str(int(d)) for d in shape)
        raise ValueError(f"a tensor of shape ({dims}) {dtype} needs {n} bytes, which overflows "
                         "int64: it cannot be built")
    return max(1, n)


class _Token:
    __slots__ = ("sid", "bytes", "refs", "pinned")

    def __init__(self, sid: int, nbytes: int, pinned: bool):
        self.sid = sid
        self.bytes = nbytes
        self.refs = 0
        self.pinned = pinned


def _in_place_concats(nodes, entries, row_ptr, uses, head_ids) -> tuple[dict, set]:
    """``({part entry: (concatenation's output entry, byte offset)}, {concatenation node
    ids})`` for the concatenations (nodes marked ``_concat_axis`` by the codegen) that can be
    written in place by their parts' producers."""
    kernel_outputs = set()
    for nid, n in enumerate(nodes):
        if n["op"] != "null" and n["attrs"]["func_name"] != "__nop" and "_concat_axis" not in n:
            kernel_outputs.update(range(row_ptr[nid], row_ptr[nid + 1]))
    parts: dict[int, tuple[int, int]] = {}
    in_place = set()
    for nid, n in enumerate(nodes):
        axis = n.get("_concat_axis")
        out = row_ptr[nid]
        if axis is None or out in head_ids or uses[out] == 0:
            continue
        shape = entries[out]["shape"]
        ins = [row_ptr[i] + k for i, k, _ in n["inputs"]]
        if any(int(d) != 1 for d in shape[:axis]) or len(set(ins)) != len(ins) or any(
                e not in kernel_outputs or e in head_ids or uses[e] != 1 or e in parts
                or entries[e]["dtype"] != entries[out]["dtype"] for e in ins):
            continue
        offsets, off = [], 0
        for e in ins:
            offsets.append(off)
            off += _nbytes(entries[e]["shape"], entries[e]["dtype"])
        if any(o % ALIGN for o in offsets):
            continue
        for e, o in zip(ins, offsets):
            parts[e] = (out, o)
        in_place.add(nid)
    return parts, in_place


def plan_memory(nodes: list[dict], entries: list[dict], heads, kernels: dict) -> dict:
    """``{"storage_id": [...per entry], "storage_offset": [...per entry, bytes],
    "storage_bytes": [...per storage], "workspace_bytes", "in_place": {concatenation node
    ids}}``."""
    row_ptr = [0]
    for n in nodes:
        row_ptr.append(row_ptr[-1] + n["_num_outputs"])
    uses = [0] * len(entries)
    for n in nodes:
        for nid, k, _ in n.get("inputs", ()):
            uses[row_ptr[nid] + k] += 1
    head_ids = {row_ptr[h[0]] + h[1] for h in heads}
    parts, in_place = _in_place_concats(nodes, entries, row_ptr, uses, head_ids)
    offset = [0] * len(entries)
    tokens: list[_Token] = []
    free: list[_Token] = []
    token_of: list[_Token | None] = [None] * len(entries)

    def new_token(nbytes: int, pinned: bool) -> _Token:
        t = _Token(len(tokens), nbytes, pinned)
        tokens.append(t)
        return t

    def alloc(nbytes: int) -> _Token:
        best = None
        for t in free:
            if t.bytes >= nbytes and (best is None or t.bytes < best.bytes):
                best = t
        if best is None and free:
            best = max(free, key=lambda t: t.bytes)
            best.bytes = nbytes
        if best is None:
            return new_token(nbytes, False)
        free.remove(best)
        return best

    def release(tok: _Token) -> None:
        tok.refs -= 1
        if tok.refs == 0 and not tok.pinned:
            free.append(tok)

    workspace = 0
    for nid, n in enumerate(nodes):
        outs = range(row_ptr[nid], row_ptr[nid + 1])
        if n["op"] == "null":
            for e in outs:
                tok = new_token(_nbytes(entries[e]["shape"], entries[e]["dtype"]), True)
                tok.refs += uses[e]
                token_of[e] = tok
            continue
        fname = n["attrs"]["func_name"]
        in_ids = [row_ptr[i] + k for i, k, _ in n["inputs"]]
        if nid in in_place:  # the parts are in its storage already (taken by the first)
            for e in in_ids:
                release(token_of[e])
            continue
        if fname == "__nop":
            tok = token_of[in_ids[0]]
            e = row_ptr[nid]
            token_of[e] = tok
            tok.refs += uses[e]
            if e in head_ids:
                tok.pinned = True
            release(tok)
            continue
        lowered = kernels.get(fname)
        if lowered is not None:
            workspace = max(workspace, getattr(lowered, "ws_bytes", 0))
        new = []
        for e in outs:
            if e in parts:
                whole, offset[e] = parts[e]
                if token_of[whole] is None:
                    token_of[whole] = alloc(_nbytes(entries[whole]["shape"],
                                                    entries[whole]["dtype"]))
                    token_of[whole].refs += uses[whole]
                tok = token_of[whole]
            else:
                nb = _nbytes(entries[e]["shape"], entries[e]["dtype"])
                tok = new_token(nb, True) if e in head_ids else alloc(nb)
            tok.refs += uses[e]
            token_of[e] = tok
            new.append(tok)
        for e in in_ids:
            release(token_of[e])
        for tok in new:
            if tok.refs == 0 and not tok.pinned:
                free.append(tok)
    return {
        "storage_id": [t.sid for t in token_of],
        "storage_offset": offset,
        "in_place": in_place,
        "storage_bytes": [-(-t.bytes // ALIGN) * ALIGN for t in tokens],
        "workspace_bytes": workspace,
    }


def peak_bytes(graph: dict, include_params: bool = False) -> int:
    """Bytes of all planned storage (intermediates and I/O; parameters when asked)."""
    attrs = graph["attrs"]
    sizes = attrs["minitvm_storage_bytes"][1]
    sids = attrs["storage_id"][1]
    param_sids = set()
    if not include_params:
        row_ptr = graph["node_row_ptr"]
        for nid in graph["arg_nodes"]:
            name = graph["nodes"][nid]["name"]
            if name.startswith("p") and name[1:].isdigit():
                param_sids.add(sids[row_ptr[nid]])
    total = sum(s for k, s in enumerate(sizes) if k not in param_sids)
    return total + attrs["minitvm_workspace_bytes"][1][0]

"""Static memory planning for the graph executor: storage reused by liveness.

Every node output gets a storage id. Walking nodes in execution order, a kernel's outputs take
the best-fitting free storage (growing the largest free one when none fits) before its inputs are
released, so an output never aliases an input; a storage is freed after the last use of every
tensor in it. Graph inputs, parameters and outputs keep their own storage. ``__nop`` (reshape)
nodes view their input's storage. Kernels share one workspace (they run one at a time).
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


def plan_memory(nodes: list[dict], entries: list[dict], heads, kernels: dict) -> dict:
    """``{"storage_id": [...per entry], "storage_bytes": [...per storage], "workspace_bytes"}``."""
    row_ptr = [0]
    for n in nodes:
        row_ptr.append(row_ptr[-1] + n["_num_outputs"])
    uses = [0] * len(entries)
    for n in nodes:
        for nid, k, _ in n.get("inputs", ()):
            uses[row_ptr[nid] + k] += 1
    head_ids = {row_ptr[h[0]] + h[1] for h in heads}
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

"""The "dnnl" kernel record: a DnnlGraph as a ``runtime.Kernel`` that export/load keep.

The saved text (format ``"dnnl_json"``) is the graph JSON with its constants embedded
(``.npy`` bytes, base64): loading it rebuilds the oneDNN primitives without the compiler.
"""

from __future__ import annotations

import base64
import io
import json

import numpy as np

from ....runtime.module import Kernel, register_kernel_format
from .graph import DnnlGraph

__all__ = ["KERNEL_FORMAT", "make_kernel", "DnnlSource"]

KERNEL_FORMAT = "dnnl_json"


class DnnlSource:
    """What a dnnl kernel was built from: the graph JSON and its constant arrays."""

    __slots__ = ("graph", "consts", "symbol")

    def __init__(self, graph: dict, consts: list, symbol: str):
        self.graph = graph
        self.consts = [np.asarray(c, dtype=np.float32) for c in consts]
        self.symbol = symbol


def make_kernel(name: str, source: DnnlSource) -> Kernel:
    """Build the primitives of ``source`` and wrap them as a kernel named ``name``."""
    g = DnnlGraph(source.graph, source.consts)
    # kind "fallback": run through ``run`` rather than as generated machine code (the runtime's
    # kernel table knows "native" and "fallback"); the reason names the external codegen
    return Kernel(name, "fallback", reason=f"external codegen dnnl ({source.symbol})",
                  source=source, source_format=KERNEL_FORMAT, run=g.run)


def _write(source: DnnlSource) -> str:
    blobs = []
    for c in source.consts:
        buf = io.BytesIO()
        np.save(buf, c, allow_pickle=False)
        blobs.append(base64.b64encode(buf.getvalue()).decode())
    return json.dumps({"symbol": source.symbol, "graph": source.graph, "consts": blobs})


def _read(text: str):
    d = json.loads(text)
    consts = [np.load(io.BytesIO(base64.b64decode(b)), allow_pickle=False) for b in d["consts"]]
    src = DnnlSource(d["graph"], consts, d["symbol"])
    return src, DnnlGraph(src.graph, src.consts).run


register_kernel_format(KERNEL_FORMAT, _write, _read)

"""tvm.rpc: TVM's remote sessions. minitvm runs on this machine only, so ``LocalSession`` (the
session TVM's tutorials use for a local demo) is real — files uploaded to a private directory,
modules loaded from it, the host's devices — and the network pieces (``connect``,
``connect_tracker``, servers, trackers, proxies) raise ``TVMDifferenceError``."""

from __future__ import annotations

from ..runtime.error import missing_attribute
from .local_session import LocalSession, RPCSession

__all__ = ["LocalSession", "RPCSession"]

_NETWORK = ("minitvm runs on this machine only; it has no RPC server, tracker or proxy",
            "rpc.LocalSession() (same upload / load_module / device API), or copy the "
            "exported library to the other machine and tvm.runtime.load_module it there")
_LEFT_OUT = {name: _NETWORK for name in (
    "connect", "connect_tracker", "Server", "Tracker", "Proxy", "PopenSession", "TrackerSession",
    "server", "tracker", "proxy", "with_minrpc")}


def __getattr__(name: str):
    missing_attribute("tvm.rpc", name, _LEFT_OUT)

"""``tvm.relay.save_param_dict`` / ``load_param_dict``: the runtime's, under Relay's names."""

from __future__ import annotations

from ..runtime.params import load_param_dict, save_param_dict

__all__ = ["load_param_dict", "save_param_dict"]

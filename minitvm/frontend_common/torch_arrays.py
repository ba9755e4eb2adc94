"""A PyTorch tensor held by a model (a parameter, buffer or frozen constant) as the numpy array
an importer embeds, for the TorchScript and torch.export importers of both dialects.

numpy has no ``bfloat16``, and torch refuses ``.numpy()`` of one. A checkpoint that stores a
table in bfloat16 and widens it before computing (``F.embedding(idx, table_bf16).float()``, as
memory-saving LLM code does) needs only the values, which float32 holds exactly (bfloat16 is
float32's top 16 bits): such a constant is embedded widened to float32, and the graph's casts of
it to float32 are then no-ops. Arithmetic torch would round to bfloat16 is computed in float32.
"""

from __future__ import annotations

import numpy as np

__all__ = ["tensor_to_numpy"]


def tensor_to_numpy(t) -> np.ndarray:
    """A contiguous numpy copy of tensor ``t``; bfloat16 widened exactly to float32."""
    import torch

    t = t.detach().cpu()
    if t.dtype == torch.bfloat16:
        t = t.float()
    return t.contiguous().numpy().copy()

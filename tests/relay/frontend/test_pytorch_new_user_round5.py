"""The fifth round of new-user architectures through relay.frontend.from_pytorch: torch's
accumulation dtypes (``mask.sum()`` and ``cumsum`` of integers and bools count in int64, a
``dtype=`` argument casts first; binary ops promote as torch does) and the RoBERTa-style position ids built from them, each
checked against eager PyTorch, dtype included, with every kernel native."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

from frontend_models import Fn, compare_traced  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relay  # noqa: E402
from minitvm.contrib import graph_executor  # noqa: E402


def _built_output(model, *inputs):
    """The traced model built at opt_level 3 and run on ``inputs``: (output, eager reference)."""
    with torch.no_grad():
        ref = model(*inputs).numpy()
    traced = torch.jit.trace(model, inputs)
    lib = compare_traced(traced, inputs, ref)
    assert [k for k, v in lib.get_lib().kernels.items() if v.kind != "native"] == []
    g = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    for k, t in enumerate(inputs):
        g.set_input(f"i{k}", t.numpy())
    g.run()
    return g.get_output(0).numpy(), ref


def _mask(*shape, seed=0):
    return torch.from_numpy(np.random.default_rng(seed).random(shape) > 0.4)


_ACCUMULATE = {
    "sum_bool_keepdim": lambda m: m.sum(1, keepdim=True),
    "sum_bool_all": lambda m: m.sum(),
    "sum_bool_clamp_min": lambda m: m.sum(1, keepdim=True).clamp(min=1),
    "sum_int32": lambda m: m.int().sum(-1),
    "sum_dtype_float": lambda m: m.int().sum(1, dtype=torch.float32),
    "sum_dtype_only": lambda m: m.int().sum(dtype=torch.float64),
    "mean_dtype": lambda m: m.int().mean(1, dtype=torch.float32),
    "cumsum_bool": lambda m: torch.cumsum(m, 1),
    "cumsum_int32": lambda m: torch.cumsum(m.int(), 1) * m.int(),
    "cumsum_dtype": lambda m: torch.cumsum(m.int(), 1, dtype=torch.float32),
    # the binary ops' promotion the results above flow into
    "mul_int32_bool": lambda m: (m.int() + 3) * m,
    "add_int32_int64": lambda m: m.int() * 5 + m.long().cumsum(1),
    "add_bool_float": lambda m: m + m.float() * 0.5,
}


@pytest.mark.parametrize("name", sorted(_ACCUMULATE))
def test_accumulation_dtype_follows_torch(name):
    out, ref = _built_output(Fn(_ACCUMULATE[name]).eval(), _mask(3, 11))
    assert out.dtype == ref.dtype
    np.testing.assert_array_equal(out, ref)


def test_roberta_position_ids_and_masked_mean():
    """Position ids from cumsum over the non-pad tokens, where() for the pads, a masked mean
    divided by the clamped count (int64 before the fix: a bool sum, clipped to garbage)."""
    from torch import nn

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            torch.manual_seed(0)
            self.tok, self.pos = nn.Embedding(50, 8, padding_idx=1), nn.Embedding(20, 8)

        def forward(self, ids):
            real = ids.ne(1)
            pos = torch.cumsum(real.int(), 1) * real.int()
            pos = torch.where(real, pos + 1, torch.full_like(pos, 1)).long()
            x = (self.tok(ids) + self.pos(pos)).masked_fill(~real[..., None], 0.0)
            return x.sum(1) / real.sum(1, keepdim=True).clamp(min=1).float()

    ids = torch.from_numpy(np.random.default_rng(3).integers(2, 50, (3, 12)))
    ids[1, 8:] = 1
    ids[2, :] = 1  # all padding: the count clamps to 1
    out, ref = _built_output(Model().eval(), ids)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)


def test_sum_of_bool_is_int64_in_the_ir():
    traced = torch.jit.trace(Fn(lambda m: m.sum(-1)), (_mask(2, 5),))
    mod, _ = relay.frontend.from_pytorch(traced, [("m", ((2, 5), "bool"))])
    assert mod["main"].ret_type.dtype == "int64"

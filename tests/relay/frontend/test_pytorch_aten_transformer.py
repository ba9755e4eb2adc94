"""nn.TransformerEncoder(Layer) traced under torch.no_grad(), as users trace for inference: the
fused encoder-layer fast path with key-padding, causal and merged masks, and the nested tensors
an encoder builds from ``src_key_padding_mask``, through relay.frontend.from_pytorch against
eager PyTorch (also under no_grad, which zeroes the padded rows of a nested result)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

from frontend_models import compare_traced  # noqa: E402
from torch import nn  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relay  # noqa: E402
from minitvm.contrib import graph_executor  # noqa: E402


class _Encoder(nn.Module):
    def __init__(self, norm_first=False, nested=True, activation="relu"):
        super().__init__()
        layer = nn.TransformerEncoderLayer(32, 4, 64, 0.0, activation=activation,
                                           batch_first=True, norm_first=norm_first)
        self.enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=nested)

    def forward(self, x, pad=None, causal=False):
        mask = nn.Transformer.generate_square_subsequent_mask(x.shape[1]) if causal else None
        return self.enc(x, mask=mask, src_key_padding_mask=pad, is_causal=causal)


def _pad_mask():
    pad = torch.zeros(3, 10, dtype=torch.bool)
    pad[1, 7:] = True
    pad[2, 4:] = True
    return pad


def _check(model, inputs, must_contain):
    torch.manual_seed(0)
    model = model.eval()
    with torch.no_grad():
        ref = model(*inputs).numpy()
        traced = torch.jit.trace(model, inputs, check_trace=False)
    graph = str(traced.inlined_graph)
    for op in must_contain:  # the fast path this test is about was taken
        assert op in graph, op
    compare_traced(traced, inputs, ref)


def _x():
    return torch.from_numpy(np.random.default_rng(0).standard_normal((3, 10, 32)).astype(
        "float32"))


@pytest.mark.parametrize("norm_first", [False, True])
def test_fast_path_without_mask(norm_first):
    _check(_Encoder(norm_first), (_x(),), ["_transformer_encoder_layer_fwd"])


def test_fast_path_with_a_key_padding_mask():
    """norm_first turns nested tensors off: the padding mask reaches the layer (type 1)."""
    _check(_Encoder(norm_first=True), (_x(), _pad_mask()), ["_transformer_encoder_layer_fwd"])


def test_fast_path_with_a_causal_mask():
    class Causal(_Encoder):
        def forward(self, x):
            return super().forward(x, causal=True)

    _check(Causal(activation="gelu"), (_x(),), ["_transformer_encoder_layer_fwd"])


def test_fast_path_with_merged_causal_and_padding_masks():
    class Both(_Encoder):
        def forward(self, x, pad):
            mask = nn.Transformer.generate_square_subsequent_mask(x.shape[1])
            return self.enc(x, mask=mask, src_key_padding_mask=pad)

    x, pad = _x(), torch.zeros(3, 10, dtype=torch.bool)
    pad[1, 8:] = True  # every query keeps at least its own (first) key
    _check(Both(norm_first=True), (x, pad), ["_transformer_encoder_layer_fwd"])


def test_nested_tensor_from_a_padding_mask():
    """The default encoder (post-norm, nested tensors on): padded rows come back as zeros."""
    _check(_Encoder(), (_x(), _pad_mask()),
           ["_nested_tensor_from_mask", "to_padded_tensor", "logical_not"])


@pytest.mark.parametrize("dtype", [torch.bool, torch.float32])
def test_logical_not(dtype):
    class M(nn.Module):
        def forward(self, x):
            return torch.logical_not(x)

    x = torch.tensor([[0.0, 1.5, -2.0], [0.0, 0.0, 3.0]]).to(dtype)
    traced = torch.jit.trace(M(), x)
    mod, params = relay.frontend.from_pytorch(traced, [("x", ((2, 3), str(dtype)[6:]))])
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
    gm = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    gm.set_input("x", x.numpy())
    gm.run()
    np.testing.assert_array_equal(gm.get_output(0).numpy(), torch.logical_not(x).numpy())

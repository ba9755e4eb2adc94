"""DCN-v2's recommender (benchmarks/new_user_models_ninth.py ``dcnv2_rec``) through torch's
default ONNX exporter, into both ONNX importers, against ONNX Runtime.

The dynamo exporter writes ``torch.bucketize`` as an unrolled binary search: per step a
``GatherND`` of the boundaries at the midpoint, then ``Where``s updating both ends from it. The
70 ops fused into one injective kernel that inlined to 132,898 op copies, and neither build
finished; the fusion partitioner's ``MAX_INLINED`` splits the search into several kernels."""

from __future__ import annotations

import logging
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="exporting needs the `torch` extra")
onnx = pytest.importorskip("onnx", reason="the ONNX importers need the `onnx` package")
pytest.importorskip("onnxscript", reason="torch's dynamo exporter needs onnxscript (onnx extra)")
ort = pytest.importorskip("onnxruntime", reason="the reference is ONNX Runtime")

from inlined_size import relay_group_sizes  # noqa: E402

import minitvm as tvm  # noqa: E402
from minitvm import relax, relay  # noqa: E402
from minitvm.contrib import graph_executor  # noqa: E402
from minitvm.transform.graph_partitioner import MAX_INLINED  # noqa: E402

nn = torch.nn


class DCNv2(nn.Module):
    """Dense features bucketized (15 boundaries: a 4-step search) and embedded, categorical
    ids and a mean EmbeddingBag of tags embedded, two low-rank cross layers, a sigmoid."""

    def __init__(self, n_dense=8, fields=3, card=50, e=8, rank=8):
        super().__init__()
        self.register_buffer("bounds", torch.linspace(-2.0, 2.0, 15))
        self.dense_emb = nn.Embedding(n_dense * 16, e)
        self.register_buffer("dense_off", torch.arange(n_dense) * 16)
        self.cat_emb = nn.Embedding(fields * card, e)
        self.register_buffer("cat_off", torch.arange(fields) * card)
        self.bag = nn.EmbeddingBag(100, e, mode="mean")
        d = (n_dense + fields + 1) * e
        self.v = nn.ModuleList([nn.Linear(d, rank, bias=False) for _ in range(2)])
        self.u = nn.ModuleList([nn.Linear(rank, d) for _ in range(2)])
        self.out = nn.Linear(d, 1)

    def forward(self, dense, cat, tags):
        b = dense.shape[0]
        dz = self.dense_emb(torch.bucketize(dense, self.bounds) + self.dense_off)
        x0 = torch.cat(
            [dz.flatten(1), self.cat_emb(cat + self.cat_off).flatten(1), self.bag(tags)], 1
        ).view(b, -1)
        x = x0
        for v, u in zip(self.v, self.u, strict=True):
            x = x0 * u(v(x)) + x
        return torch.sigmoid(self.out(x))


@pytest.fixture(scope="module")
def exported():
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(3)
    inputs = {
        "dense": torch.randn(4, 8, generator=g) * 1.5,
        "cat": torch.randint(0, 50, (4, 3), generator=g),
        "tags": torch.randint(0, 100, (4, 5), generator=g),
    }
    model = DCNv2().eval()
    logging.getLogger("torch.onnx").setLevel(logging.ERROR)
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        om = torch.onnx.export(
            model, tuple(inputs.values()), dynamo=True, input_names=list(inputs)
        ).model_proto
    feed = {k: v.numpy() for k, v in inputs.items()}
    sess = ort.InferenceSession(om.SerializeToString(), providers=["CPUExecutionProvider"])
    want = sess.run(None, feed)[0]
    with torch.no_grad():
        np.testing.assert_allclose(want, model(*inputs.values()).numpy(), rtol=1e-5, atol=1e-6)
    return om, feed, want


def test_export_has_the_unrolled_search(exported):
    om, _, _ = exported
    assert sum(n.op_type == "GatherND" for n in om.graph.node) >= 3


def test_relay_builds_and_matches_onnxruntime(exported):
    om, feed, want = exported
    mod, params = relay.frontend.from_onnx(om, {k: v.shape for k, v in feed.items()})
    with tvm.transform.PassContext(opt_level=3):
        fused, _ = relay.optimize(mod, "llvm", params)
        lib = relay.build(mod, target="llvm", params=params)
    sizes = relay_group_sizes(fused)
    assert max(sizes) <= MAX_INLINED
    m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
    for k, v in feed.items():
        m.set_input(k, v)
    m.run()
    np.testing.assert_allclose(m.get_output(0).numpy(), want, rtol=1e-5, atol=1e-6)


def test_relax_builds_and_matches_onnxruntime(exported):
    om, feed, want = exported
    vm = relax.VirtualMachine(relax.build(relax.frontend.onnx.from_onnx(om), "llvm"), tvm.cpu())
    got = vm["main"](*[tvm.nd.array(v) for v in feed.values()])
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-6)

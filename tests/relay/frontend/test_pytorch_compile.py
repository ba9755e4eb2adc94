"""torch.compile(model, backend="minitvm"): compiled graphs match eager; graphs it cannot
compile fall back to eager with one warning per reason."""

from __future__ import annotations

import warnings

import pytest

torch = pytest.importorskip("torch", reason="torch.compile needs `torch`")

from frontend_models import bert_layer, mobilenet_v2, resnet18  # noqa: E402

from minitvm.contrib import torch_backend  # noqa: E402


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()
    torch_backend.fallback_reasons.clear()
    yield
    torch._dynamo.reset()


def compiled_matches_eager(model, args):
    c = torch.compile(model, backend="minitvm")
    with torch.no_grad():
        out = c(*args)
        ref = model(*args)
    torch.testing.assert_close(out, ref, rtol=1e-4, atol=1e-4)
    return c


@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v2", "bert_layer"])
def test_models_match_eager(name):
    if name == "bert_layer":
        args = (torch.randn(2, 16, 64), torch.ones(2, 16))
        model = bert_layer()
    else:
        args = (torch.randn(1, 3, 64, 64),)
        model = {"resnet18": resnet18, "mobilenet_v2": mobilenet_v2}[name]()
    c = compiled_matches_eager(model, args)
    assert torch_backend.fallback_reasons == []
    with torch.no_grad():  # a second call reuses the compiled graph
        torch.testing.assert_close(c(*args), model(*args), rtol=1e-4, atol=1e-4)


def test_backend_is_registered_by_name():
    from torch._dynamo import list_backends

    assert "minitvm" in list_backends(exclude_tags=())


class Breaks(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(8, 8)
        self.b = torch.nn.Linear(8, 4)

    def forward(self, x):
        y = torch.relu(self.a(x))
        if y.sum().item() > 0:  # data-dependent: Dynamo breaks the graph here
            y = y * 2
        return self.b(y)


def test_graph_break_compiles_both_sides():
    model = Breaks().eval()
    compiled_matches_eager(model, (torch.randn(3, 8),))
    assert torch_backend.fallback_reasons == []


class Unsupported(torch.nn.Module):
    def forward(self, x):
        return torch.special.i1e(x) + 1


def test_unsupported_graph_falls_back_with_one_warning():
    model = Unsupported().eval()
    c = torch.compile(model, backend="minitvm")
    with pytest.warns(RuntimeWarning, match="running this graph eagerly.*i1e"):
        with torch.no_grad():
            out = c(torch.rand(2, 5))
    torch.testing.assert_close(out, model(torch.rand(2, 5)) * 0 + out)  # ran, right shape
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the same reason is not repeated
        with torch.no_grad():
            x = torch.rand(4, 5)
            torch.testing.assert_close(c(x), model(x))


def test_training_graph_falls_back():
    model = torch.nn.Linear(4, 2)
    c = torch.compile(model, backend="minitvm")
    x = torch.randn(3, 4)
    with pytest.warns(RuntimeWarning, match="training graph"):
        out = c(x)
    out.sum().backward()  # autograd still works: the graph ran eagerly
    assert model.weight.grad is not None


def test_new_shapes_are_compiled_per_shape():
    """Dynamo's dynamic-shape recompile hands over symbolic sizes: compiled per shape."""
    model = torch.nn.Sequential(torch.nn.Linear(6, 4), torch.nn.GELU()).eval()
    c = torch.compile(model, backend="minitvm")
    with torch.no_grad():
        for batch in (2, 3, 5, 3):
            x = torch.randn(batch, 6)
            torch.testing.assert_close(c(x), model(x), rtol=1e-4, atol=1e-4)
    assert torch_backend.fallback_reasons == []


def test_gpt_shaped_matches_eager():
    from frontend_models import gpt

    compiled_matches_eager(gpt(), (torch.randint(0, 100, (2, 16)),))
    assert torch_backend.fallback_reasons == []

"""relax.frontend.torch.from_exported_program: MLP / ResNet-block / attention models exported
with torch.export and a dynamic batch ``Dim`` import with a symbolic batch var, build once and
match PyTorch eager at two batch sizes; keep_params_as_input; errors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the PyTorch importer needs `torch`")

import minitvm as tvm  # noqa: E402
from minitvm import relax, tir  # noqa: E402
from minitvm.relax.frontend.torch import (  # noqa: E402
    OpNotImplemented,
    from_exported_program,
    supported_ops,
)

from .torch_models import Attention, randomize_bn  # noqa: E402

nn = torch.nn
Dim = torch.export.Dim


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2, self.fc3 = nn.Linear(12, 32), nn.Linear(32, 32), nn.Linear(32, 5)

    def forward(self, x):
        x = torch.relu(self.fc1(x))
        x = torch.sigmoid(self.fc2(x)) * x
        return torch.log_softmax(self.fc3(x), dim=-1)


class ResBlock(nn.Module):
    def __init__(self, cin=3, c=8):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, c, 3, 2, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(c)
        self.conv2 = nn.Conv2d(c, c, 3, 1, 1)
        self.bn2 = nn.BatchNorm2d(c)
        self.down = nn.Conv2d(cin, c, 1, 2)
        self.fc = nn.Linear(c, 10)

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        y = torch.relu(self.bn2(self.conv2(y)) + self.down(x))
        y = nn.functional.max_pool2d(y, 2, 2)
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(y, 1), 1))


def export(model, example, dynamic=True):
    shapes = {"x": {0: Dim("batch", min=1, max=64)}} if dynamic else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.export.export(model, (example,), dynamic_shapes=shapes)


CASES = {"mlp": (MLP, (12,)), "resnet_block": (ResBlock, (3, 16, 16)),
         "attention": (Attention, (6, 16))}


@pytest.mark.parametrize("name", list(CASES))
def test_dynamic_batch_model_matches_eager(name):
    torch.manual_seed(0)
    cls, tail = CASES[name]
    model = randomize_bn(cls())
    mod = from_exported_program(export(model, torch.randn(2, *tail)))
    dims = mod["main"].params[0].struct_info.shape.values
    assert isinstance(dims[0], tir.Var) and dims[0].dtype == "int64"
    assert [int(d) for d in dims[1:]] == list(tail)
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    for b in (1, 5):
        x = torch.randn(b, *tail)
        out = vm["main"](x.numpy())
        assert len(out) == 1  # a tuple of the program's outputs, as TVM returns
        with torch.no_grad():
            ref = model(x).numpy()
        np.testing.assert_allclose(out[0].numpy(), ref, rtol=1e-4, atol=1e-4)


def test_printed_form_and_unwrap():
    torch.manual_seed(0)
    mod = from_exported_program(export(MLP().eval(), torch.randn(2, 12)),
                                unwrap_unit_return_tuple=True)
    text = mod.script()
    sym = mod["main"].params[0].struct_info.shape.values[0].name
    assert f'def main(x: R.Tensor(("{sym}", 12), dtype="float32")) -> ' \
           f'R.Tensor(("{sym}", 5), dtype="float32"):' in text
    assert f"{sym} = T.int64()" in text
    assert "R.nn.log_softmax(" in text and "R.sigmoid(" in text


def test_static_program_and_keep_params_as_input():
    torch.manual_seed(0)
    model = MLP().eval()
    mod = from_exported_program(export(model, torch.randn(3, 12), dynamic=False),
                                keep_params_as_input=True)
    main = mod["main"]
    assert [int(d) for d in main.params[0].struct_info.shape.values] == [3, 12]
    assert main.attrs["num_input"] == 1 and len(main.params) == 7
    assert [p.name_hint for p in main.params[1:3]] == ["fc1_weight", "fc1_bias"]
    mod, params = relax.frontend.detach_params(mod)
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    x = torch.randn(3, 12)
    out = vm["main"](x.numpy(), *params["main"])[0].numpy()
    with torch.no_grad():
        np.testing.assert_allclose(out, model(x).numpy(), rtol=1e-4, atol=1e-5)


class Various(nn.Module):
    """Ops beyond the three models: cat, slicing, select, split, clamp, pooling, mean."""

    def forward(self, x):
        a, b = x.split([1, 2], dim=1)
        y = torch.cat([b, a * 2.0], dim=1)[:, :, 1:, ::2]
        y = nn.functional.avg_pool2d(torch.clamp(y, -0.5, 0.7), 2)
        z = y.select(1, 0).unsqueeze(1) - y.mean(dim=(2, 3), keepdim=True)
        return torch.tanh(z).permute(0, 2, 3, 1).reshape(x.shape[0], -1)


def test_various_ops_match_eager():
    model = Various().eval()
    mod = from_exported_program(export(model, torch.randn(2, 3, 9, 8)))
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    for b in (1, 3):
        x = torch.randn(b, 3, 9, 8)
        with torch.no_grad():
            ref = model(x).numpy()
        np.testing.assert_allclose(vm["main"](x.numpy())[0].numpy(), ref, rtol=1e-4,
                                   atol=1e-5)


class MobileBlock(nn.Module):
    """MobileNetV2/V3 pieces: depthwise conv, hardswish / hardsigmoid squeeze-excite, padding,
    nearest upsampling, ELU, softplus, cumsum."""

    def __init__(self, c=8):
        super().__init__()
        self.expand = nn.Conv2d(3, c, 1)
        self.dw = nn.Conv2d(c, c, 3, 1, 1, groups=c)
        self.se1, self.se2 = nn.Linear(c, 4), nn.Linear(4, c)

    def forward(self, x):
        y = nn.functional.hardswish(self.dw(self.expand(x)))
        s = nn.functional.hardsigmoid(self.se2(torch.relu(self.se1(y.mean((2, 3))))))
        y = y * s[:, :, None, None]
        y = nn.functional.pad(y, (1, 0, 0, 2), value=0.5)
        y = nn.functional.interpolate(y, scale_factor=2, mode="nearest")
        return nn.functional.elu(y).cumsum(1) + nn.functional.softplus(y)


def test_mobile_block_matches_eager():
    torch.manual_seed(0)
    model = MobileBlock().eval()
    mod = from_exported_program(export(model, torch.randn(2, 3, 6, 6)))
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    for b in (1, 3):
        x = torch.randn(b, 3, 6, 6)
        with torch.no_grad():
            ref = model(x).numpy()
        np.testing.assert_allclose(vm["main"](x.numpy())[0].numpy(), ref, rtol=1e-4,
                                   atol=1e-5)


def test_unsupported_ops_are_listed_at_once():
    class Bad(nn.Module):
        def forward(self, x):
            return torch.special.i1(x) + torch.special.i1e(x) + torch.special.i1(x * 2)

    with pytest.raises(OpNotImplemented, match=r"special_i1\.default \(x2\), "
                                               r"special_i1e\.default \(x1\)"):
        from_exported_program(export(Bad(), torch.randn(3, 4), dynamic=False))


def test_saved_pt2_file(tmp_path):
    torch.manual_seed(0)
    model = MLP().eval()
    path = tmp_path / "mlp.pt2"
    torch.export.save(export(model, torch.randn(2, 12)), str(path))
    mod = from_exported_program(str(path), unwrap_unit_return_tuple=True)
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    x = torch.randn(3, 12)
    with torch.no_grad():
        np.testing.assert_allclose(vm["main"](x.numpy()).numpy(), model(x).numpy(), rtol=1e-4,
                                   atol=1e-5)
    bad = tmp_path / "bad.pt2"
    bad.write_bytes(b"not a zip archive")
    with pytest.raises(ValueError, match="cannot read exported program"):
        from_exported_program(str(bad))


def test_bad_input_type():
    with pytest.raises(TypeError, match="expects a torch.export.ExportedProgram"):
        from_exported_program(nn.Linear(2, 2))


def test_supported_ops_cover_the_models():
    need = {"convolution.default", "addmm.default", "linear.default", "matmul.default",
            "_native_batch_norm_legit_no_training.default", "native_layer_norm.default",
            "max_pool2d_with_indices.default", "_softmax.default", "view.default",
            "permute.default", "gelu.default", "relu.default", "sym_size.int"}
    assert need <= set(supported_ops())


class RepeatToBatch(nn.Module):
    """DETR's learned queries repeated to the run-time batch, and a row repeated twice."""

    def __init__(self):
        super().__init__()
        self.query = nn.Parameter(torch.randn(4, 6))

    def forward(self, x):
        q = self.query.unsqueeze(0).repeat(x.shape[0], 1, 2)  # (batch, 4, 12)
        return x + q + x[:, :1].repeat(1, 4, 1)


def test_repeat_by_the_symbolic_batch_broadcasts():
    """``repeat`` with a count that is the batch's symbolic size: a broadcast of (1, d) to
    (r, d) per axis, merged (tile needs static counts: it failed, 'int() ... not Var')."""
    torch.manual_seed(0)
    model = RepeatToBatch()
    ep = export(model, torch.randn(2, 4, 12))
    mod = from_exported_program(ep)
    text = mod["main"].script()
    assert "broadcast_to" in text and "R.tile" in text  # (the static repeat stays a tile)
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    for b in (1, 3):
        x = torch.randn(b, 4, 12)
        with torch.no_grad():
            ref = model(x).numpy()
        np.testing.assert_allclose(vm["main"](x.numpy())[0].numpy(), ref, rtol=1e-6)


class BagPerRow(nn.Module):
    """``nn.EmbeddingBag`` of a (batch, 6) input: torch flattens it to batch * 6 ids with
    offsets ``arange(0, batch * 6, 6)``, both of symbolic length under a batch Dim."""

    def __init__(self, mode):
        super().__init__()
        self.bag = nn.EmbeddingBag(30, 5, mode=mode)

    def forward(self, x):
        return self.bag(x)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_of_a_symbolic_batch(mode):
    """Each id's bag counted from the offsets at run time (it needed a static number of ids)."""
    torch.manual_seed(0)
    model = BagPerRow(mode)
    mod = from_exported_program(export(model, torch.randint(0, 30, (2, 6))))
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    for b in (1, 3):
        x = torch.randint(0, 30, (b, 6))
        with torch.no_grad():
            ref = model(x).numpy()
        np.testing.assert_allclose(vm["main"](x.numpy())[0].numpy(), ref, rtol=1e-5,
                                   atol=1e-6)


class ConvInstanceNorm(nn.Module):
    def __init__(self, affine):
        super().__init__()
        self.conv, self.norm = nn.Conv2d(3, 4, 3), nn.InstanceNorm2d(4, affine=affine)

    def forward(self, x):
        return self.norm(self.conv(x))


@pytest.mark.parametrize("affine", [False, True])
def test_instance_norm_of_a_symbolic_batch(affine):
    """InstanceNorm2d decomposes to a batch norm over (1, batch * C, H, W): with no affine
    weights the normalization is written out, the channels being symbolic (it failed: 'a norm
    without affine weights needs a static channel dim'); with them, the repeated weights."""
    torch.manual_seed(0)
    model = ConvInstanceNorm(affine)
    if affine:
        with torch.no_grad():
            model.norm.weight.uniform_(0.5, 1.5)
            model.norm.bias.uniform_(-0.5, 0.5)
    mod = from_exported_program(export(model, torch.randn(2, 3, 8, 8)))
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    for b in (1, 3):
        x = torch.randn(b, 3, 8, 8)
        with torch.no_grad():
            ref = model(x).numpy()
        np.testing.assert_allclose(vm["main"](x.numpy())[0].numpy(), ref, rtol=1e-4,
                                   atol=1e-5)

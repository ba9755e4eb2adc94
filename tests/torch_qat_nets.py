"""Small nets made quantization-aware by torch.ao's eager workflow (fuse, ``prepare_qat``,
observers run on two batches of ``shape`` then disabled), shared by the Relay and Relax
torch importers' QAT tests. Call only where torch is installed."""

import torch
import torch.nn.functional as F


def qat_mobile_net(shape):
    """A 16-channel depthwise + pointwise + linear net made quantization-aware by torch.ao's eager
    workflow (eval-mode conv + BN + ReLU fusion, ``prepare_qat`` with the qnnpack qconfig,
    observers run on two batches then disabled): FakeQuantize modules calling
    ``fake_quantize_per_tensor_affine`` with their scale / zero point buffers."""
    import torch.ao.quantization as tq
    from torch import nn

    def cbr(cin, cout, k, groups=1):
        return nn.Sequential(nn.Conv2d(cin, cout, k, 1, k // 2, groups=groups, bias=False),
                             nn.BatchNorm2d(cout), nn.ReLU())

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.quant, self.dequant = tq.QuantStub(), tq.DeQuantStub()
            self.features = nn.Sequential(cbr(16, 16, 3, 16), cbr(16, 32, 1))
            self.fc = nn.Linear(32, 10)

        def forward(self, x):
            x = self.features(self.quant(x))
            return self.dequant(self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1)))

    m = Net().eval()
    for block in m.features:
        tq.fuse_modules(block, [["0", "1", "2"]], inplace=True)
    m.train()
    m.qconfig = tq.get_default_qat_qconfig("qnnpack", version=0)
    tq.prepare_qat(m, inplace=True)
    with torch.no_grad():
        for _ in range(2):
            m(torch.randn(4, *shape[1:]))
    m.apply(tq.disable_observer)
    return m.eval()


def default_qconfig_qat_net(shape, observe: bool = False):
    """A conv -> depthwise -> pointwise -> linear net through torch.ao's default QAT qconfig
    (x86: ``FusedMovingAvgObsFakeQuantize``, whose forward is one
    ``fused_moving_avg_obs_fake_quant``; activations over 0..127), observers left on when
    ``observe`` (a model in training) else disabled."""
    import torch.ao.quantization as tq
    from torch import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.quant, self.dequant = tq.QuantStub(), tq.DeQuantStub()
            self.features = nn.Sequential(
                nn.Sequential(nn.Conv2d(16, 16, 3, 1, 1), nn.ReLU()),
                nn.Sequential(nn.Conv2d(16, 16, 3, 1, 1, groups=16), nn.ReLU()),
                nn.Sequential(nn.Conv2d(16, 32, 1), nn.ReLU()))
            self.fc = nn.Linear(32, 10)

        def forward(self, x):
            x = self.features(self.quant(x))
            return self.dequant(self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1)))

    m = Net().eval()
    for block in m.features:
        tq.fuse_modules(block, [["0", "1"]], inplace=True)
    m.train()
    m.qconfig = tq.get_default_qat_qconfig("x86")
    tq.prepare_qat(m, inplace=True)
    with torch.no_grad():
        for _ in range(2):
            m(torch.randn(4, *shape[1:]))
    if not observe:
        m.apply(tq.disable_observer)
    return m.eval()

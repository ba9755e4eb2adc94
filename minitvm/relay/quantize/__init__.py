"""tvm.relay.quantize: post-training int8 quantization of conv2d and dense layers.

``with relay.quantize.qconfig(global_scale=8.0, skip_conv_layers=[0]): mod =
relay.quantize.quantize(mod, params)`` rewrites every conv2d/dense (but the skipped convs) into
``dequantize(qnn.conv2d(quantize(x), quantize(w)))``: activations quantized with TVM's
"global_scale" calibration (scale ``global_scale / 2^(nbit-1)``), weights with a power-of-two
max scale ("power2"), accumulation in int32. The realized program is plain Relay and qnn ops,
canonicalized to integer code by relay.build.

Not implemented: the "kl_divergence" / "percentile" calibration on a dataset (asking for them is
a clear error) and TVM's annotate/calibrate/realize pass objects.
"""

from .quantize import QConfig, current_qconfig, qconfig, quantize  # noqa: F401

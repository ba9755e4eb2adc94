"""tvm.relay.quantize: TVM's automatic post-training quantization.

``with relay.quantize.qconfig(global_scale=8.0, skip_conv_layers=[0]): mod =
relay.quantize.quantize(mod, params, dataset)`` runs prerequisite_optimize, then the three
passes of TVM's flow: ``annotate()`` (simulated_quantize calls where values enter the integer
domain), ``calibrate(dataset)`` (scales: "global_scale", or "kl_divergence" / "percentile" over
a dataset; weights "power2" or "max") and ``realize()`` (integer Relay: int8 conv2d/dense/
batch_matmul accumulating in int32, shifts for power-of-two rescaling, float at the edges).

Not implemented: ``partition_conversions`` other than "disabled" (a clear error), TVM's
QuantizePartition pass object (its effect is folded into annotate) and ``calibrate_chunk_by``
(the dataset is processed in one go).
"""

from .annotate import (  # noqa: F401
    QAnnotateKind, annotate, attach_simulated_quantize, kind2str, simulated_quantize,
)
from .calibrate import calibrate  # noqa: F401
from .quantize import (  # noqa: F401
    QConfig, current_qconfig, prerequisite_optimize, qconfig, quantize,
)
from .realize import realize  # noqa: F401

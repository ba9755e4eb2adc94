"""qnn.batch_matmul and qnn.conv2d_transpose: types, integer numerics against numpy on the
shifted operands, the canonical lowering (relay.build runs QnnCanonicalize) equal to the
reference, and the text round trip."""

import numpy as np
import pytest
from relay_op_check import run

from minitvm import relay
from minitvm.topi import testing as tt

RNG = np.random.default_rng(9)


def test_qnn_batch_matmul():
    x = RNG.integers(-128, 127, (2, 3, 5)).astype("int8")
    y = RNG.integers(0, 255, (2, 4, 5)).astype("uint8")
    got = run(lambda a, b: relay.qnn.op.batch_matmul(a, b, 3, 128, 0.5, 0.25), x, y)
    want = np.matmul(x.astype(np.int64) - 3, np.swapaxes(y.astype(np.int64) - 128, 1, 2))
    np.testing.assert_array_equal(got, want)
    assert got.dtype == np.int32
    with pytest.raises(Exception, match="qnn.batch_matmul: the x must be int8"):
        run(lambda a, b: relay.qnn.op.batch_matmul(a, b, 0, 0, 1.0, 1.0),
            x.astype("float32"), y)


def test_qnn_conv2d_transpose():
    x = RNG.integers(0, 255, (1, 3, 4, 5)).astype("uint8")
    w = RNG.integers(-100, 100, (3, 2, 3, 3)).astype("int8")
    got = run(lambda a, b: relay.qnn.op.conv2d_transpose(
        a, b, 120, 2, 0.1, 0.2, kernel_size=(3, 3), channels=2, strides=(2, 2),
        padding=(1, 1), output_padding=(1, 1)), x, w)
    want = tt.conv2d_transpose_nchw_python(x.astype("float64") - 120, w.astype("float64") - 2,
                                           (2, 2), (1, 1), (1, 1))
    np.testing.assert_array_equal(got, np.round(want).astype("int32"))
    with pytest.raises(Exception, match="qnn.conv2d_transpose: the kernel zero point must be"):
        run(lambda a, b: relay.qnn.op.conv2d_transpose(
            a, b, 0, relay.const(0.0), 1.0, 1.0, kernel_size=(3, 3), channels=2), x, w)

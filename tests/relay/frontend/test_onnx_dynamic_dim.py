"""The ONNX importer's view of a dynamic (relay.Any()) dimension: ``DynamicDim`` and the
reshape targets it allows (no ``onnx`` package needed)."""

from __future__ import annotations

import numpy as np
import pytest

from minitvm.relay.frontend.common import ImportError_
from minitvm.relay.frontend.onnx.dynamic_dim import DynamicDim, has_dynamic, relay_dims
from minitvm.relay.frontend.onnx.ops_tensor import dynamic_reshape_target


def test_dynamic_dim_refuses_arithmetic_and_equals_only_dynamic_dims():
    d = DynamicDim(0)
    shape = (d, 3, 4)
    assert has_dynamic(shape) and not has_dynamic(shape[1:])
    assert 0 not in shape and shape[0] != 1 and shape == (DynamicDim(0), 3, 4)
    assert str(relay_dims(shape)) == "(?, 3, 4)"
    for bad in (lambda: int(d), lambda: d * 2, lambda: np.prod(shape), lambda: d < 3):
        with pytest.raises(ImportError_, match="static size of axis 0.*relay.Any"):
            bad()


def test_dynamic_reshape_target_copies_or_infers_the_dynamic_axis():
    shape = (DynamicDim(0), 2, 6)
    assert dynamic_reshape_target(shape, [0, 12]) == [0, 12]
    assert dynamic_reshape_target(shape, [-1, 4, 3]) == [-1, 4, 3]
    with pytest.raises(ValueError, match=r"dynamic axes \[0\] are neither copied"):
        dynamic_reshape_target(shape, [3, 4, 2])

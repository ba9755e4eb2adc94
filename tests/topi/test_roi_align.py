"""Native compute of vision.roi_align (``topi.roi_align``) matches the numpy reference for boxes
inside, across and past the image, both modes and layouts, several sample ratios; an adaptive ratio says
it has no native compute."""

import numpy as np
import pytest

import minitvm
from minitvm import relay
from minitvm.backend.fallback import NativeFallbackError
from minitvm.contrib import graph_executor

DATA = np.random.default_rng(0).standard_normal((2, 4, 12, 10)).astype("float32")
ROIS = np.array([[1, 2.0, 1.0, 8.0, 5.0],      # inside
                 [0, -3.0, -2.0, 14.0, 16.0],  # across the borders
                 [1, 9.5, 11.0, 9.7, 11.2],    # smaller than a pixel, at the last one
                 [0, 0, 0, 30, 30]], "float32")  # mostly past the image


def _expr(ratio, mode, layout="NCHW"):
    shape = DATA.shape if layout == "NCHW" else DATA.transpose(0, 2, 3, 1).shape
    return relay.vision.roi_align(relay.var("d", shape=shape), relay.var("r", shape=ROIS.shape),
                                  (3, 2), 0.75, ratio, mode=mode, layout=layout)


def _strict_build(expr):
    mod = minitvm.IRModule.from_expr(relay.Function(relay.analysis.free_vars(expr), expr))
    with minitvm.transform.PassContext(opt_level=3,
                                       config={"relay.backend.strict_native": True}):
        return mod, relay.build(mod, target="llvm")


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("ratio", [1, 2, 3])
@pytest.mark.parametrize("mode", ["avg", "max"])
def test_roi_align_matches_the_reference(mode, ratio, layout):
    data = DATA if layout == "NCHW" else DATA.transpose(0, 2, 3, 1).copy()
    mod, lib = _strict_build(_expr(ratio, mode, layout))
    m = graph_executor.GraphModule(lib["default"](minitvm.cpu()))
    m.set_input("d", data)
    m.set_input("r", ROIS)
    m.run()
    with minitvm.transform.PassContext(opt_level=0):
        want = relay.create_executor("debug", mod, target="llvm").evaluate()(data, ROIS)
    np.testing.assert_allclose(m.get_output(0).numpy(), want.numpy(), rtol=1e-5, atol=1e-5)


def test_adaptive_sample_ratio_has_no_native_compute():
    with pytest.raises(NativeFallbackError, match="fixed sample_ratio > 0"):
        _strict_build(_expr(-1, "avg"))

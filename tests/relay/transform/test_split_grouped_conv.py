"""SplitGroupedConv: a conv of two or three groups of at least 32 channels each becomes one
groups-1 conv per group on its input-channel slice, concatenated; its weight a constant
(sliced here) or computed in the graph (sliced by strided_slice). Other convs are left
alone. Numerics against the unsplit build, every kernel native."""

from __future__ import annotations

import numpy as np
import pytest
from pass_test_util import infer, run_pass

import minitvm as tvm
from minitvm import relay
from minitvm.relay.transform import SplitGroupedConv
from minitvm.relay.transform.split_grouped_conv import split_grouped_conv


def _rng():
    return np.random.default_rng(0)


def _conv(c=64, o=64, hw=8, groups=2, k=3, stride=1, dynamic=False):
    """A grouped conv + bias on (1, c, hw, hw); the weight a constant or the input ``w``."""
    rng = _rng()
    x = relay.var("x", shape=(1, c, hw, hw))
    params = [x]
    if dynamic:
        w = relay.var("w", shape=(o, c // groups, k, k))
        params.append(w)
    else:
        w = relay.const(rng.standard_normal((o, c // groups, k, k)).astype("float32"))
    y = relay.nn.conv2d(x, w, strides=(stride, stride), padding=(k // 2, k // 2), channels=o,
                        kernel_size=(k, k), groups=groups)
    y = relay.nn.bias_add(y, relay.const(rng.standard_normal(o).astype("float32")))
    return relay.Function(params, y)


def _calls(f, name):
    found = []

    def visit(e):
        if isinstance(e, relay.Call) and getattr(e.op, "name", None) == name:
            found.append(e)

    relay.analysis.post_order_visit(f.body, visit)
    return found


@pytest.mark.parametrize("groups", [2, 3])
def test_one_conv_per_group_on_its_slice(groups):
    f = infer(_conv(c=32 * groups, o=32 * groups, groups=groups))
    out, n = split_grouped_conv(f)
    assert n == 1
    convs = _calls(out, "nn.conv2d")
    assert len(convs) == groups and all(int(c.attrs.groups) == 1 for c in convs)
    cat = out.body.args[0]
    assert cat.op.name == "concatenate" and int(cat.attrs.axis) == 1
    w = _calls(f, "nn.conv2d")[0].args[1].data.numpy()
    for k, conv in enumerate(cat.args[0].fields):
        np.testing.assert_array_equal(conv.args[1].data.numpy(), w[32 * k:32 * (k + 1)])
        sl = conv.args[0]
        assert sl.op.name == "strided_slice"
    assert tvm.ir.structural_equal(infer(out).ret_type, f.ret_type)


def test_computed_weight_is_sliced_in_the_graph():
    out, n = split_grouped_conv(infer(_conv(dynamic=True)))
    assert n == 1
    convs = _calls(out, "nn.conv2d")
    assert len(convs) == 2 and all(c.args[1].op.name == "strided_slice" for c in convs)


@pytest.mark.parametrize("case", [dict(groups=4), dict(c=32, o=32), dict(c=64, o=32),
                                  dict(c=48, o=48, groups=3),
                                  dict(c=64, o=64, groups=64), dict(groups=1)])
def test_other_convs_are_left_alone(case):
    f = infer(_conv(**case))
    out, n = split_grouped_conv(f)
    assert n == 0 and out is f


@pytest.mark.parametrize("case", [dict(), dict(groups=3, c=96, o=96, hw=9),
                                  dict(stride=2, k=5, hw=11), dict(dynamic=True)])
def test_numerics_match_the_unsplit_build(case):
    f = _conv(**case)
    mod = tvm.IRModule.from_expr(f)
    out = run_pass(SplitGroupedConv(), relay.transform.InferType()(mod))
    assert _calls(out["main"], "concatenate")
    rng = np.random.default_rng(1)
    feed = {p.name_hint: rng.standard_normal([int(d) for d in p.type_annotation.shape]).astype(
        "float32") for p in f.params}
    results = []
    for disabled in (["SplitGroupedConv"], []):
        with tvm.transform.PassContext(opt_level=3, disabled_pass=disabled,
                                       config={"relay.backend.strict_native": True}):
            lib = relay.build(mod, target="llvm")
        assert [k for k, v in lib.get_lib().kernels.items() if v.kind != "native"] == []
        g = tvm.contrib.graph_executor.GraphModule(lib["default"](tvm.cpu()))
        for name, value in feed.items():
            g.set_input(name, value)
        g.run()
        results.append(g.get_output(0).numpy())
    np.testing.assert_allclose(results[1], results[0], rtol=1e-4, atol=1e-4)

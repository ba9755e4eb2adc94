"""The groups fusion makes are pinned down: the shared partitioner's caches (lower bounds on the
nodes between a node and its post-dominator, sizes past ``max_depth`` remembered, one-use
fusions without path walks) must not change a single group. Each expected signature below was
recorded from the partitioner as it was before those caches (``fusion_signature``: every fused
function as its ops, in call order); a change that moves an op between groups fails here.

Also: 100,000-node chains, ladders and diamonds partition at the default recursion limit."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from fusion_signature import counted, partition_signature, relax_signature, relay_signature

import minitvm as tvm
from minitvm import relax, relay
from minitvm.transform.graph_partitioner import (
    ELEMWISE,
    INJECTIVE,
    OPAQUE,
    GraphNode,
    partition_graph,
)


# ------------------------------------------------------------------------------ the graphs
def _relay_fused(mod):
    seq = tvm.transform.Sequential([relay.transform.InferType(),
                                    relay.transform.SimplifyInference(),
                                    relay.transform.FuseOps(fuse_opt_level=2)])
    return seq(mod)


def resnet50_small():
    from minitvm.relay.testing import resnet

    mod, _ = resnet.get_workload(num_layers=50, image_shape=(3, 32, 32), num_classes=10)
    return counted(relay_signature(_relay_fused(mod)))


def bert_layer():
    from minitvm.relay.testing import bert

    mod, _ = bert.get_workload(num_layers=1, seq_len=16)
    return counted(relay_signature(_relay_fused(mod)))


def relay_ladder(n=300):
    """``x_i = x_{i-1} + x_{i-2}``: every node's post-dominator is the last one."""
    x = relay.var("x", shape=(4,))
    prev, y = x, relay.negative(x)
    for _ in range(n):
        prev, y = y, relay.add(y, prev)
    return relay_signature(_relay_fused(tvm.IRModule.from_expr(relay.Function([x], y))))


BOUNDS = np.linspace(-2.0, 2.0, 1023).astype("float32")


def relay_bucketize(steps=10):
    """DCN-v2's exported ``bucketize``: an unrolled binary search over sorted boundaries, each
    step gathering the midpoint and moving both ends with ``where`` (the ends are read twice
    per step, so the group's inlined size grows geometrically)."""
    x = relay.var("x", shape=(8,))
    bounds = relay.const(BOUNDS)
    lo = relay.zeros((8,), "int32")
    hi = relay.full(relay.const(len(BOUNDS), "int32"), (8,), "int32")
    for _ in range(steps):
        mid = relay.right_shift(relay.add(lo, hi), relay.const(1, "int32"))
        below = relay.less(relay.take(bounds, mid, axis=0, mode="clip"), x)
        lo = relay.where(below, relay.add(mid, relay.const(1, "int32")), lo)
        hi = relay.where(below, hi, mid)
    return relay_signature(_relay_fused(tvm.IRModule.from_expr(relay.Function([x], lo))))


def relax_bucketize(steps=10):
    R, bb = relax.op, relax.BlockBuilder()
    x = relax.Var("x", relax.TensorStructInfo((8,), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            bounds = relax.const(BOUNDS)
            lo = bb.emit(R.zeros((8,), "int32"))
            hi = bb.emit(R.full((8,), relax.const(len(BOUNDS), "int32"), "int32"))
            for _ in range(steps):
                mid = bb.emit(R.right_shift(R.add(lo, hi), relax.const(1, "int32")))
                below = bb.emit(R.less(R.take(bounds, mid, axis=0, mode="clip"), x))
                lo = bb.emit(R.where(below, R.add(mid, relax.const(1, "int32")), lo))
                hi = bb.emit(R.where(below, hi, mid))
            out = bb.emit_output(lo)
        bb.emit_func_output(out)
    seq = tvm.transform.Sequential([relax.transform.LegalizeOps(),
                                    relax.transform.AnnotateTIROpPattern(),
                                    relax.transform.FuseOps()])
    return relax_signature(seq(bb.get()))


def _graph(n_nodes, edges, pattern=ELEMWISE):
    order = []
    for i in range(n_nodes):
        g = GraphNode(i)
        g.index, g.pattern = i, OPAQUE if i == 0 else pattern
        order.append(g)
    for a, b in edges:
        order[a].outputs.append((order[b], pattern))
    order[-1].extern_ref = True
    return order


def _ladder(n, pattern=ELEMWISE):
    return _graph(n, [(i, j) for i in range(n) for j in (i + 1, i + 2) if j < n], pattern)


def plain_ladders():
    return "; ".join(partition_signature(partition_graph(_ladder(n, p), 2, depth))
                     for n, p, depth in ((600, ELEMWISE, 256), (600, INJECTIVE, 256),
                                         (100, ELEMWISE, 7)))


# ------------------------------------------------------------------- recorded signatures
EXPECTED = {
    'resnet50_small': [
        '1 add+sqrt+divide+expand_dims+multiply+negative+multiply+add+expand_dims+add',
        '37 add+sqrt+divide+multiply',
        '12 add+sqrt+divide+multiply+expand_dims+multiply+negative+multiply+add+expand_dims+add+nn.relu',
        '1 nn.batch_flatten',
        '4 nn.conv2d',
        '12 nn.conv2d+add',
        '4 nn.conv2d+add+expand_dims+multiply+negative+multiply+add+expand_dims+add+nn.relu',
        '33 nn.conv2d+expand_dims+multiply+negative+multiply+add+expand_dims+add+nn.relu',
        '1 nn.dense+nn.bias_add',
        '1 nn.global_avg_pool2d',
        '1 nn.softmax',
    ],
    'bert_layer': [
        '2 mean',
        '1 nn.batch_matmul',
        '1 nn.batch_matmul+multiply',
        '3 nn.dense+nn.bias_add',
        '2 nn.dense+nn.bias_add+add',
        '1 nn.dense+nn.bias_add+multiply+multiply+erf+add+multiply',
        '1 nn.softmax',
        '1 reshape',
        '4 reshape+transpose+reshape',
        '1 subtract+add+sqrt+divide+multiply+add',
        '1 subtract+add+sqrt+divide+multiply+add+reshape',
        '2 variance',
    ],
    'relay_ladder': 'negative | add*289 | add+add+add+add+add+add+add+add+add+add+add',
    'relay_bucketize': (
        'zeros | full | add+right_shift | take+less | add+where | where | add+right_shift | '
        'take+less | add+where | where | add+right_shift | take+less | add+where | where | '
        'add+right_shift | take+less | add+where | where | add+right_shift | take+less | '
        'add+where | where | add+right_shift | take+less | add+where | where | add+right_shift | '
        'take+less | add+where | where | add+right_shift | take+less+add+where+where+add+right_sh'
        'ift+take+less+add+where+where+add+right_shift+take+less+add+where'
    ),
    'relax_bucketize': (
        'add+right_shift | take+less | add+where | add+right_shift | take+less | add+where | '
        'add+right_shift | take+less | add+where | add+right_shift | take+less | add+where | '
        'add+right_shift | take+less | add+where | add+right_shift | take+less | add+where | '
        'add+right_shift | take+less | add+where | add+right_shift | take+less | add+where | '
        'add+right_shift | take+less | add+where | add+right_shift | take+less | add+where'
    ),
    'plain_ladders': '1*589 | 11; 1*589 | 11; 1*93 | 7',
}
EXPECTED_LADDER_100K = '1*99989 | 11'
GRAPHS = {"resnet50_small": resnet50_small, "bert_layer": bert_layer,
          "relay_ladder": relay_ladder, "relay_bucketize": relay_bucketize,
          "relax_bucketize": relax_bucketize, "plain_ladders": plain_ladders}


@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_partition_is_unchanged(name):
    assert GRAPHS[name]() == EXPECTED[name]


# ------------------------------------------------------------------- 100,000-node graphs
def test_hundred_thousand_node_ladder_and_chain():
    limit = sys.getrecursionlimit()
    ladder = partition_graph(_ladder(100_000), 2, 256)
    # nothing but the last few nodes fuses: every node's post-dominator is the last node
    assert partition_signature(ladder) == EXPECTED_LADDER_100K
    chain = partition_graph(_graph(100_000, [(i, i + 1) for i in range(99_999)]), 2, 256)
    assert partition_signature(chain) == "1 | 256*390 | 159"
    assert sys.getrecursionlimit() == limit

"""Parallel kernel compilation probes with its cheapest kernels (``backend.parallel_compile.
probe_order``, ``te_compiler.compile_cost``): the kernels compiled here before the workers start
(to tell a cold build from a warm one) are short ones, not a model's biggest kernel that
happens to come first in the graph (a 7x7 stem conv)."""

import os

import numpy as np
import pytest

import minitvm as tvm
from minitvm import codegen, relay
from minitvm.backend import clear_cache, disk_cache, parallel_compile
from minitvm.relay.backend.te_compiler import compile_cost, distinct_tasks


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    d = tmp_path / "cache"
    monkeypatch.setenv("MINITVM_CACHE_DIR", str(d))
    monkeypatch.delenv("MINITVM_DISABLE_DISK_CACHE", raising=False)
    clear_cache()
    codegen.clear_cache()
    yield d
    clear_cache()
    codegen.clear_cache()


def test_probe_order_moves_the_cheapest_first_and_keeps_the_rest():
    groups = [["a"], ["b", "b2"], ["c"], ["d"], ["e"], ["f"]]
    cost = {"a": 9, "b": 1, "c": 7, "d": 1, "e": 8, "f": 0}
    assert parallel_compile.PROBES == 3
    assert parallel_compile.probe_order(groups, lambda t: cost[t]) == \
        [["f"], ["b", "b2"], ["d"], ["a"], ["c"], ["e"]]
    assert parallel_compile.probe_order(groups, None) == groups
    assert parallel_compile.probe_order([], lambda t: 0) == []


def test_run_sharded_probes_with_the_cheapest_group(cache_dir, tmp_path):
    parent = os.getpid()
    here = []
    done = tmp_path / "done"
    done.mkdir()

    def run_one(k):
        if os.getpid() == parent:  # (and whether the worker had finished it: a reload here)
            here.append((k, (done / str(k)).exists()))
        disk_cache.get_cache().put(f"order{k}", b"code", "")  # compiled: a cold build
        (done / str(k)).write_text("")

    with tvm.transform.PassContext(config={"relay.backend.compile_jobs": 2}):
        n = parallel_compile.run_sharded(list(range(12)), run_one, group=lambda k: k,
                                         cost=lambda k: 12 - k)
    assert n == 1
    assert here[0] == (11, False)  # the probe, run before forking: the cheapest, not task 0
    assert sorted(int(p.name) for p in done.iterdir()) == list(range(12))
    # the rest in queue order (the other two cheapest first, then 0..8), shared with the worker
    queue = [10, 9, *range(9)]
    own = [k for k, reloaded in here[1:] if not reloaded]
    assert own == sorted(own, key=queue.index)
    # and every group the worker finished ran here too, after it reported it (its code loaded)
    assert sorted(k for k, _ in here) == list(range(12))


def _fn(body_of):
    x = relay.var("x", shape=(1, 8, 16, 16))
    body = body_of(x)
    mod = relay.transform.InferType()(tvm.IRModule.from_expr(
        relay.Function(relay.analysis.free_vars(body), body)))
    return mod["main"]


def _conv(k):
    w = relay.const(np.zeros((8, 8, k, k), "float32"))
    return lambda x: relay.nn.relu(relay.nn.conv2d(x, w, padding=(k // 2, k // 2)))


def test_compile_cost_ranks_wide_windows_first():
    costs = [compile_cost(_fn(f)) for f in (
        _conv(7), _conv(3), _conv(1),
        lambda x: relay.nn.dense(relay.reshape(x, (1, -1)),
                                 relay.const(np.zeros((4, 2048), "float32"))),
        relay.nn.relu)]
    assert costs == sorted(costs, reverse=True) and len(set(costs)) == len(costs)
    assert costs[-1] == 1.0  # elementwise: the base cost


def test_prefetch_lowers_each_repeated_function_once():
    """An unrolled RNN calls one cell hundreds of times: the prefetch keeps one task per
    function object and per known structural hash, each with its constant inputs."""
    a, b, c = _fn(relay.nn.relu), _fn(relay.nn.relu), _fn(relay.tanh)
    none, w = frozenset(), frozenset({1})
    funcs = [(a, none), (a, none), (b, none), (c, none), (a, w), (c, none), (b, w)]
    # without hashes: repeats of the same object go, structurally equal objects stay
    assert distinct_tasks(funcs, {}) == [(a, none), (b, none), (c, none), (a, w), (b, w)]
    # equal functions under one hash: the first of each (hash, const inputs) only
    hashes = {id(a): ("label", "r"), id(b): ("label", "r"), id(c): ("label", "t")}
    assert distinct_tasks(funcs, hashes) == [(a, none), (c, none), (a, w)]

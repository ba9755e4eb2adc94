"""ir.fingerprint: an exact digest (names, constants' bytes, sharing) in one iterative pass."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay, tir
from minitvm.ir.fingerprint import Unfingerprintable, fingerprint
from minitvm.ir.structural import structural_hash


def _fn(name="x", const=(1.0, 2.0, 3.0), axis=1, dtype="float32"):
    x = relay.var(name, shape=(2, 3), dtype=dtype)
    c = relay.const(np.array(const, dtype))
    y = relay.nn.softmax(relay.add(x, c), axis=axis)
    return tvm.IRModule.from_expr(relay.Function([x], y))


def test_equal_programs_built_twice_share_a_fingerprint():
    assert fingerprint(_fn()) == fingerprint(_fn())
    assert len(fingerprint(_fn())) == 64


@pytest.mark.parametrize("other", [
    dict(const=(1.0, 2.0, 3.5)),   # one constant element
    dict(axis=0),                  # one attribute
    dict(name="y"),                # a variable's name (the graph's input names follow it)
    dict(dtype="float64"),         # a type
])
def test_any_difference_changes_the_fingerprint(other):
    assert fingerprint(_fn()) != fingerprint(_fn(**other))


def test_alpha_equivalent_programs_differ_but_hash_alike():
    # structural_hash identifies them; the fingerprint keeps the names
    a, b = _fn("x"), _fn("y")
    assert structural_hash(a) == structural_hash(b)
    assert fingerprint(a) != fingerprint(b)


def test_inferred_types_are_left_out():
    mod = _fn()
    before = fingerprint(mod)
    relay.transform.InferType()(mod)  # fills checked types of the input's nodes in place
    assert fingerprint(mod) == before


def test_leaves_of_different_types_differ():
    values = [1, 1.0, True, "1", None, (1,), [1], {"a": 1}, np.float32(1), tir.IntImm("int32", 1),
              tir.IntImm("int64", 1), tir.FloatImm("float32", 1.0), np.ones(1, "float32"),
              np.ones(1, "float64"), tvm.nd.array(np.ones(1, "float32"))]
    prints = [fingerprint(v) for v in values]
    assert len(set(prints[:-1])) == len(prints) - 1
    assert prints[-1] == prints[-3]  # an NDArray digests like the array it holds


def test_nan_and_signed_zero_constants():
    nan = fingerprint(relay.const(np.array([np.nan], "float32")))
    assert nan == fingerprint(relay.const(np.array([np.nan], "float32")))
    assert fingerprint(relay.const(np.array([0.0], "float32"))) != \
        fingerprint(relay.const(np.array([-0.0], "float32")))


def test_sharing_is_written_once():
    x = relay.var("x", shape=(1,))
    shared = relay.add(x, x)
    dag = relay.Tuple([shared, shared])
    tree = relay.Tuple([relay.add(x, x), relay.add(x, x)])
    assert fingerprint(dag) == fingerprint(relay.Tuple([shared, shared]))
    assert fingerprint(dag) != fingerprint(tree)  # exact: sharing is part of it


def test_strings_cannot_forge_separators():
    assert fingerprint(("a\x00b",)) != fingerprint(("a", "b"))
    assert fingerprint(["a\nb"]) != fingerprint(["a", "b"])
    assert fingerprint(["@1"]) != fingerprint([["x"]])


def test_code_is_unfingerprintable():
    with pytest.raises(Unfingerprintable, match="code"):
        fingerprint({"callback": lambda: None})


def test_a_100000_deep_chain_at_the_default_recursion_limit():
    def chain(n, last):
        x = relay.var("x", shape=(1,))
        e = x
        for _ in range(n):
            e = relay.Tuple([e])
        return relay.Function([x], relay.Tuple([e, relay.const(last)]))

    a, b = chain(100_000, 1.0), chain(100_000, 2.0)
    assert fingerprint(a) == fingerprint(chain(100_000, 1.0))
    assert fingerprint(a) != fingerprint(b)

"""canonical_key: an exact, cheap key of small fused functions. Equal keys must mean
structurally equal functions with equal structural hashes (LabelOps and graph codegen reuse a
label or kernel on a key hit); what the key cannot encode gives None."""

import numpy as np

import minitvm as tvm
from minitvm import relay
from minitvm.ir.structural import structural_equal, structural_hash
from minitvm.relay.analysis.canonical_key import MAX_NODES, canonical_key


def _prim(params, body, **attrs):
    return relay.Function(params, body).with_attrs({"Primitive": 1, **attrs})


def _scaled_add(names=("a", "b"), shape=(2, 3), dtype="float32", scale=2.0, op=relay.add):
    p, q = (relay.var(n, shape=shape, dtype=dtype) for n in names)
    return _prim([p, q], op(relay.multiply(p, relay.const(scale, dtype)), q))


def test_renamed_copies_key_alike_hash_alike_and_compare_equal():
    f, g = _scaled_add(("a", "b")), _scaled_add(("u", "v"))
    assert canonical_key(f) is not None
    assert canonical_key(f) == canonical_key(g)
    assert structural_equal(f, g) and structural_hash(f) == structural_hash(g)


def test_every_structural_difference_keys_apart():
    p, q = relay.var("p", shape=(2, 3)), relay.var("q", shape=(2, 3))
    variants = [
        _scaled_add(),
        _scaled_add(shape=(3, 2)),
        _scaled_add(dtype="float64"),
        _scaled_add(scale=3.0),
        _scaled_add(op=relay.subtract),
        _prim([p, q], relay.add(relay.multiply(q, relay.const(2.0)), p)),  # operands swapped
        _prim([p, q], relay.clip(relay.add(p, q), 0.0, 6.0)),
        _prim([p, q], relay.clip(relay.add(p, q), 0.0, 1.0)),  # attrs differ
        _prim([p, q], relay.TupleGetItem(relay.Tuple([p, q]), 0)),
        _prim([p, q], relay.TupleGetItem(relay.Tuple([p, q]), 1)),
        _scaled_add().with_attr("Composite", "x"),
    ]
    keys = [canonical_key(f) for f in variants]
    assert None not in keys
    assert len(set(keys)) == len(keys)


def test_what_the_key_cannot_encode_gives_none():
    x = relay.var("x", shape=(4, 8))
    free = relay.var("free", shape=(4, 8))
    inner = relay.Function([x], relay.negative(x))
    y = relay.var("y", shape=(4, 8))
    n = relay.var("n", shape=(relay.Any(), 8))
    cases = [
        _prim([x], relay.add(x, free)),  # a free variable
        _prim([y], relay.Call(inner, [y])),  # a nested function
        _prim([x], relay.add(x, relay.const(np.ones((4, 8), "float32")))),  # 128 bytes
        _prim([n], relay.negative(n)),  # a symbolic dimension
        relay.negative(x),  # not a function
    ]
    assert [canonical_key(f) for f in cases] == [None] * len(cases)


def test_copies_sharing_a_body_key_by_their_own_attributes_and_params():
    """The params-and-body part is remembered by the body: a copy with other attributes (a
    labelled fused function) or other params over the same body keys as a fresh walk would."""
    f = _scaled_add()
    labelled = f.with_attrs({"hash": "00ff"})
    assert labelled.body is f.body
    fresh = _scaled_add().with_attrs({"hash": "00ff"})
    assert canonical_key(f) != canonical_key(labelled) == canonical_key(fresh)
    swapped = relay.Function(list(reversed(f.params)), f.body).with_attrs({"Primitive": 1})
    assert canonical_key(swapped) != canonical_key(f)
    p = relay.var("p", shape=(2, 3))
    assert canonical_key(relay.Function([p, p], f.body)) is None  # a free variable in the body


def test_random_functions_with_equal_keys_are_structurally_equal():
    """A sweep over small random DAGs (ops, attrs, constants, shapes, sharing): every two
    functions that key alike compare equal and hash alike, and rebuilt copies do key alike."""
    rng = np.random.default_rng(0)
    unary = [relay.negative, relay.abs, lambda e: relay.clip(e, 0.0, float(rng.integers(1, 3)))]
    binary = [relay.add, relay.multiply]

    def build(seed):
        r = np.random.default_rng(seed)
        shape = [(2, 3), (3,)][r.integers(2)]
        params = [relay.var(f"p{i}", shape=shape) for i in range(r.integers(1, 3))]
        values = list(params)
        for _ in range(r.integers(1, 5)):
            kind = r.integers(3)
            if kind == 0:
                values.append(unary[r.integers(2)](values[r.integers(len(values))]))
            elif kind == 1:
                a, b = (values[r.integers(len(values))] for _ in range(2))
                values.append(binary[r.integers(2)](a, b))
            else:
                c = relay.const(float(r.integers(2)))
                values.append(relay.add(values[r.integers(len(values))], c))
        return _prim(params, values[-1])

    fns = [build(s) for s in range(150)] + [build(s) for s in range(0, 150, 5)]  # copies
    by_key: dict = {}
    for f in fns:
        k = canonical_key(f)
        assert k is not None
        by_key.setdefault(k, []).append(f)
    assert len(by_key) < len(fns)  # the rebuilt copies hit
    for group in by_key.values():
        for f in group[1:]:
            assert structural_equal(group[0], f)
            assert structural_hash(group[0]) == structural_hash(f)


def test_a_100000_node_chain_keys_without_recursion():
    """The walk keeps its own stack: a chain past MAX_NODES gives None, one under it keys, both
    at the default recursion limit."""
    def chain(n):
        x = relay.var("x", shape=(2,))
        y = x
        for _ in range(n):
            y = relay.negative(y)
        return _prim([x], y)

    assert canonical_key(chain(100_000)) is None
    k = canonical_key(chain(MAX_NODES - 1))
    assert k is not None and k == canonical_key(chain(MAX_NODES - 1))


def test_labels_and_kernels_of_a_ladder_match_the_uncached_build(monkeypatch):
    """LabelOps and graph codegen with keys give the same IR, graph and outputs as hashing and
    comparing every function; the ladder's 100 adds share a few labels and kernels."""
    from minitvm.contrib import graph_executor
    from minitvm.relay.backend import graph_executor_codegen
    from minitvm.relay.transform import label_ops

    def ladder():
        x = relay.var("x", shape=(1, 4))
        prev, y = x, relay.negative(x)
        for _ in range(100):
            prev, y = y, relay.add(y, prev)
        return tvm.IRModule.from_expr(relay.Function([x], y))

    def build():
        with tvm.transform.PassContext(opt_level=3):
            lib = relay.build(ladder(), target="llvm")
        m = graph_executor.GraphModule(lib["default"](tvm.cpu()))
        m.set_input("x", np.arange(4, dtype="float32").reshape(1, 4))
        m.run()
        return lib, m.get_output(0).numpy()

    keyed, out = build()
    labels = {f.get_attr("hash") for f in _primitives(keyed.ir_mod["main"])}
    assert len(labels) <= 3  # negative, add (and a fused head)
    with monkeypatch.context() as mp:
        for mod in (label_ops, graph_executor_codegen):
            mp.setattr(mod, "canonical_key", lambda f: None)
        plain, expected = build()
    assert keyed.get_graph_json() == plain.get_graph_json()
    assert str(keyed.ir_mod) == str(plain.ir_mod)
    assert sorted(keyed.lib.kernels) == sorted(plain.lib.kernels)
    np.testing.assert_array_equal(out, expected)
    x = np.arange(4, dtype="float32").reshape(1, 4)
    prev, y = x, -x
    for _ in range(100):
        prev, y = y, y + prev
    np.testing.assert_allclose(out, y, rtol=1e-5)


def _primitives(fn):
    from minitvm.relay.analysis.properties import walk

    return [e for e in walk(fn) if type(e) is relay.Function and e.get_attr("Primitive")]

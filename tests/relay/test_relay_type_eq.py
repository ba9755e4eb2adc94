"""Type equality is structural as TVM's ``Type.__eq__`` (structural_equal): polymorphic
function types are equal up to renaming their type parameters; hashing stays consistent."""

import minitvm as tvm
from minitvm import relay
from minitvm.relay.prelude import Prelude

I32 = relay.scalar_type("int32")


def test_checked_type_equals_fresh_polymorphic_type():
    mod = tvm.IRModule()
    p = Prelude(mod)
    mod = relay.transform.InferType()(mod)
    a = relay.TypeVar("a")
    assert mod[p.length].checked_type == relay.FuncType([p.l(a)], I32, [a])
    b, c = relay.TypeVar("b"), relay.TypeVar("c")
    f = relay.FuncType([b], c)
    expected_map = relay.FuncType([f, p.l(b)], p.l(c), [b, c])
    assert mod[p.map].checked_type == expected_map
    assert mod[p.map].checked_type != relay.FuncType([f, p.l(c)], p.l(b), [b, c])


def test_alpha_equivalence_and_free_vars():
    a, b = relay.TypeVar("a"), relay.TypeVar("b")
    assert relay.FuncType([a], a, [a]) == relay.FuncType([b], b, [b])
    assert relay.FuncType([a, b], a, [a, b]) != relay.FuncType([a, b], b, [a, b])
    assert relay.FuncType([a], a, [a]) != relay.FuncType([a, b], a, [a, b])
    # free type vars compare by identity, bound or not elsewhere
    assert a != b
    assert relay.FuncType([a], a) != relay.FuncType([b], b)
    assert relay.FuncType([a], a) == relay.FuncType([a], a)
    # a bound var against a free one
    assert relay.FuncType([a], a, [a]) != relay.FuncType([b], a, [b])
    # nested: the inner function type uses the outer's parameter
    inner_a, inner_b = relay.FuncType([a], I32), relay.FuncType([b], I32)
    assert relay.FuncType([inner_a], a, [a]) == relay.FuncType([inner_b], b, [b])
    # inside tuples and type calls too
    assert relay.TupleType([relay.FuncType([a], a, [a])]) == relay.TupleType(
        [relay.FuncType([b], b, [b])])


def test_hash_consistent_with_eq():
    a, b = relay.TypeVar("a"), relay.TypeVar("b")
    f, g = relay.FuncType([a], a, [a]), relay.FuncType([b], b, [b])
    assert hash(f) == hash(g)
    assert len({f, g, relay.FuncType([I32], I32)}) == 2
    assert {f: 1}[g] == 1
    # type-var keyed maps (the solver's substitutions) keep identity semantics
    m = {a: I32}
    assert m.get(b) is None and m[a] is I32
    assert hash(relay.TensorType((2, 3), "float32")) == hash(relay.TensorType((2, 3)))


def test_deep_polymorphic_types_compare_without_recursion():
    def deep(v):
        t = v
        for _ in range(100_000):
            t = relay.TupleType([t])
        return relay.FuncType([t], v, [v])

    a, b = relay.TypeVar("a"), relay.TypeVar("b")
    assert deep(a) == deep(b)
    assert hash(deep(a)) == hash(deep(b))

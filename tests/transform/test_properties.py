"""IR-property contracts: needs / establishes / keeps / breaks, re-established only when stale."""

import pytest

import minitvm as tvm
from minitvm import relay
from minitvm.relay.transform import infer_type as infer_type_module
from minitvm.transform import PassContext, PropertyError, Sequential, check_property


def small_module():
    x = relay.var("x", shape=(2, 3), dtype="float32")
    return tvm.IRModule.from_expr(relay.Function([x], relay.add(relay.add(x, x), x)))


@pytest.fixture
def infer_calls(monkeypatch):
    """Count the real type-inference runs."""
    calls = []
    real = infer_type_module.infer_type_module

    def spy(mod):
        calls.append(1)
        return real(mod)

    monkeypatch.setattr(infer_type_module, "infer_type_module", spy)
    return calls


def typed_reader(name="Reader", **contracts):
    @tvm.transform.module_pass(opt_level=0, name=name, needs=["typed"], **contracts)
    def run(mod, ctx):
        assert mod["main"].body.checked_type is not None
        return mod

    return run


def test_needed_typed_property_established_on_untyped_input(infer_calls):
    out = typed_reader()(small_module())
    assert out["main"].body.checked_type == relay.TensorType((2, 3), "float32")
    assert infer_calls == [1]


def test_typed_input_is_not_reinferred(infer_calls):
    mod = relay.transform.InferType()(small_module())
    assert infer_calls == [1]
    Sequential([typed_reader("R1", keeps=["typed"]), typed_reader("R2")])(mod)
    assert infer_calls == [1]


def test_required_infer_type_skipped_when_nothing_is_stale(infer_calls):
    @tvm.transform.module_pass(opt_level=0, name="Req", required=["InferType"])
    def req(mod, ctx):
        return mod

    seen = []

    @tvm.instrument.pass_instrument
    class Names:
        def run_before_pass(self, mod, info):
            seen.append(info.name)

    mod = relay.transform.InferType()(small_module())
    with PassContext(instruments=[Names()]):
        Sequential([req, req])(mod)
    assert seen == ["sequential", "InferType", "Req", "InferType", "Req"]  # as TVM counts
    assert infer_calls == [1]  # ... but no re-inference: nothing was stale


def test_rewritten_function_is_reinferred(infer_calls):
    @relay.transform.function_pass(opt_level=0, name="Swap")
    def swap(func, mod, ctx):
        return relay.Function(func.params, relay.multiply(func.params[0], func.params[0]))

    mod = relay.transform.InferType()(small_module())
    out = swap(mod)
    assert infer_calls == [1, 1]
    assert out["main"].body.checked_type == relay.TensorType((2, 3), "float32")


def test_broken_keep_promise_named_in_verify_mode():
    @tvm.transform.module_pass(opt_level=0, name="Liar", keeps=["typed"])
    def liar(mod, ctx):
        f = mod["main"]
        mod["main"] = relay.Function(f.params, relay.subtract(f.params[0], f.params[0]))
        return mod

    mod = relay.transform.InferType()(small_module())
    with PassContext(config={"transform.verify_each": True}):
        with pytest.raises(PropertyError, match="pass 'Liar' promised to keep property "
                                                "'typed' but broke it"):
            Sequential([typed_reader("Before", keeps=["typed"]), liar])(mod)


def test_broken_promise_caught_by_the_next_pass_that_needs_it():
    @tvm.transform.module_pass(opt_level=0, name="Liar", establishes=["gnf"])
    def liar(mod, ctx):
        f = mod["main"]
        v = relay.var("v")
        mod["main"] = relay.Function(f.params, relay.Let(v, f.body, v))
        return mod

    @tvm.transform.module_pass(opt_level=0, name="NeedsGnf", needs=["gnf"])
    def needs_gnf(mod, ctx):
        return mod

    with PassContext(config={"transform.verify_each": True}):
        with pytest.raises(PropertyError, match="promised to establish property 'gnf'"):
            liar(small_module())
    # Without verification the promise is trusted; a later check names the promiser.
    out = liar(small_module())
    assert check_property("gnf", out) is not None
    with PassContext(config={"transform.verify_each": True}):
        with pytest.raises(PropertyError, match="needs property 'gnf', which pass 'Liar' "
                                                "promised but broke"):
            needs_gnf(out)


def test_anf_needed_is_established_by_to_a_normal_form():
    @tvm.transform.module_pass(opt_level=0, name="NeedsAnf", needs=["anf"])
    def needs_anf(mod, ctx):
        assert check_property("anf", mod) is None
        return mod

    mod = small_module()
    assert check_property("anf", mod) is not None
    out = needs_anf(mod)
    assert isinstance(out["main"].body, relay.Let)


def test_fused_cannot_be_established_automatically():
    @tvm.transform.module_pass(opt_level=0, name="NeedsFused", needs=["fused"])
    def needs_fused(mod, ctx):
        return mod

    with pytest.raises(PropertyError, match="needs property .fused.; run FuseOps first"):
        needs_fused(small_module())


def test_check_property_fused():
    x = relay.var("x", shape=(2,), dtype="float32")
    p = relay.var("p", shape=(2,), dtype="float32")
    prim = relay.Function([p], relay.add(p, p)).with_attr("Primitive", 1)
    fused = tvm.IRModule.from_expr(relay.Function([x], relay.Call(prim, [x])))
    assert check_property("fused", fused) is None
    assert "add is called outside a Primitive function" in check_property("fused",
                                                                           small_module())


@pytest.mark.parametrize("arg", ["abc", None, 3])
def test_pass_with_needs_on_a_non_module_is_clear_error(arg, monkeypatch):
    # FuseOps needs 'typed': the argument is checked before properties are established (was a
    # "cannot create weak reference to 'str' object" TypeError), and no crash reproducer is written
    from minitvm.transform.debug import crash

    monkeypatch.setattr(crash, "on_pass_crash", lambda *a: pytest.fail("crash report written"))
    for p in [relay.transform.FuseOps(), typed_reader()]:
        with pytest.raises(TypeError, match=f"pass '{p.info.name}' must be called on an "
                                            f"IRModule, got {type(arg).__name__}"):
            p(arg)

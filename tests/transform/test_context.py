"""PassContext: defaults, the per-thread stack, config registration and validation."""

import threading

import pytest

import minitvm as tvm
from minitvm.transform import PassContext


def test_defaults():
    ctx = PassContext()
    assert ctx.opt_level == 2
    assert ctx.required_pass == [] and ctx.disabled_pass == []
    assert ctx.instruments == [] and ctx.config == {}


def test_current_outside_any_context_is_thread_default():
    assert PassContext.current().opt_level == 2
    assert PassContext.current() is PassContext.current()


def test_nesting_replaces_and_restores():
    outer = PassContext(opt_level=3, config={"relay.FuseOps.max_depth": 10})
    with outer:
        assert PassContext.current() is outer
        with PassContext(opt_level=1) as inner:
            assert PassContext.current() is inner
            assert inner.config == {}  # nothing inherited
        assert PassContext.current() is outer
    assert PassContext.current() is not outer


def test_each_thread_has_its_own_stack():
    seen = []
    with PassContext(opt_level=3):
        t = threading.Thread(target=lambda: seen.append(PassContext.current().opt_level))
        t.start()
        t.join()
    assert seen == [2]


def test_sets_are_accepted_and_strings_rejected():
    ctx = PassContext(required_pass={"A"}, disabled_pass=("B",))
    assert ctx.required_pass == ["A"] and ctx.disabled_pass == ["B"]
    with pytest.raises(TypeError, match="not the string"):
        PassContext(disabled_pass="FoldConstant")


def test_unknown_config_key_is_attribute_error():
    with pytest.raises(AttributeError, match="Invalid config option 'relay.FuseOps.max_dept'"):
        PassContext(config={"relay.FuseOps.max_dept": 3})


def test_unknown_config_key_suggests_close_match():
    with pytest.raises(AttributeError, match="Did you mean.*relay.FuseOps.max_depth"):
        PassContext(config={"relay.FuseOps.max_dept": 3})


def test_wrongly_typed_config_value():
    with pytest.raises(AttributeError, match="expect config relay.FuseOps.max_depth to have "
                                             "type int"):
        PassContext(config={"relay.FuseOps.max_depth": "deep"})
    with pytest.raises(AttributeError, match="is None"):
        PassContext(config={"relay.FuseOps.max_depth": None})


def test_config_values_converted():
    ctx = PassContext(config={"relay.FuseOps.link_params": 1})
    assert ctx.config["relay.FuseOps.link_params"] is True
    assert ctx.get_config("relay.FuseOps.max_depth") == 256
    assert ctx.get_config("relay.FuseOps.max_depth", 7) == 7


def test_register_pass_config_and_list_configs():
    tvm.transform.register_pass_config("testing.my_option", int, 5, "an option for a test")
    configs = PassContext.list_configs()
    assert configs["relay.backend.use_auto_scheduler"]["type"] == "IntImm"
    assert configs["testing.my_option"]["type"] == "IntImm"
    assert configs["relay.backend.tir_converter"]["type"] == "runtime.String"
    assert PassContext(config={"testing.my_option": 9}).config["testing.my_option"] == 9


def test_register_pass_config_rejects_bad_type_and_conflict():
    with pytest.raises(TypeError, match="unsupported type"):
        tvm.transform.register_pass_config("testing.bad", set)
    with pytest.raises(ValueError, match="already registered with type int"):
        tvm.transform.register_pass_config("relay.FuseOps.max_depth", str)


def test_exit_out_of_order_is_error():
    a, b = PassContext(), PassContext()
    a.__enter__()
    b.__enter__()
    with pytest.raises(RuntimeError, match="out of order"):
        a.__exit__(None, None, None)
    b.__exit__(None, None, None)
    a.__exit__(None, None, None)


def test_repr():
    text = repr(PassContext(opt_level=3, disabled_pass=["X"]))
    assert text.startswith("Pass context information: \n\topt_level: 3\n")
    assert "disabled passes: ['X']" in text


def test_pass_info_str():
    info = tvm.transform.PassInfo(2, "P")
    assert str(info) == ("The meta data of the pass - pass name: P, opt_level: 2, required "
                         "passes: []\n")
    info = tvm.transform.PassInfo(2, "P", required=["A", "B"])
    assert str(info).endswith("required passes: [\nA, B, ]\n")
    with pytest.raises(TypeError, match="list or tuple"):
        tvm.transform.PassInfo(1, "P", required="InferType")
    with pytest.raises(ValueError, match="unknown IR property"):
        tvm.transform.PassInfo(1, "P", needs=["sorted"])


def test_build_config_is_deprecated_alias():
    from minitvm import relay

    with pytest.warns(DeprecationWarning, match="build_config is deprecated"):
        ctx = relay.transform.build_config(opt_level=3, disabled_pass=["A"])
    assert isinstance(ctx, PassContext)
    assert ctx.opt_level == 3 and ctx.disabled_pass == ["A"]

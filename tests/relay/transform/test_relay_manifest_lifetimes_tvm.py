"""ManifestLifetimes (TVM v0.19, src/relay/backend/manifest_lifetimes.cc): TVM's cases restated
(straight line, if, match: a kill after the binding where each variable dies), alias removal,
numerics through the interpreter, errors and a deep chain."""

import numpy as np
import pytest

import minitvm as tvm
from minitvm import relay


def _check(before, after):
    got = tvm.transform.Sequential([relay.transform.ManifestLifetimes()])(relay.parse(before))
    tvm.ir.assert_structural_equal(got, relay.parse(after), map_free_vars=True)
    return got


def test_straight_line():
    got = _check(
        """#[version = "0.0.5"]
        def @main(%a: int32) {
          let %p = %a * %a;
          let %q = %p - %a;
          let %r = %q * %q;
          %r
        }""",
        """#[version = "0.0.5"]
        def @main(%a: int32) {
          let %p = %a * %a;
          let %q = %p - %a;
          let %k0 = memory.kill(%a);
          let %k1 = memory.kill(%p);
          let %r = %q * %q;
          let %k2 = memory.kill(%q);
          %r
        }""")
    before = relay.parse("""#[version = "0.0.5"]
        def @main(%a: int32) { let %p = %a * %a; let %q = %p - %a; let %r = %q * %q; %r }""")
    run = [relay.create_executor("debug", mod=m).evaluate()(np.int32(3)).numpy()
           for m in (before, got)]
    assert run[0] == run[1] == 36


def test_if_kills_inside_each_branch_and_after_the_join():
    _check(
        """#[version = "0.0.5"]
        def @main(%n: int32) {
          let %c = cast(%n, dtype="bool");
          let %out = if (%c) {
            let %t0 = %n + %n;
            let %t1 = %t0 * 3;
            %t1
          } else {
            %n
          };
          %out
        }""",
        """#[version = "0.0.5"]
        def @main(%n: int32) {
          let %c = cast(%n, dtype="bool");
          let %out = if (%c) {
            let %t0 = %n + %n;
            let %k0 = memory.kill(%n);
            let %t1 = %t0 * 3;
            let %k1 = memory.kill(%t0);
            %t1
          } else {
            %n
          };
          let %k2 = memory.kill(%c);
          %out
        }""")


def test_match_kills_the_scrutinee_after_the_match():
    adt = """type Seq[A] {
          More(A, Seq[A]),
          Done,
        }
        """
    _check(
        '#[version = "0.0.5"]\n' + adt + """
        def @main(%n: int32) {
          let %s : Seq[int32] = Done;
          let %m = (match (%s) {
            More(%h, %t) => {
              let %u = %n - 1;
              let %v = %u * %u;
              %v
            },
            Done => 0,
          });
          %m
        }""",
        '#[version = "0.0.5"]\n' + adt + """
        def @main(%n: int32) {
          let %s : Seq[int32] = Done;
          let %m = (match (%s) {
            More(%h, %t) => {
              let %u = %n - 1;
              let %k0 = memory.kill(%n);
              let %v = %u * %u;
              let %k1 = memory.kill(%u);
              %v
            },
            Done => 0
          });
          let %k2 = memory.kill(%s);
          %m
        }""")


def test_aliases_are_removed():
    _check(
        """#[version = "0.0.5"]
        def @main(%a: int32) {
          let %b = %a;
          let %c = %b;
          let %d = %c + %a;
          %d
        }""",
        """#[version = "0.0.5"]
        def @main(%a: int32) {
          let %d = %a + %a;
          let %k0 = memory.kill(%a);
          %d
        }""")
    x = relay.var("x", shape=(2,))
    y = relay.var("y")
    z = relay.var("z")
    copy = relay.device_copy(x, tvm.cpu(), tvm.cpu())
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.Let(y, copy, relay.Let(
        z, relay.exp(y), z))))
    out = relay.transform.ManifestLifetimes()(mod)
    let = out["main"].body
    assert let.value.op.name == "exp" and let.value.args[0] is out["main"].params[0]


def test_nested_function_is_rejected():
    x = relay.var("x", shape=(2,))
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.Function([], x)))
    with pytest.raises(ValueError, match="nested functions are not supported"):
        relay.transform.ManifestLifetimes()(mod)


def test_pass_info():
    p = relay.transform.ManifestLifetimes()
    assert p.info.name == "ManifestLifetimes" and p.info.opt_level == 0


def test_deep_chain():
    x = relay.var("x", shape=(2,))
    body, lets, prev = None, [], x
    n = 100_000
    for i in range(n):
        v = relay.var(f"v{i}")
        lets.append((v, relay.negative(prev)))
        prev = v
    body = prev
    for v, val in reversed(lets):
        body = relay.Let(v, val, body)
    mod = tvm.IRModule.from_expr(relay.Function([x], body))
    out = relay.transform.ManifestLifetimes()(mod)
    e, kills = out["main"].body, 0
    while isinstance(e, relay.Let):
        kills += isinstance(e.value, relay.Call) and e.value.op.name == "memory.kill"
        e = e.body
    assert kills == n  # x and every v except the result die once

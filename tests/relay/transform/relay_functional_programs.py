"""Relay programs with recursion, closures, ADTs and references shared by the functional-pass
tests (gradient, CPS, partial evaluation, defunctionalization)."""

HIGHER_ORDER_PROGRAM = """#[version = "0.0.5"]
type List[A] {
  Cons(A, List[A]),
  Nil,
}
def @sumlist(%xs: List[Tensor[(3), float64]]) -> Tensor[(3), float64] {
  match (%xs) {
    Cons(%x, %rest) => add(%x, @sumlist(%rest)),
    Nil => zeros(shape=[3], dtype="float64"),
  }
}
def @pow(%x: Tensor[(3), float64], %n: int32) -> Tensor[(3), float64] {
  if (equal(%n, 0)) {
    ones_like(%x)
  } else {
    multiply(%x, @pow(%x, subtract(%n, 1)))
  }
}
def @main(%x: Tensor[(3), float64], %y: Tensor[(3), float64]) -> Tensor[(3), float64] {
  let %r = ref(%x);
  let %f = fn (%z: Tensor[(3), float64]) { multiply(%z, %y) };
  let %w = ref_write(%r, %f(ref_read(%r)));
  let %l = Cons(ref_read(%r), Cons(%y, Nil));
  add(@sumlist(%l), @pow(%x, 3))
}
"""

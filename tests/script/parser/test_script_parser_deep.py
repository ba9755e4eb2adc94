"""A 100,000-binding dataflow block parses at the default recursion limit: statements are read
in a loop, expressions with an explicit stack."""

import sys

from minitvm import relax
from minitvm.script.parser import from_source

N = 100_000


def _chain_text(n: int, with_op: bool) -> str:
    lines = [
        "@R.function",
        'def main(x: R.Tensor(("n", 4), dtype="float32")) -> R.Tensor(("n", 4), dtype="float32"):',
        "    n = T.int64()",
        "    with R.dataflow():",
        "        lv0 = x",
    ]
    for i in range(1, n):
        rhs = f"R.add(lv{i - 1}, x)" if with_op and i % 2 else f"lv{i - 1}"
        ann = ': R.Tensor((n, 4), dtype="float32")' if i % 3 == 0 else ""
        lines.append(f"        lv{i}{ann} = {rhs}")
    lines += [f"        gv = lv{n - 1}", "        R.output(gv)", "    return gv"]
    return "\n".join(lines) + "\n"


def test_100k_binding_dataflow_block():
    assert sys.getrecursionlimit() <= 10_000
    with_op = getattr(relax.op, "add", None) is not None
    f = from_source(_chain_text(N, with_op))
    (block,) = f.body.blocks
    assert isinstance(block, relax.DataflowBlock)
    assert len(block.bindings) == N + 1
    *inner, last = block.bindings
    assert all(type(b.var) is relax.DataflowVar for b in inner)
    assert type(last.var) is relax.Var and f.body.body is last.var
    n = f.params[0].struct_info.shape.values[0]
    assert block.bindings[-2].var.struct_info.shape.values[0] is n
    if with_op:
        assert block.bindings[1].value.op.name == "relax.add"

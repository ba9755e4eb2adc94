"""Parsed TIR blocks without ``T.reads`` / ``T.writes`` get them inferred from their accesses,
as TVM's parser does (order of first access, loop ranges inside the block, allocations and
nested blocks), and print / parse back unchanged."""

import minitvm as tvm
from minitvm import relax


def _blocks(func):
    from minitvm.tir import stmt as S
    from minitvm.tir.stmt_functor import walk_stmts

    return {s.name_hint: s for s in walk_stmts(func.body) if isinstance(s, S.Block)}


def _text(regions):
    return [str(r.buffer.name) + str([(str(x.min), str(x.extent)) for x in r.region])
            for r in regions]


SRC = '''
@T.prim_func
def f(a: T.Buffer((4, 4), "float32"), b: T.Buffer((4,), "float32"),
      c: T.Buffer((4, 4), "float32")):
    for i, j in T.grid(4, 4):
        with T.block("sum"):
            vi, vj = T.axis.remap("SR", [i, j])
            with T.init():
                b[vi] = T.float32(0)
            b[vi] = b[vi] + a[vi, vj]
    for i in range(4):
        with T.block("row"):
            vi = T.axis.spatial(4, i)
            tmp = T.alloc_buffer((4,))
            for k in range(4):
                tmp[k] = a[vi, k] * T.float32(2)
            for k in range(4):
                c[vi, k] = tmp[k] + b[vi] + b[0]
'''


def test_inferred_regions():
    f = tvm.script.from_source(SRC)
    blocks = _blocks(f)
    s = blocks["sum"]
    assert [r.buffer.name for r in s.reads] == ["b", "a"]
    assert [r.buffer.name for r in s.writes] == ["b"]
    row = blocks["row"]
    # tmp is allocated by the block: neither read nor written from outside
    assert [r.buffer.name for r in row.reads] == ["a", "b"]
    assert [r.buffer.name for r in row.writes] == ["c"]
    text = f.script()
    assert "T.reads(b[vi], a[vi, vj])" in text and "T.writes(b[vi])" in text
    assert "T.reads(a[vi, 0:4], b[0:4])" in text  # b[vi] and b[0] differ: the whole dim
    assert "T.writes(c[vi, 0:4])" in text
    tvm.ir.assert_structural_equal(tvm.script.from_source(text), f)


def test_explicit_regions_are_kept():
    src = '''
@T.prim_func
def g(a: T.Buffer((4,), "float32"), b: T.Buffer((4,), "float32")):
    for i in range(4):
        with T.block("copy"):
            vi = T.axis.spatial(4, i)
            T.reads(a[0:4])
            b[vi] = a[vi]
'''
    blk = _blocks(tvm.script.from_source(src))["copy"]
    assert _text(blk.reads) == ["a[('0', '4')]"]
    assert [r.buffer.name for r in blk.writes] == ["b"]


def test_nested_block_regions_bubble_up():
    src = '''
@T.prim_func
def h(a: T.Buffer((8,), "float32"), b: T.Buffer((8,), "float32")):
    for o in range(2):
        with T.block("outer"):
            vo = T.axis.spatial(2, o)
            for i in range(4):
                with T.block("inner"):
                    vi = T.axis.spatial(8, vo * 4 + i)
                    b[vi] = a[vi] + T.float32(1)
'''
    f = tvm.script.from_source(src)
    outer = _blocks(f)["outer"]
    assert [r.buffer.name for r in outer.reads] == ["a"]
    assert [r.buffer.name for r in outer.writes] == ["b"]
    # the inner index vo * 4 + i uses the outer block's loop i: the whole dim is covered
    assert "T.reads(a[0:8])" in f.script()


def test_relax_module_with_inferred_prim_func_round_trips():
    src = '''
@I.ir_module
class Mod:
    @T.prim_func(private=True)
    def add_one(a: T.Buffer((4,), "float32"), b: T.Buffer((4,), "float32")):
        for i in range(4):
            with T.block("b"):
                vi = T.axis.spatial(4, i)
                b[vi] = a[vi] + T.float32(1)

    @R.function
    def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        cls = Mod
        y = R.call_tir(cls.add_one, (x,), out_sinfo=R.Tensor((4,), "float32"))
        return y
'''
    mod = tvm.script.from_source(src)
    text = mod.script()
    assert "T.reads(a[vi])" in text and "T.writes(b[vi])" in text
    tvm.ir.assert_structural_equal(tvm.script.from_source(text), mod)
    assert relax.analysis.well_formed(mod)

"""TVMScript PrimFuncs with op patterns, shared by the fusion tests (spliced into modules).

``bias_add`` is elementwise (0), as TVM's AnnotateTIROpPattern marks a bias add."""

import textwrap

PRIMS = '''
    @T.prim_func(private=True)
    def exp(x: T.Buffer((T.int64(4), T.int64(8)), "float32"), y: T.Buffer((T.int64(4), T.int64(8)), "float32")):
        T.func_attr({"op_pattern": 0, "tir.noalias": T.bool(True)})
        for i, j in T.grid(T.int64(4), T.int64(8)):
            with T.block("compute"):
                vi, vj = T.axis.remap("SS", [i, j])
                T.reads(x[vi, vj])
                T.writes(y[vi, vj])
                y[vi, vj] = T.exp(x[vi, vj])

    @T.prim_func(private=True)
    def relu(x: T.Buffer((T.int64(4), T.int64(8)), "float32"), y: T.Buffer((T.int64(4), T.int64(8)), "float32")):
        T.func_attr({"op_pattern": 0, "tir.noalias": T.bool(True)})
        for i, j in T.grid(T.int64(4), T.int64(8)):
            with T.block("compute"):
                vi, vj = T.axis.remap("SS", [i, j])
                T.reads(x[vi, vj])
                T.writes(y[vi, vj])
                y[vi, vj] = T.max(x[vi, vj], T.float32(0.0))

    @T.prim_func(private=True)
    def add(a: T.Buffer((T.int64(4), T.int64(8)), "float32"), b: T.Buffer((T.int64(4), T.int64(8)), "float32"), c: T.Buffer((T.int64(4), T.int64(8)), "float32")):
        T.func_attr({"op_pattern": 0, "tir.noalias": T.bool(True)})
        for i, j in T.grid(T.int64(4), T.int64(8)):
            with T.block("T_add"):
                vi, vj = T.axis.remap("SS", [i, j])
                T.reads(a[vi, vj], b[vi, vj])
                T.writes(c[vi, vj])
                c[vi, vj] = a[vi, vj] + b[vi, vj]

    @T.prim_func(private=True)
    def bias_add(a: T.Buffer((T.int64(4), T.int64(8)), "float32"), b: T.Buffer((T.int64(8),), "float32"), c: T.Buffer((T.int64(4), T.int64(8)), "float32")):
        T.func_attr({"op_pattern": 0, "tir.noalias": T.bool(True)})
        for i, j in T.grid(T.int64(4), T.int64(8)):
            with T.block("T_add"):
                vi, vj = T.axis.remap("SS", [i, j])
                T.reads(a[vi, vj], b[vj])
                T.writes(c[vi, vj])
                c[vi, vj] = a[vi, vj] + b[vj]

    @T.prim_func(private=True)
    def matmul(a: T.Buffer((T.int64(4), T.int64(8)), "float32"), b: T.Buffer((T.int64(8), T.int64(8)), "float32"), c: T.Buffer((T.int64(4), T.int64(8)), "float32")):
        T.func_attr({"op_pattern": 4, "tir.noalias": T.bool(True)})
        for i, j, k in T.grid(T.int64(4), T.int64(8), T.int64(8)):
            with T.block("matmul"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                T.reads(a[vi, vk], b[vk, vj])
                T.writes(c[vi, vj])
                with T.init():
                    c[vi, vj] = T.float32(0.0)
                c[vi, vj] = c[vi, vj] + a[vi, vk] * b[vk, vj]

    @T.prim_func(private=True)
    def row_sum(a: T.Buffer((T.int64(4), T.int64(8)), "float32"), c: T.Buffer((T.int64(4),), "float32")):
        T.func_attr({"op_pattern": 3, "tir.noalias": T.bool(True)})
        for i, k in T.grid(T.int64(4), T.int64(8)):
            with T.block("sum"):
                vi, vk = T.axis.remap("SR", [i, k])
                T.reads(a[vi, vk])
                T.writes(c[vi])
                with T.init():
                    c[vi] = T.float32(0.0)
                c[vi] = c[vi] + a[vi, vk]

    @T.prim_func(private=True)
    def scale(a: T.Buffer((T.int64(4),), "float32"), c: T.Buffer((T.int64(4),), "float32")):
        T.func_attr({"op_pattern": 0, "tir.noalias": T.bool(True)})
        for i in range(T.int64(4)):
            with T.block("scale"):
                vi = T.axis.spatial(T.int64(4), i)
                T.reads(a[vi])
                T.writes(c[vi])
                c[vi] = a[vi] * T.float32(2.0)

    @T.prim_func(private=True)
    def opaque_copy(x: T.Buffer((T.int64(4), T.int64(8)), "float32"), y: T.Buffer((T.int64(4), T.int64(8)), "float32")):
        T.func_attr({"op_pattern": 8, "tir.noalias": T.bool(True)})
        for i, j in T.grid(T.int64(4), T.int64(8)):
            with T.block("copy"):
                vi, vj = T.axis.remap("SS", [i, j])
                T.reads(x[vi, vj])
                T.writes(y[vi, vj])
                y[vi, vj] = x[vi, vj]

    @T.prim_func(private=True)
    def split(x: T.Buffer((T.int64(4), T.int64(8)), "float32"), lo: T.Buffer((T.int64(4), T.int64(4)), "float32"), hi: T.Buffer((T.int64(4), T.int64(4)), "float32")):
        T.func_attr({"op_pattern": 2, "tir.noalias": T.bool(True)})
        for i, j in T.grid(T.int64(4), T.int64(4)):
            with T.block("lo"):
                vi, vj = T.axis.remap("SS", [i, j])
                T.reads(x[vi, vj])
                T.writes(lo[vi, vj])
                lo[vi, vj] = x[vi, vj]
        for i, j in T.grid(T.int64(4), T.int64(4)):
            with T.block("hi"):
                vi, vj = T.axis.remap("SS", [i, j])
                T.reads(x[vi, vj + T.int64(4)])
                T.writes(hi[vi, vj])
                hi[vi, vj] = x[vi, vj + T.int64(4)]

    @T.prim_func(private=True)
    def mul4(a: T.Buffer((T.int64(4), T.int64(4)), "float32"), b: T.Buffer((T.int64(4), T.int64(4)), "float32"), c: T.Buffer((T.int64(4), T.int64(4)), "float32")):
        T.func_attr({"op_pattern": 0, "tir.noalias": T.bool(True)})
        for i, j in T.grid(T.int64(4), T.int64(4)):
            with T.block("T_multiply"):
                vi, vj = T.axis.remap("SS", [i, j])
                T.reads(a[vi, vj], b[vi, vj])
                T.writes(c[vi, vj])
                c[vi, vj] = a[vi, vj] * b[vi, vj]

    @T.prim_func(private=True)
    def dyn_exp(var_x: T.handle, var_y: T.handle):
        T.func_attr({"op_pattern": 0, "tir.noalias": T.bool(True)})
        n = T.int64()
        x = T.match_buffer(var_x, (n, T.int64(8)))
        y = T.match_buffer(var_y, (n, T.int64(8)))
        for i, j in T.grid(n, T.int64(8)):
            with T.block("compute"):
                vi, vj = T.axis.remap("SS", [i, j])
                T.reads(x[vi, vj])
                T.writes(y[vi, vj])
                y[vi, vj] = T.exp(x[vi, vj])

    @T.prim_func(private=True)
    def dyn_add(var_a: T.handle, var_b: T.handle, var_c: T.handle):
        T.func_attr({"op_pattern": 0, "tir.noalias": T.bool(True)})
        m = T.int64()
        a = T.match_buffer(var_a, (m, T.int64(8)))
        b = T.match_buffer(var_b, (m, T.int64(8)))
        c = T.match_buffer(var_c, (m, T.int64(8)))
        for i, j in T.grid(m, T.int64(8)):
            with T.block("T_add"):
                vi, vj = T.axis.remap("SS", [i, j])
                T.reads(a[vi, vj], b[vi, vj])
                T.writes(c[vi, vj])
                c[vi, vj] = a[vi, vj] + b[vi, vj]
'''

HEADER = "@I.ir_module\nclass Module:\n"


def module_text(relax_text: str, prims: str = PRIMS) -> str:
    """A module of the shared PrimFuncs plus the Relax functions of ``relax_text`` (written
    at column 0, indented here into the class)."""
    return HEADER + prims + "\n" + textwrap.indent(textwrap.dedent(relax_text), "    ")

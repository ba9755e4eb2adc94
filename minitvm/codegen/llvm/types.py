"""TIR dtypes as LLVM types, and small constant helpers."""

from __future__ import annotations

from functools import cache

from llvmlite import ir

PTR = ir.PointerType()
I1 = ir.IntType(1)
I32 = ir.IntType(32)
I64 = ir.IntType(64)
VOID = ir.VoidType()


@cache
def parse_dtype(dtype: str) -> tuple[str, int, int]:
    """``"float32x16"`` -> ``("float", 32, 16)``; ``"bool"`` -> ``("bool", 1, 1)``."""
    lanes = 1
    if "x" in dtype and dtype != "handle":
        dtype, lanes_s = dtype.split("x")
        lanes = int(lanes_s)
    if dtype == "bool":
        return "bool", 1, lanes
    if dtype == "handle":
        return "handle", 64, lanes
    for kind in ("bfloat", "float", "uint", "int"):
        if dtype.startswith(kind):
            return kind, int(dtype[len(kind):] or 32), lanes
    raise ValueError(f"unsupported dtype {dtype!r}")


@cache
def scalar_type(dtype: str) -> ir.Type:
    """The LLVM type of one element of ``dtype``."""
    kind, bits, _ = parse_dtype(dtype)
    if kind == "handle":
        return PTR
    if kind == "float":
        return {16: ir.HalfType(), 32: ir.FloatType(), 64: ir.DoubleType()}[bits]
    if kind == "bfloat":
        raise ValueError("bfloat16 is not supported by the llvm back end yet")
    return ir.IntType(bits)


@cache
def llvm_type(dtype: str, lanes: int = 1) -> ir.Type:
    """The LLVM type of ``dtype`` (a vector when ``lanes`` > 1 or the dtype has lanes)."""
    kind, bits, dl = parse_dtype(dtype)
    t = scalar_type(dtype)
    n = max(lanes, dl)
    return ir.VectorType(t, n) if n > 1 else t


def is_float(dtype: str) -> bool:
    return parse_dtype(dtype)[0] in ("float", "bfloat")


def is_unsigned(dtype: str) -> bool:
    return parse_dtype(dtype)[0] in ("uint", "bool")


def element_bytes(dtype: str) -> int:
    kind, bits, _ = parse_dtype(dtype)
    return 1 if kind == "bool" else bits // 8


def mangle(t: ir.Type) -> str:
    """The overload suffix of an LLVM intrinsic for type ``t`` (``f32``, ``v16f32``)."""
    if isinstance(t, ir.VectorType):
        return f"v{t.count}{mangle(t.element)}"
    if isinstance(t, ir.FloatType):
        return "f32"
    if isinstance(t, ir.DoubleType):
        return "f64"
    if isinstance(t, ir.HalfType):
        return "f16"
    if isinstance(t, ir.IntType):
        return f"i{t.width}"
    raise ValueError(f"cannot mangle {t}")


def const(t: ir.Type, value) -> ir.Constant:
    if isinstance(t, ir.VectorType):
        return ir.Constant(t, [ir.Constant(t.element, value)] * t.count)
    return ir.Constant(t, value)


NUMPY_DTYPES = {
    "float32": "float32", "float64": "float64", "float16": "float16", "int8": "int8",
    "int16": "int16", "int32": "int32", "int64": "int64", "uint8": "uint8", "uint16": "uint16",
    "uint32": "uint32", "uint64": "uint64", "bool": "bool",
}


def concat_vectors(builder, parts: list) -> ir.Value:
    """``parts`` (vectors of one type) side by side in one vector, by pairwise shuffles; an odd
    one out is padded with undefined lanes, so the result may be wider than their sum."""
    width = parts[0].type.count
    while len(parts) > 1:
        if len(parts) % 2:
            parts = parts + [ir.Constant(ir.VectorType(parts[0].type.element, width),
                                         ir.Undefined)]
        mask = ir.Constant(ir.VectorType(I32, 2 * width), list(range(2 * width)))
        parts = [builder.shuffle_vector(parts[k], parts[k + 1], mask)
                 for k in range(0, len(parts), 2)]
        width *= 2
    return parts[0]
